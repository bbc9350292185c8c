package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/sjson"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/jsonw"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	jsonw.Write(w, status, v)
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models lists the registry, limited to the key's allowlist. Only Bearer
// and x-api-key are accepted here; balance is not checked.
func (s *Server) models(_ context.Context, c *pipeline.Call) error {
	k, w := c.Key, c.W
	data := make([]modelEntry, 0, len(s.cfg.Models))
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		if pipeline.Allowed(k, m) {
			data = append(data, modelEntry{ID: m.ID, Object: "model", OwnedBy: m.OwnedBy})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	return nil
}

// balance answers what the key can still spend. Free, works at zero
// balance, does not touch the key's last-used time.
func (s *Server) balance(ctx context.Context, c *pipeline.Call) error {
	k, w := c.Key, c.W
	wallet, err := s.store.GetWallet(ctx, c.Account.ID)
	if err != nil {
		return apierr.Internal(err)
	}
	used, err := s.usage.get(ctx, k.ID)
	if err != nil {
		return apierr.Internal(err)
	}
	remaining := max(wallet.Available(), 0)
	if k.SpendCap != nil {
		// What the key's spend cap still allows, live (spec: the minimum
		// of the balance and any remaining key spend cap).
		spent, err := s.store.KeyUsage(ctx, k.ID)
		if err != nil {
			return apierr.Internal(err)
		}
		if left, ok := money.Sub(*k.SpendCap, spent); ok {
			remaining = min(remaining, max(left, 0))
		} else {
			remaining = 0
		}
	}
	var expires any
	if k.ExpiresAt != nil {
		expires = k.ExpiresAt.UTC().Format(time.RFC3339)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object":        "key.balance",
		"remaining_usd": remaining,
		"used_usd":      used,
		"total_usd":     money.TotalOf(remaining, used),
		"expires_at":    expires,
	})
	return nil
}

// usageCache keeps each key's cumulative spend for up to ttl (the spec lets
// used_usd lag by 60 seconds; remaining_usd is always live).
type usageCache struct {
	store store.Store
	now   func() time.Time
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]usageEntry
}

type usageEntry struct {
	used money.Nano
	at   time.Time
}

func newUsageCache(st store.Store, now func() time.Time, ttl time.Duration) *usageCache {
	return &usageCache{store: st, now: now, ttl: ttl, m: map[string]usageEntry{}}
}

func (u *usageCache) get(ctx context.Context, keyID string) (money.Nano, error) {
	now := u.now()
	u.mu.Lock()
	e, ok := u.m[keyID]
	u.mu.Unlock()
	if ok && now.Sub(e.at) < u.ttl {
		return e.used, nil
	}
	used, err := u.store.KeyUsage(ctx, keyID)
	if err != nil {
		return 0, err
	}
	u.mu.Lock()
	if len(u.m) > 100_000 {
		clear(u.m)
	}
	u.m[keyID] = usageEntry{used: used, at: now}
	u.mu.Unlock()
	return used, nil
}

// embeddings: embeddings are withdrawn; no model is available.
func (s *Server) embeddings(context.Context, *pipeline.Call) error {
	e := apierr.New(apierr.ModelNotFound, "embeddings are withdrawn: no embedding model is available")
	e.Status = http.StatusNotFound
	return e
}

// catalogEntry is one model of GET /v1/catalog (schema_version 1.0).
type catalogEntry struct {
	ID                 string         `json:"id"`
	Brand              string         `json:"brand"`
	VendorSlug         string         `json:"vendor_slug"`
	ProviderSlug       string         `json:"provider_slug"`
	OfficialModelID    string         `json:"official_model_id"`
	FastModeMultiplier *string        `json:"fast_mode_multiplier"`
	Pricing            catalogPricing `json:"pricing"`
	Billing            catalogBilling `json:"billing"`
	Caps               catalogCaps    `json:"caps"`
}

type catalogPricing struct {
	DisplayName  string        `json:"display_name"`
	Category     string        `json:"category"`
	EndpointType string        `json:"endpoint_type"`
	Tiers        []catalogTier `json:"tiers"`
	Discount     *string       `json:"discount"`
}

type catalogTier struct {
	Unit  string     `json:"unit"`
	Price money.Nano `json:"price"`
}

type catalogBilling struct {
	Features []string `json:"features"`
}

type catalogCaps struct {
	Family    string   `json:"family"`
	Tools     []string `json:"tools"`
	Reasoning bool     `json:"reasoning"`
	Vision    bool     `json:"vision"`
	Surfaces  []string `json:"surfaces"`
	// Media are the capabilities the model's family shows from its
	// settings (FamilySpec.Caps), by dotted path.
	Media map[string]any `json:"-"`
}

// MarshalJSON writes the caps with the family's capabilities merged in.
func (c catalogCaps) MarshalJSON() ([]byte, error) {
	type plain catalogCaps
	b, err := json.Marshal(plain(c))
	if err != nil || len(c.Media) == 0 {
		return b, err
	}
	for _, k := range slices.Sorted(maps.Keys(c.Media)) {
		if b, err = sjson.SetBytes(b, k, c.Media[k]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// mediaCaps are the model's settings its family shows in the catalog.
func (s *Server) mediaCaps(m *config.Model) map[string]any {
	spec := s.specs[m.Family]
	if spec == nil || len(spec.Caps) == 0 {
		return nil
	}
	set := m.FamilySettings()
	out := map[string]any{}
	for _, c := range spec.Caps {
		v, ok := set[c.Setting]
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		switch c.Kind {
		case vendor.CapList:
			var items []string
			for _, it := range strings.Split(v, ",") {
				if it = strings.TrimSpace(it); it != "" {
					items = append(items, it)
				}
			}
			out[c.Path] = items
		case vendor.CapInt:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				out[c.Path] = n
			}
		case vendor.CapBool:
			out[c.Path] = strings.TrimSpace(v) == "true"
		}
	}
	return out
}

func (s *Server) catalogEntry(m *config.Model) catalogEntry {
	family := m.Family
	if family == "" {
		family = "chat"
	}
	var tiers []catalogTier
	add := func(unit string, p money.Nano) {
		if p > 0 {
			tiers = append(tiers, catalogTier{Unit: unit, Price: p})
		}
	}
	p := m.Price
	add("1M input tokens", p.Input)
	add("1M cached input tokens", p.CachedInput)
	add("1M cache write tokens", p.CacheWrite)
	add("1M output tokens", p.Output)
	add("image", p.PerImage)
	add("image above "+p.AreaThresholdMP+" megapixels", p.PerImageHD)
	add("second", p.PerSecond)
	add("call", p.PerCall)
	add("character", p.PerCharacter)
	add("generation", p.PerGeneration)
	for _, tier := range p.Tiers() {
		if n, ok := p.PerSecondByResolution[tier]; ok {
			add("second at "+tier, n)
		}
	}
	if tiers == nil {
		tiers = []catalogTier{}
	}
	features := []string{}
	if family == "chat" {
		features = append(features, "per_token")
		if p.CachedInput > 0 {
			features = append(features, "cached_input")
		}
	}
	tools := m.Caps.Tools
	if tools == nil {
		tools = []string{}
	}
	return catalogEntry{
		ID: m.ID, Brand: m.OwnedBy, VendorSlug: m.OwnedBy, ProviderSlug: m.OwnedBy, OfficialModelID: m.ID,
		Pricing: catalogPricing{DisplayName: m.ID, Category: family, EndpointType: s.endpointType(family), Tiers: tiers},
		Billing: catalogBilling{Features: features},
		Caps: catalogCaps{Family: family, Tools: tools, Reasoning: m.Caps.Reasoning, Vision: m.Caps.Vision,
			Surfaces: s.surfaces(m), Media: s.mediaCaps(m)},
	}
}

// surfaces lists the client protocols a model answers on, natively or
// through translation.
func (s *Server) surfaces(m *config.Model) []string {
	out := []string{}
	for _, p := range protocol.All {
		if pipeline.Reachable(s.cfg, m, p) {
			out = append(out, string(p))
		}
	}
	return out
}

// endpointType is a model's endpoint_type in the catalog: what its
// family's plugins describe, else the family's name (chat's).
func (s *Server) endpointType(family string) string {
	if spec := s.specs[family]; spec != nil {
		return spec.EndpointType()
	}
	return family
}

// catalog: free, works at zero balance, limited to the allowlist.
func (s *Server) catalog(_ context.Context, c *pipeline.Call) error {
	k, w := c.Key, c.W
	models := []catalogEntry{}
	aliases := map[string]string{}
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		if !pipeline.Allowed(k, m) {
			continue
		}
		models = append(models, s.catalogEntry(m))
		for _, a := range m.Aliases {
			aliases[a] = m.ID
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "catalog", "schema_version": "1.0", "currency": "points",
		"models": models, "aliases": aliases,
	})
	return nil
}

type publicModel struct {
	ID           string         `json:"id"`
	Object       string         `json:"object"`
	Created      int64          `json:"created"`
	OwnedBy      string         `json:"owned_by"`
	Aliases      []string       `json:"aliases"`
	Family       string         `json:"family"`
	EndpointType string         `json:"endpoint_type"`
	Callable     bool           `json:"callable"`
	Pricing      catalogPricing `json:"pricing"`
	Caps         catalogCaps    `json:"caps"`
}

// servePublicModels is the unauthenticated full registry with prices.
func (s *Server) servePublicModels(w http.ResponseWriter, r *http.Request) {
	data := make([]publicModel, 0, len(s.cfg.Models))
	for i := range s.cfg.Models {
		m := &s.cfg.Models[i]
		e := s.catalogEntry(m)
		data = append(data, publicModel{
			ID: m.ID, Object: "model", OwnedBy: m.OwnedBy, Aliases: nonNil(m.Aliases), Family: e.Caps.Family,
			EndpointType: e.Pricing.EndpointType, Callable: len(s.cfg.ChannelsFor(m.ID)) > 0,
			Pricing: e.Pricing, Caps: e.Caps,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
