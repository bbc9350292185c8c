package config

import (
	"encoding/hex"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Defaults applied when the file leaves an attribute out.
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultStoreDir     = "./data"
	DefaultMaxTokens    = 4096
	DefaultModelTimeout = 180 * time.Second
	DefaultFamily       = "chat"
	DurabilityStrict    = "strict"
	storeKindBadger     = "badger"
	// StoreKindPostgres is the kind of a `store "postgres" {}` block.
	StoreKindPostgres = "postgres"
	maxInt            = 1_000_000_000
)

// A model or channel may name any family: chat is the core's own, the
// others are those the vendor plugins describe, so a family name is
// checked when the plugins are provisioned (unknown family, its price
// unit), not here.

// chatPriceExample is how a chat model is priced, for a message.
const chatPriceExample = `chat: per million tokens, e.g. price { input = "0.15" output = "0.60" }`

// noPrice is the problem of a model without a price {} block, with how
// its family prices it.
const noPrice = "no price {} block; every model needs a price (%s), or free = true to serve it at no charge on purpose"

// Unpriced reports whether model m has no price {} block and is not
// free. A model of a plugin's family is checked at provision, where its
// unit is known (RefuseUnpriced); a chat model on load.
func (c *Config) Unpriced(m *Model) bool {
	return !m.Free && m.Price.IsZero() && !c.Has(Ref{Kind: "model", Name: m.ID, Attr: "price"})
}

// RefuseUnpriced is the problem of model m, which has no price {} block;
// how says how its family prices it ("" for a chat model's tokens).
func (c *Config) RefuseUnpriced(m *Model, how string) *Error {
	if how == "" {
		how = chatPriceExample
	}
	return c.Refuse(Ref{Kind: "model", Name: m.ID}, noPrice, how)
}

// RefuseItem is Refuse at item of the list attribute ref (at the whole
// attribute when the item has no place in the file).
func (c *Config) RefuseItem(ref Ref, item string, format string, args ...any) *Error {
	e := c.Refuse(ref, format, args...)
	if r, ok := c.ranges[itemRef(ref, item)]; ok {
		e.Diagnostics[0].Subject = r.Ptr()
	}
	return e
}

// itemRef is where item of the list attribute ref was written.
func itemRef(ref Ref, item string) Ref {
	ref.Attr += "[" + item + "]"
	return ref
}

// BuiltinTools are the built-in tools caps.tools and a channel's tools name.
var BuiltinTools = []string{"web_search", "image_generation"}

// Load reads, parses and validates the HCL file at path. env() in the file
// reads the process environment.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(src, path, os.LookupEnv)
}

// Parse is Load on bytes already read; filename is used in error positions.
func Parse(src []byte, filename string) (*Config, error) {
	return parse(src, filename, os.LookupEnv)
}

func parse(src []byte, filename string, lookup func(string) (string, bool)) (*Config, error) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, &Error{Diagnostics: diags}
	}
	d := &decoder{
		ctx:    &hcl.EvalContext{Functions: map[string]function.Function{"env": envFunc(lookup)}},
		ranges: map[Ref]hcl.Range{}, disabledVendors: map[string]bool{},
	}
	cfg := d.file(file.Body)
	cfg.Source = filename
	cfg.ranges = d.ranges
	cfg.index()
	if d.diags.HasErrors() {
		sortDiags(d.diags)
		return nil, &Error{Diagnostics: d.diags, partial: cfg}
	}
	cfg.warnings = d.warnings(cfg)
	sortDiags(cfg.warnings)
	return cfg, nil
}

// envFunc is env(NAME) or env(NAME, DEFAULT).
func envFunc(lookup func(string) (string, bool)) function.Function {
	return function.New(&function.Spec{
		Description: "reads an environment variable at load time",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam:    &function.Parameter{Name: "default", Type: cty.String},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 2 {
				return cty.NilVal, fmt.Errorf("env takes a name and at most one default, got %d arguments", len(args))
			}
			for _, a := range args {
				if a.IsNull() {
					return cty.NilVal, fmt.Errorf("env arguments must not be null")
				}
			}
			name := args[0].AsString()
			if v, ok := lookup(name); ok {
				return cty.StringVal(v), nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return cty.NilVal, fmt.Errorf("environment variable %q is not set (give a default to allow that: env(%q, \"\"))", name, name)
		},
	})
}

type decoder struct {
	ctx    *hcl.EvalContext
	diags  hcl.Diagnostics
	ranges map[Ref]hcl.Range
	// vendors of channels written with enabled = false: their plugin
	// blocks are not unused, only idle.
	disabledVendors map[string]bool
}

// mark records where a block and each of its attributes were written.
func (d *decoder) mark(ref Ref, r hcl.Range, c *hcl.BodyContent) {
	d.ranges[ref] = r
	if c == nil {
		return
	}
	for name, a := range c.Attributes {
		d.ranges[Ref{Kind: ref.Kind, Name: ref.Name, Attr: name}] = a.Expr.Range()
	}
}

// errorf records a problem at r; where names the block ("" at top level).
func (d *decoder) errorf(r hcl.Range, where, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: msg, Subject: r.Ptr()})
}

// addDiags records HCL's own diagnostics, prefixed with where.
func (d *decoder) addDiags(diags hcl.Diagnostics, where string) {
	for _, diag := range diags {
		if diag.Severity != hcl.DiagError {
			continue
		}
		c := *diag
		// A failed env() says what failed, over the whole call.
		if fx, ok := diag.Extra.(hclsyntax.FunctionCallDiagExtra); ok && fx.FunctionCallError() != nil && diag.Summary == "Error in function call" {
			c.Summary, c.Detail = fx.FunctionCallError().Error(), ""
			if diag.Context != nil {
				c.Subject = diag.Context
			}
		}
		if where != "" {
			c.Summary = where + ": " + c.Summary
		}
		d.diags = append(d.diags, &c)
	}
}

func (d *decoder) content(body hcl.Body, schema *hcl.BodySchema, where string) *hcl.BodyContent {
	c, diags := body.Content(schema)
	d.addDiags(diags, where)
	return c
}

var fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "server"},
	{Type: "store", LabelNames: []string{"kind"}},
	{Type: "plugin", LabelNames: []string{"name"}},
	{Type: "channel", LabelNames: []string{"name"}},
	{Type: "model", LabelNames: []string{"id"}},
	{Type: "limits"},
	{Type: "pipeline"},
	{Type: "stage", LabelNames: []string{"name"}},
	{Type: "accounts"},
	{Type: "console"},
	{Type: "billing"},
	{Type: "knowledge_base", LabelNames: []string{"id"}},
	{Type: "telemetry"},
	{Type: "audit"},
}}

func (d *decoder) file(body hcl.Body) *Config {
	cfg := &Config{
		Server:   Server{Listen: DefaultListen, DrainTimeout: DefaultDrainTimeout},
		Store:    Store{Kind: storeKindBadger, Dir: DefaultStoreDir},
		Accounts: Accounts{SignupCredit: DefaultSignupCredit, Signup: SignupClosed},
		Console:  Console{SessionTTL: DefaultSessionTTL},
		Billing:  DefaultBilling(),
	}
	content := d.content(body, fileSchema, "")
	byType := map[string][]*hcl.Block{}
	for _, b := range content.Blocks {
		byType[b.Type] = append(byType[b.Type], b)
	}
	for _, typ := range []string{"server", "store", "limits", "pipeline", "accounts", "console", "billing", "telemetry", "audit"} {
		blocks := byType[typ]
		for _, extra := range blocks[min(1, len(blocks)):] {
			d.errorf(extra.DefRange, "", "duplicate %s block (the first is at %s)", typ, at(blocks[0].DefRange))
		}
	}
	if b := first(byType["server"]); b != nil {
		d.server(b, &cfg.Server)
	}
	if b := first(byType["store"]); b != nil {
		d.store(b, &cfg.Store)
	}
	if b := first(byType["limits"]); b != nil {
		d.limits(b, &cfg.Limits)
	}
	if b := first(byType["pipeline"]); b != nil {
		d.pipeline(b, &cfg.Pipeline)
	}
	if b := first(byType["accounts"]); b != nil {
		d.accounts(b, &cfg.Accounts)
	}
	if b := first(byType["console"]); b != nil {
		d.console(b, &cfg.Console)
	}
	if b := first(byType["billing"]); b != nil {
		d.billing(b, &cfg.Billing)
	}
	if b := first(byType["telemetry"]); b != nil {
		d.telemetry(b, &cfg.Telemetry)
	}
	if b := first(byType["audit"]); b != nil {
		d.audit(b, &cfg.Audit)
	}

	seen := map[string]hcl.Range{}
	for _, b := range byType["stage"] {
		if !d.label(b, "stage", seen) {
			continue
		}
		name, settings := d.stage(b)
		if cfg.Pipeline.Settings == nil {
			cfg.Pipeline.Settings = map[string]map[string]string{}
		}
		cfg.Pipeline.Settings[name] = settings
	}
	seen = map[string]hcl.Range{}
	for _, b := range byType["plugin"] {
		if !d.label(b, "plugin", seen) {
			continue
		}
		cfg.Plugins = append(cfg.Plugins, d.plugin(b))
	}

	seen = map[string]hcl.Range{}
	for _, b := range byType["knowledge_base"] {
		if !d.label(b, "knowledge_base", seen) {
			continue
		}
		cfg.KnowledgeBases = append(cfg.KnowledgeBases, d.knowledgeBase(b))
	}

	// Models before channels: a channel may only list declared models.
	reg := registry{ids: map[string]*Model{}, aliases: map[string]string{}, at: map[string]hcl.Range{}, translateFrom: map[string]hcl.Range{}}
	seen = map[string]hcl.Range{}
	for _, b := range byType["model"] {
		if !d.label(b, "model", seen) {
			continue
		}
		cfg.Models = append(cfg.Models, d.model(b, &reg))
	}
	for i := range cfg.Models {
		reg.ids[cfg.Models[i].ID] = &cfg.Models[i]
	}
	seen = map[string]hcl.Range{}
	for _, b := range byType["channel"] {
		if !d.label(b, "channel", seen) {
			continue
		}
		ch, enabled := d.channel(b, &reg)
		if enabled {
			cfg.Channels = append(cfg.Channels, ch)
		} else {
			cfg.Disabled = append(cfg.Disabled, ch.Name)
			d.disabledVendors[ch.Vendor] = true
			for _, m := range ch.Models {
				// A model a disabled channel serves waits for it.
				id, _, _ := strings.Cut(m, "=")
				delete(reg.translateFrom, id)
			}
		}
	}
	d.checkTranslateFrom(cfg, reg.translateFrom)
	d.checkTransports(cfg)
	return cfg
}

func first(bs []*hcl.Block) *hcl.Block {
	if len(bs) == 0 {
		return nil
	}
	return bs[0]
}

// label checks a block's name: not empty, not a duplicate.
func (d *decoder) label(b *hcl.Block, typ string, seen map[string]hcl.Range) bool {
	name, r := b.Labels[0], b.LabelRanges[0]
	if strings.TrimSpace(name) == "" {
		d.errorf(r, "", "%s name must not be empty", typ)
		return false
	}
	if prev, dup := seen[name]; dup {
		d.errorf(r, "", "duplicate %s %q (first defined at %s)", typ, name, at(prev))
		return false
	}
	seen[name] = r
	return true
}

var serverSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "listen"}, {Name: "admin_token"}, {Name: "master_key"},
		{Name: "allow_private_urls"}, {Name: "durability"}, {Name: "public_url"},
		{Name: "billing_url"}, {Name: "http_listen"}, {Name: "metrics_listen"}, {Name: "drain_timeout"}, {Name: "sweep_every"},
		{Name: "plugin_restart_wait"},
		{Name: "admin_listen"}, {Name: "master_key_file"},
		{Name: "header_timeout"}, {Name: "body_timeout"}, {Name: "idle_timeout"}, {Name: "write_timeout"},
		{Name: "max_body_memory"}, {Name: "max_event_size"}, {Name: "memory_limit"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "tls"}},
}

func (d *decoder) server(b *hcl.Block, s *Server) {
	const where = "server"
	c := d.content(b.Body, serverSchema, where)
	d.mark(Ref{Kind: "server"}, b.DefRange, c)
	if a := c.Attributes["listen"]; a != nil && d.str(a, where, &s.Listen) {
		if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			d.errorf(a.Expr.Range(), where, "listen: %q is not host:port (%v)", s.Listen, err)
		}
	}
	d.str(c.Attributes["admin_token"], where, &s.AdminToken)
	if a := c.Attributes["master_key"]; a != nil && d.str(a, where, &s.MasterKey) && s.MasterKey != "" {
		if k, err := hex.DecodeString(s.MasterKey); err != nil || len(k) != 32 {
			d.errorf(a.Expr.Range(), where, "master_key: want 64 hex characters (32 bytes), got %d characters", len(s.MasterKey))
		}
	}
	d.boolean(c.Attributes["allow_private_urls"], where, &s.AllowPrivateURLs)
	if a := c.Attributes["durability"]; a != nil && d.str(a, where, &s.Durability) {
		if s.Durability != "" && s.Durability != DurabilityStrict {
			d.errorf(a.Expr.Range(), where, "durability: unknown value %q (want \"\" or %q)", s.Durability, DurabilityStrict)
		}
	}
	if a := c.Attributes["public_url"]; a != nil && d.str(a, where, &s.PublicURL) && s.PublicURL != "" {
		d.checkURL(a, where, "public_url", s.PublicURL)
		s.PublicURL = strings.TrimRight(s.PublicURL, "/")
	}
	if a := c.Attributes["billing_url"]; a != nil && d.str(a, where, &s.BillingURL) && s.BillingURL != "" {
		d.checkURL(a, where, "billing_url", s.BillingURL)
	}
	for _, l := range []struct {
		name string
		dst  *string
	}{{"http_listen", &s.HTTPListen}, {"metrics_listen", &s.MetricsListen}, {"admin_listen", &s.AdminListen}} {
		name, dst, a := l.name, l.dst, c.Attributes[l.name]
		if a != nil && d.str(a, where, dst) && *dst != "" {
			if _, _, err := net.SplitHostPort(*dst); err != nil {
				d.errorf(a.Expr.Range(), where, "%s: %q is not host:port (%v)", name, *dst, err)
			}
		}
	}
	s.DrainTimeout = DefaultDrainTimeout
	d.duration(c.Attributes["drain_timeout"], where, &s.DrainTimeout)
	d.duration(c.Attributes["sweep_every"], where, &s.SweepEvery)
	if a := c.Attributes["plugin_restart_wait"]; a != nil {
		d.duration(a, where, &s.PluginRestartWait)
		if s.PluginRestartWait > time.Minute {
			d.errorf(a.Expr.Range(), where, "plugin_restart_wait: %s is out of range (want at most 1m; default 2s)", s.PluginRestartWait)
		}
	}
	d.str(c.Attributes["master_key_file"], where, &s.MasterKeyFile)
	d.duration(c.Attributes["header_timeout"], where, &s.HeaderTimeout)
	d.duration(c.Attributes["body_timeout"], where, &s.BodyTimeout)
	d.duration(c.Attributes["idle_timeout"], where, &s.IdleTimeout)
	d.duration(c.Attributes["write_timeout"], where, &s.WriteTimeout)
	d.size(c.Attributes["max_body_memory"], where, &s.MaxBodyMemory)
	d.size(c.Attributes["max_event_size"], where, &s.MaxEventSize)
	d.memoryLimit(c.Attributes["memory_limit"], where, &s.MemoryLimit)
	for i, tb := range c.Blocks {
		if i > 0 {
			d.errorf(tb.DefRange, where, "duplicate tls block (the first is at %s)", at(c.Blocks[0].DefRange))
			continue
		}
		d.ranges[Ref{Kind: "server", Attr: "tls"}] = tb.DefRange
		s.TLS = d.tls(tb)
	}
	if s.TLS == nil {
		return
	}
	// HTTPS has its own well-known ports: listen defaults to :443 and,
	// with automatic certificates, the redirect and HTTP-01 to :80.
	if c.Attributes["listen"] == nil {
		s.Listen = ":443"
	}
	if c.Attributes["http_listen"] == nil && s.TLS.Automatic() {
		s.HTTPListen = ":80"
	}
}

var tlsSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "domains"}, {Name: "email"}, {Name: "ca"}, {Name: "ca_root"}, {Name: "storage"},
	{Name: "renew_interval"}, {Name: "renewal_window_ratio"},
	{Name: "cert_file"}, {Name: "key_file"},
}}

// acmeOnly are the tls attributes that only automatic certificates use.
var acmeOnly = []string{"email", "ca", "ca_root", "storage", "renew_interval", "renewal_window_ratio"}

func (d *decoder) tls(b *hcl.Block) *TLS {
	const where = "server.tls"
	t := &TLS{}
	c := d.content(b.Body, tlsSchema, where)
	d.mark(Ref{Kind: "server.tls"}, b.DefRange, c)
	seen := map[string]bool{}
	for _, it := range d.strList(c.Attributes["domains"], where) {
		name := strings.ToLower(strings.TrimSpace(it.v))
		switch {
		case name == "" || strings.ContainsAny(name, "/: *") || net.ParseIP(name) != nil:
			d.errorf(it.r, where, "domains: %q is not a host name (IP addresses and wildcards cannot be validated over HTTP or TLS-ALPN)", it.v)
		case seen[name]:
			d.errorf(it.r, where, "domains: %q is listed twice", it.v)
		default:
			seen[name] = true
			t.Domains = append(t.Domains, name)
		}
	}
	d.str(c.Attributes["email"], where, &t.Email)
	if a := c.Attributes["ca"]; a != nil && d.str(a, where, &t.CA) && t.CA != "" {
		d.checkURL(a, where, "ca", t.CA)
	}
	d.str(c.Attributes["ca_root"], where, &t.CARoot)
	d.str(c.Attributes["storage"], where, &t.Storage)
	d.duration(c.Attributes["renew_interval"], where, &t.RenewInterval)
	if a := c.Attributes["renewal_window_ratio"]; a != nil {
		if v, ok := d.value(a, where); ok {
			f := number(v)
			if f <= 0 || f >= 1 {
				d.errorf(a.Expr.Range(), where, "renewal_window_ratio: want a number between 0 and 1 (the part of a certificate's lifetime left when it is renewed; default 0.333)")
			} else {
				t.RenewalWindowRatio = f
			}
		}
	}
	d.str(c.Attributes["cert_file"], where, &t.CertFile)
	d.str(c.Attributes["key_file"], where, &t.KeyFile)
	cert, key := c.Attributes["cert_file"], c.Attributes["key_file"]
	switch {
	case (cert == nil) != (key == nil):
		r := b.DefRange
		if cert != nil {
			r = cert.Expr.Range()
		} else if key != nil {
			r = key.Expr.Range()
		}
		d.errorf(r, where, "cert_file and key_file go together: give both (your own certificate) or neither (automatic certificates for domains)")
	case cert != nil:
		for _, name := range acmeOnly {
			if a := c.Attributes[name]; a != nil {
				d.errorf(a.NameRange, where, "%s: only automatic certificates use it, and this block names its own cert_file; remove one or the other", name)
			}
		}
	case c.Attributes["domains"] == nil:
		d.errorf(b.DefRange, where, "domains is required for automatic certificates (domains = [\"gw.example.com\"]), or give cert_file and key_file")
	case len(t.Domains) == 0 && !d.diags.HasErrors():
		d.errorf(c.Attributes["domains"].Expr.Range(), where, "domains: name at least one domain")
	}
	return t
}

var telemetrySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "endpoint"}, {Name: "protocol"}, {Name: "sampler_ratio"}, {Name: "service_name"}, {Name: "headers"},
}}

// TelemetryProtocols are the OTLP transports telemetry.protocol names.
var TelemetryProtocols = []string{"http/protobuf", "grpc"}

func (d *decoder) telemetry(b *hcl.Block, t *Telemetry) {
	const where = "telemetry"
	c := d.content(b.Body, telemetrySchema, where)
	d.mark(Ref{Kind: "telemetry"}, b.DefRange, c)
	if a := c.Attributes["endpoint"]; a != nil && d.str(a, where, &t.Endpoint) && t.Endpoint != "" {
		d.checkURL(a, where, "endpoint", t.Endpoint)
	}
	if a := c.Attributes["protocol"]; a != nil && d.str(a, where, &t.Protocol) && !contains(TelemetryProtocols, t.Protocol) {
		d.errorf(a.Expr.Range(), where, "protocol: unknown value %q (want %s)", t.Protocol, strings.Join(TelemetryProtocols, " or "))
	}
	if a := c.Attributes["sampler_ratio"]; a != nil {
		if v, ok := d.value(a, where); ok {
			f := number(v)
			if f < 0 || f > 1 {
				d.errorf(a.Expr.Range(), where, "sampler_ratio: want a number from 0 to 1 (the share of new traces recorded)")
			} else {
				t.SamplerRatio = &f
			}
		}
	}
	d.str(c.Attributes["service_name"], where, &t.ServiceName)
	t.Headers = d.strMap(c.Attributes["headers"], where)
}

func (d *decoder) checkURL(a *hcl.Attribute, where, name, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errorf(a.Expr.Range(), where, "%s: %q is not an http(s) URL", name, raw)
	}
}

var storeSchemas = map[string]*hcl.BodySchema{
	storeKindBadger:   {Attributes: []hcl.AttributeSchema{{Name: "dir"}, {Name: "reserve_mb"}}},
	StoreKindPostgres: {Attributes: []hcl.AttributeSchema{{Name: "url", Required: true}, {Name: "dir"}, {Name: "lease"}}},
}

func (d *decoder) store(b *hcl.Block, s *Store) {
	kind := b.Labels[0]
	where := fmt.Sprintf("store %q", kind)
	schema, ok := storeSchemas[kind]
	if !ok {
		d.errorf(b.LabelRanges[0], "", "unknown store kind %q (want %q, or %q for several instances sharing one state)",
			kind, storeKindBadger, StoreKindPostgres)
		return
	}
	s.Kind = kind
	c := d.content(b.Body, schema, where)
	d.mark(Ref{Kind: "store"}, b.DefRange, c)
	if a := c.Attributes["dir"]; a != nil && d.str(a, where, &s.Dir) && s.Dir == "" {
		d.errorf(a.Expr.Range(), where, "dir must not be empty")
	}
	if a := c.Attributes["url"]; a != nil && d.str(a, where, &s.URL) {
		if err := checkPostgresURL(s.URL); err != "" {
			d.errorf(a.Expr.Range(), where, "url: %s", err)
		}
	}
	if a := c.Attributes["reserve_mb"]; a != nil {
		d.intMin(a, where, 1, &s.ReserveMB)
	}
	if a := c.Attributes["lease"]; a != nil {
		d.duration(a, where, &s.Lease)
		if s.Lease != 0 && (s.Lease < time.Second || s.Lease > time.Hour) {
			d.errorf(a.Expr.Range(), where, "lease: %s is out of range (want 1s to 1h; default 15s)", s.Lease)
		}
	}
}

// checkPostgresURL says what is wrong with a connection string, or "".
// The password is never repeated.
func checkPostgresURL(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return `empty; want postgres://USER:PASSWORD@HOST:PORT/DATABASE, usually url = env("DATABASE_URL")`
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "not a postgres:// URL; want postgres://USER:PASSWORD@HOST:PORT/DATABASE"
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return "the URL names no host; want postgres://USER:PASSWORD@HOST:PORT/DATABASE"
	}
	return ""
}

var auditSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "every", Required: true}}}

func (d *decoder) audit(b *hcl.Block, a *Audit) {
	const where = "audit"
	c := d.content(b.Body, auditSchema, where)
	d.mark(Ref{Kind: "audit"}, b.DefRange, c)
	d.duration(c.Attributes["every"], where, &a.Every)
}

var limitsSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "rpm"}, {Name: "concurrency"}}}

func (d *decoder) limits(b *hcl.Block, l *Limits) {
	const where = "limits"
	c := d.content(b.Body, limitsSchema, where)
	d.mark(Ref{Kind: "limits"}, b.DefRange, c)
	d.intMin(c.Attributes["rpm"], where, 0, &l.RPM)
	d.intMin(c.Attributes["concurrency"], where, 0, &l.Concurrency)
}

var pipelineSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "stages"}}}

func (d *decoder) pipeline(b *hcl.Block, p *Pipeline) {
	const where = "pipeline"
	c := d.content(b.Body, pipelineSchema, where)
	d.mark(Ref{Kind: "pipeline"}, b.DefRange, c)
	a := c.Attributes["stages"]
	items := d.strList(a, where)
	seen := map[string]bool{}
	for _, it := range items {
		switch {
		case strings.TrimSpace(it.v) == "":
			d.errorf(it.r, where, "stages: a stage name must not be empty")
		case seen[it.v]:
			d.errorf(it.r, where, "stages: stage %q is listed twice", it.v)
		default:
			seen[it.v] = true
			p.Stages = append(p.Stages, it.v)
		}
	}
}

var stageSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "settings"}}}

// stage reads a `stage "NAME" { settings = {...} }` block: the settings a
// pipeline stage's factory validates when the chain is built.
func (d *decoder) stage(b *hcl.Block) (string, map[string]string) {
	name := b.Labels[0]
	where := fmt.Sprintf("stage %q", name)
	c := d.content(b.Body, stageSchema, where)
	d.mark(Ref{Kind: "stage", Name: name}, b.DefRange, c)
	return name, d.strMap(c.Attributes["settings"], where)
}

var knowledgeBaseSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "name"}, {Name: "docs", Required: true}}}

// reKBID is a knowledge base id (docs/kb.md): it travels in URL paths.
var reKBID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// knowledgeBase reads a `knowledge_base "ID" { name, docs }` block: a base
// seeded at each start from a folder of Markdown pages.
func (d *decoder) knowledgeBase(b *hcl.Block) KnowledgeBase {
	k := KnowledgeBase{ID: b.Labels[0]}
	where := fmt.Sprintf("knowledge_base %q", k.ID)
	if !reKBID.MatchString(k.ID) {
		d.errorf(b.LabelRanges[0], "", "knowledge_base id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", k.ID)
	}
	c := d.content(b.Body, knowledgeBaseSchema, where)
	d.str(c.Attributes["name"], where, &k.Name)
	if a := c.Attributes["docs"]; a != nil && d.str(a, where, &k.Docs) && k.Docs == "" {
		d.errorf(a.Expr.Range(), where, "docs must name a folder of Markdown pages, or %q", BuiltinDocs)
	}
	return k
}

var pluginSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "path"}, {Name: "settings"}, {Name: "gomaxprocs"}, {Name: "memory_limit"}}}

func (d *decoder) plugin(b *hcl.Block) Plugin {
	p := Plugin{Name: b.Labels[0]}
	where := fmt.Sprintf("plugin %q", p.Name)
	c := d.content(b.Body, pluginSchema, where)
	d.mark(Ref{Kind: "plugin", Name: p.Name}, b.DefRange, c)
	if a := c.Attributes["path"]; a != nil && d.str(a, where, &p.Path) && p.Path == "" {
		d.errorf(a.Expr.Range(), where, "path must not be empty")
	}
	p.Settings = d.strMap(c.Attributes["settings"], where)
	if a := c.Attributes["gomaxprocs"]; a != nil && d.intMin(a, where, 1, &p.GOMAXPROCS) && p.GOMAXPROCS > maxPluginProcs {
		d.errorf(a.Expr.Range(), where, "gomaxprocs: at most %d, got %d", maxPluginProcs, p.GOMAXPROCS)
		p.GOMAXPROCS = 0
	}
	d.memoryLimit(c.Attributes["memory_limit"], where, &p.MemoryLimit)
	return p
}

// maxPluginProcs bounds a plugin's gomaxprocs: a typo of a few digits
// would otherwise start thousands of threads' worth of Ps.
const maxPluginProcs = 1024

// registry is what channels check their model lists against.
type registry struct {
	ids     map[string]*Model
	aliases map[string]string    // alias -> model id
	at      map[string]hcl.Range // id or alias -> where it was declared
	// translateFrom is where each model's translate_from is written.
	translateFrom map[string]hcl.Range
}

// names are the declared model ids, for suggestions.
func (r *registry) names() []string { return slices.Sorted(maps.Keys(r.ids)) }

var modelSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "owned_by"}, {Name: "family"}, {Name: "aliases"},
		{Name: "default_max_tokens"}, {Name: "max_output_tokens"},
		{Name: "translate_from"}, {Name: "timeout"}, {Name: "idle_timeout"},
		{Name: "grid"}, {Name: "ignore_size"}, {Name: "keepalive_after"}, {Name: "max_duration"},
		{Name: "max_runtime"}, {Name: "call_timeout"}, {Name: "retention"},
		{Name: "settings"}, {Name: "free"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "price"}, {Type: "caps"}},
}

func (d *decoder) model(b *hcl.Block, reg *registry) Model {
	m := Model{ID: b.Labels[0], Family: DefaultFamily, DefaultMaxTokens: DefaultMaxTokens, Timeout: DefaultModelTimeout}
	where := fmt.Sprintf("model %q", m.ID)
	if prev, clash := reg.at[m.ID]; clash {
		d.errorf(b.LabelRanges[0], "", "model id %q is already an alias (declared at %s)", m.ID, at(prev))
	}
	reg.at[m.ID] = b.LabelRanges[0]
	c := d.content(b.Body, modelSchema, where)
	d.mark(Ref{Kind: "model", Name: m.ID}, b.DefRange, c)
	d.str(c.Attributes["owned_by"], where, &m.OwnedBy)
	if a := c.Attributes["family"]; a != nil && d.str(a, where, &m.Family) && strings.TrimSpace(m.Family) == "" {
		d.errorf(a.Expr.Range(), where, "family must not be empty (chat, or a family a vendor plugin serves)")
	}
	for _, it := range d.strList(c.Attributes["aliases"], where) {
		switch prev, clash := reg.at[it.v]; {
		case strings.TrimSpace(it.v) == "":
			d.errorf(it.r, where, "aliases: an alias must not be empty")
		case clash:
			d.errorf(it.r, where, "aliases: %q is already a model id or alias (declared at %s)", it.v, at(prev))
		default:
			reg.at[it.v] = it.r
			reg.aliases[it.v] = m.ID
			m.Aliases = append(m.Aliases, it.v)
		}
	}
	d.intMin(c.Attributes["default_max_tokens"], where, 1, &m.DefaultMaxTokens)
	m.MaxOutputTokens = m.DefaultMaxTokens
	if a := c.Attributes["max_output_tokens"]; a != nil && d.intMin(a, where, 1, &m.MaxOutputTokens) && m.MaxOutputTokens < m.DefaultMaxTokens {
		d.errorf(a.Expr.Range(), where, "max_output_tokens (%d) is below default_max_tokens (%d); it is the ceiling, so it must be at least as high", m.MaxOutputTokens, m.DefaultMaxTokens)
	}
	m.TranslateFrom = d.protocols(c.Attributes["translate_from"], where, "translate_from")
	if a := c.Attributes["translate_from"]; a != nil && len(m.TranslateFrom) > 0 {
		reg.translateFrom[m.ID] = a.Expr.Range()
	}
	if a := c.Attributes["timeout"]; a != nil {
		d.duration(a, where, &m.Timeout)
		if m.Timeout == 0 {
			d.errorf(a.Expr.Range(), where, "timeout must be above 0s")
		}
	}
	d.duration(c.Attributes["idle_timeout"], where, &m.IdleTimeout)
	d.intMin(c.Attributes["grid"], where, 1, &m.Grid)
	d.boolean(c.Attributes["ignore_size"], where, &m.IgnoreSize)
	d.duration(c.Attributes["keepalive_after"], where, &m.KeepAliveAfter)
	d.intMin(c.Attributes["max_duration"], where, 1, &m.MaxDuration)
	d.duration(c.Attributes["max_runtime"], where, &m.MaxRuntime)
	d.duration(c.Attributes["call_timeout"], where, &m.CallTimeout)
	d.duration(c.Attributes["retention"], where, &m.Retention)
	m.Settings = d.strMap(c.Attributes["settings"], where)
	var priceBlock, capsBlock *hcl.Block
	for _, blk := range c.Blocks {
		dst := &priceBlock
		if blk.Type == "caps" {
			dst = &capsBlock
		}
		if *dst != nil {
			d.errorf(blk.DefRange, where, "duplicate %s block (the first is at %s)", blk.Type, at((*dst).DefRange))
			continue
		}
		*dst = blk
	}
	priceOK := true
	if priceBlock != nil {
		d.ranges[Ref{Kind: "model", Name: m.ID, Attr: "price"}] = priceBlock.DefRange
		before := len(d.diags)
		d.price(priceBlock, where+" price", &m.Price)
		priceOK = len(d.diags) == before
	}
	d.boolean(c.Attributes["free"], where, &m.Free)
	if priceOK {
		d.checkPrice(b, c, priceBlock, where, &m)
	}
	if capsBlock != nil {
		d.caps(capsBlock, where+" caps", &m.Caps)
	}
	return m
}

// checkPrice fails closed on money: a model is priced, or says free = true.
// A forgotten price {} would otherwise serve every call at no charge.
func (d *decoder) checkPrice(b *hcl.Block, c *hcl.BodyContent, priceBlock *hcl.Block, where string, m *Model) {
	switch {
	case m.Free && !m.Price.IsZero():
		d.errorf(c.Attributes["free"].Expr.Range(), where, "free = true and a non-zero price {} contradict each other; keep one")
	case m.Free:
	case priceBlock == nil && m.Family != DefaultFamily:
		// A plugin's family: its unit is known at provision.
	case priceBlock == nil:
		d.errorf(b.DefRange, where, noPrice, chatPriceExample)
	case m.Price.IsZero():
		d.errorf(priceBlock.DefRange, where+" price", "sets no price (every field is 0); set the model's prices, or write free = true on the model to serve it at no charge on purpose")
	case m.Family == "chat" && m.Price.Input == 0 && m.Price.Output == 0:
		d.errorf(priceBlock.DefRange, where+" price", "a chat model is billed per token, but neither input nor output is priced; set them, or write free = true on the model")
	}
}

var accountsSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "signup_credit"}, {Name: "signup"}}}

// accounts reads `accounts { signup = true, signup_credit = "121.32" }`.
func (d *decoder) accounts(b *hcl.Block, a *Accounts) {
	const where = "accounts"
	c := d.content(b.Body, accountsSchema, where)
	d.mark(Ref{Kind: "accounts"}, b.DefRange, c)
	if at := c.Attributes["signup"]; at != nil {
		if v, ok := d.value(at, where); ok {
			switch {
			case v.Type() == cty.Bool && v.True():
				a.Signup = SignupOpen
			case v.Type() == cty.Bool:
				a.Signup = SignupClosed
			case v.Type() == cty.String && v.AsString() == "invite":
				a.Signup = SignupInvite
			default:
				got := friendly(v)
				if v.Type() == cty.String {
					got = strconv.Quote(v.AsString())
				}
				d.errorf(at.Expr.Range(), where, "signup: want true (anyone may sign up), false (only the operator adds people) or \"invite\" (only with an invitation); got %s", got)
			}
		}
	}
	if at := c.Attributes["signup_credit"]; at != nil {
		if n, ok := d.amount(at, where); ok {
			if n < 0 {
				d.errorf(at.Expr.Range(), where, "signup_credit: %q must not be negative (\"0\" gives new accounts no credit)", n.String())
			} else {
				a.SignupCredit = n
			}
		}
	}
}

var consoleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "enabled"}, {Name: "listen"}, {Name: "session_ttl"},
}}

// console reads `console { enabled, listen, session_ttl }`: the block
// turns the console on unless it says enabled = false.
func (d *decoder) console(b *hcl.Block, c *Console) {
	const where = "console"
	content := d.content(b.Body, consoleSchema, where)
	d.mark(Ref{Kind: "console"}, b.DefRange, content)
	c.Enabled = true
	d.boolean(content.Attributes["enabled"], where, &c.Enabled)
	if a := content.Attributes["listen"]; a != nil && d.str(a, where, &c.Listen) && c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			d.errorf(a.Expr.Range(), where, "listen: %q is not host:port (%v)", c.Listen, err)
		}
	}
	if a := content.Attributes["session_ttl"]; a != nil {
		d.duration(a, where, &c.SessionTTL)
		if c.SessionTTL < time.Minute {
			d.errorf(a.Expr.Range(), where, "session_ttl: %s is too short for a person to use the console; give at least \"1m\" (default \"168h\")", c.SessionTTL)
		}
	}
}

var billingSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "enabled"}, {Name: "processor"}, {Name: "secret_key"}, {Name: "webhook_secret"},
	{Name: "webhook_path"}, {Name: "webhook_tolerance"}, {Name: "currency"}, {Name: "credits_per_unit"},
	{Name: "minimum"}, {Name: "maximum"}, {Name: "presets"}, {Name: "api_url"}, {Name: "sim_listen"},
}}

// reservedPaths are where the webhook may not be: the gateway's own routes.
var reservedPaths = []string{"/v1/", "/v1beta/", "/api/", "/admin/", "/console/", "/files/", "/mcp", "/healthz", "/readyz", "/metrics"}

// billing reads `billing { processor, secret_key, webhook_secret, ... }`:
// the block turns card top-ups on unless it says enabled = false.
func (d *decoder) billing(b *hcl.Block, bl *Billing) {
	const where = "billing"
	c := d.content(b.Body, billingSchema, where)
	d.mark(Ref{Kind: "billing"}, b.DefRange, c)
	bl.Enabled = true
	d.boolean(c.Attributes["enabled"], where, &bl.Enabled)
	if a := c.Attributes["processor"]; a != nil && d.str(a, where, &bl.Processor) &&
		bl.Processor != ProcessorStripe && bl.Processor != ProcessorSim {
		d.errorf(a.Expr.Range(), where, "processor: want %q (Stripe Checkout) or %q (a simulated Stripe, for demos and tests); got %q", ProcessorStripe, ProcessorSim, bl.Processor)
	}
	d.str(c.Attributes["secret_key"], where, &bl.SecretKey)
	d.str(c.Attributes["webhook_secret"], where, &bl.WebhookSecret)
	if a := c.Attributes["webhook_path"]; a != nil && d.str(a, where, &bl.WebhookPath) {
		switch {
		case !strings.HasPrefix(bl.WebhookPath, "/") || strings.ContainsAny(bl.WebhookPath, "?#{} \t"):
			d.errorf(a.Expr.Range(), where, "webhook_path: %q is not a path (write it like %q)", bl.WebhookPath, DefaultWebhookPath)
		case slices.ContainsFunc(reservedPaths, func(p string) bool {
			return strings.HasPrefix(bl.WebhookPath, p) || bl.WebhookPath == strings.TrimSuffix(p, "/") || bl.WebhookPath == "/"
		}):
			d.errorf(a.Expr.Range(), where, "webhook_path: %q is among the gateway's own routes; choose another (default %q)", bl.WebhookPath, DefaultWebhookPath)
		}
	}
	if a := c.Attributes["webhook_tolerance"]; a != nil {
		d.duration(a, where, &bl.WebhookTolerance)
		if bl.WebhookTolerance < time.Second {
			d.errorf(a.Expr.Range(), where, "webhook_tolerance: %s would refuse every event; give at least \"1s\" (default \"5m\")", bl.WebhookTolerance)
		}
	}
	if a := c.Attributes["currency"]; a != nil && d.str(a, where, &bl.Currency) {
		bl.Currency = strings.ToLower(bl.Currency)
		if len(bl.Currency) != 3 || strings.Trim(bl.Currency, "abcdefghijklmnopqrstuvwxyz") != "" {
			d.errorf(a.Expr.Range(), where, "currency: %q is not a three-letter ISO 4217 code (like \"usd\" or \"eur\")", bl.Currency)
		}
	}
	positive := func(name string, dst *money.Nano) {
		if a := c.Attributes[name]; a != nil {
			if n, ok := d.amount(a, where); ok {
				if n <= 0 {
					d.errorf(a.Expr.Range(), where, "%s: %q must be above 0", name, n.String())
				} else {
					*dst = n
				}
			}
		}
	}
	positive("credits_per_unit", &bl.CreditsPerUnit)
	positive("minimum", &bl.Minimum)
	positive("maximum", &bl.Maximum)
	if a := c.Attributes["maximum"]; a != nil && bl.Maximum != 0 && bl.Maximum < bl.Minimum {
		d.errorf(a.Expr.Range(), where, "maximum: %s is below the minimum %s", bl.Maximum, bl.Minimum)
	}
	if a := c.Attributes["presets"]; a != nil {
		bl.Presets = nil
		for _, it := range d.strList(a, where) {
			n, err := money.Parse(it.v)
			switch {
			case err != nil:
				d.errorf(it.r, where, "presets: %v", err)
			case n < bl.Minimum || (bl.Maximum != 0 && n > bl.Maximum):
				d.errorf(it.r, where, "presets: %s is outside the minimum %s and the maximum", n, bl.Minimum)
			default:
				bl.Presets = append(bl.Presets, n)
			}
		}
	} else if c.Attributes["minimum"] != nil {
		bl.Presets = slices.DeleteFunc(slices.Clone(bl.Presets), func(n money.Nano) bool { return n < bl.Minimum })
		if len(bl.Presets) == 0 || bl.Presets[0] != bl.Minimum {
			bl.Presets = append([]money.Nano{bl.Minimum}, bl.Presets...)
		}
	}
	if a := c.Attributes["api_url"]; a != nil && d.str(a, where, &bl.APIURL) && bl.APIURL != "" {
		d.checkURL(a, where, "api_url", bl.APIURL)
	}
	if a := c.Attributes["sim_listen"]; a != nil && d.str(a, where, &bl.SimListen) {
		if _, _, err := net.SplitHostPort(bl.SimListen); err != nil {
			d.errorf(a.Expr.Range(), where, "sim_listen: %q is not host:port (%v)", bl.SimListen, err)
		}
	}
	if bl.Enabled && bl.Processor == ProcessorStripe {
		if bl.SecretKey == "" {
			d.errorf(b.DefRange, where, "processor \"stripe\" needs secret_key (write secret_key = env(\"STRIPE_SECRET_KEY\"), and set that variable)")
		}
		if bl.WebhookSecret == "" {
			d.errorf(b.DefRange, where, "processor \"stripe\" needs webhook_secret, the endpoint's signing secret (write webhook_secret = env(\"STRIPE_WEBHOOK_SECRET\"); docs/billing.md)")
		}
	}
}

// amount reads a decimal string as money.
func (d *decoder) amount(a *hcl.Attribute, where string) (money.Nano, bool) {
	v, ok := d.value(a, where)
	if !ok {
		return 0, false
	}
	if v.Type() != cty.String {
		d.errorf(a.Expr.Range(), where, "%s: write an amount as a decimal string, e.g. %s = \"121.32\" (got %s; numbers are not exact)", a.Name, a.Name, v.Type().FriendlyName())
		return 0, false
	}
	n, err := money.Parse(v.AsString())
	if err != nil {
		d.errorf(a.Expr.Range(), where, "%s: %v", a.Name, err)
		return 0, false
	}
	return n, true
}

var priceFields = []string{
	"input", "output", "cached_input", "cache_write", "per_image",
	"per_second", "per_call", "per_character", "per_generation", "per_image_hd",
}

var priceSchema = func() *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, f := range priceFields {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: f})
	}
	s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: "area_threshold_mp"},
		hcl.AttributeSchema{Name: "per_second_by_resolution"})
	return s
}()

func (d *decoder) price(b *hcl.Block, where string, p *Price) {
	c := d.content(b.Body, priceSchema, where)
	dst := []*money.Nano{
		&p.Input, &p.Output, &p.CachedInput, &p.CacheWrite, &p.PerImage,
		&p.PerSecond, &p.PerCall, &p.PerCharacter, &p.PerGeneration, &p.PerImageHD,
	}
	for i, f := range priceFields {
		if a := c.Attributes[f]; a != nil {
			d.priceValue(a, where, f, dst[i])
		}
	}
	if a := c.Attributes["area_threshold_mp"]; a != nil && d.str(a, where, &p.AreaThresholdMP) {
		if n, err := money.Parse(p.AreaThresholdMP); err != nil || n <= 0 {
			d.errorf(a.Expr.Range(), where, "area_threshold_mp: want a positive decimal number of megapixels such as \"2.61\", got %q", p.AreaThresholdMP)
		}
		if p.PerImageHD == 0 {
			d.errorf(a.Expr.Range(), where, "area_threshold_mp needs per_image_hd: the price of an image above the threshold")
		}
	}
	if a := c.Attributes["per_second_by_resolution"]; a != nil {
		for tier, raw := range d.strMap(a, where) {
			n, err := money.Parse(raw)
			if err != nil || n < 0 {
				d.errorf(a.Expr.Range(), where, "per_second_by_resolution: %s: want a non-negative decimal string, got %q", tier, raw)
				continue
			}
			if p.PerSecondByResolution == nil {
				p.PerSecondByResolution = map[string]money.Nano{}
			}
			p.PerSecondByResolution[tier] = n
		}
	}
}

// priceValue reads one price: a non-negative decimal string.
func (d *decoder) priceValue(a *hcl.Attribute, where, f string, dst *money.Nano) {
	v, ok := d.value(a, where)
	if !ok {
		return
	}
	if v.Type() != cty.String {
		d.errorf(a.Expr.Range(), where, "%s: write a price as a decimal string, e.g. %s = \"0.15\" (got %s; numbers are not exact)", f, f, v.Type().FriendlyName())
		return
	}
	n, err := money.Parse(v.AsString())
	if err != nil {
		d.errorf(a.Expr.Range(), where, "%s: %v", f, err)
		return
	}
	if n < 0 {
		d.errorf(a.Expr.Range(), where, "%s: price %q must not be negative", f, v.AsString())
		return
	}
	*dst = n
}

var capsSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "tools"}, {Name: "reasoning"}, {Name: "vision"}}}

func (d *decoder) caps(b *hcl.Block, where string, cp *Caps) {
	c := d.content(b.Body, capsSchema, where)
	cp.Tools = d.tools(c.Attributes["tools"], where)
	d.boolean(c.Attributes["reasoning"], where, &cp.Reasoning)
	d.boolean(c.Attributes["vision"], where, &cp.Vision)
}

func (d *decoder) tools(a *hcl.Attribute, where string) []string {
	var out []string
	for _, it := range d.strList(a, where) {
		switch {
		case !contains(BuiltinTools, it.v):
			d.errorf(it.r, where, "tools: unknown built-in tool %q (want one of %s)", it.v, strings.Join(BuiltinTools, ", "))
		case contains(out, it.v):
			d.errorf(it.r, where, "tools: %q is listed twice", it.v)
		default:
			out = append(out, it.v)
		}
	}
	return out
}

func (d *decoder) protocols(a *hcl.Attribute, where, name string) []string {
	var out []string
	for _, it := range d.strList(a, where) {
		switch {
		case !protocol.Valid(protocol.ID(it.v)):
			d.errorf(it.r, where, "%s: unknown protocol %q (want one of %s)", name, it.v, protocolList())
		case contains(out, it.v):
			d.errorf(it.r, where, "%s: %q is listed twice", name, it.v)
		default:
			out = append(out, it.v)
		}
	}
	return out
}

func protocolList() string {
	s := make([]string, len(protocol.All))
	for i, p := range protocol.All {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

var channelSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "vendor", Required: true}, {Name: "base_url"}, {Name: "api_key"},
	{Name: "families"}, {Name: "protocols"}, {Name: "models"}, {Name: "priority"},
	{Name: "weight"}, {Name: "timeout"}, {Name: "idle_timeout"}, {Name: "tools"}, {Name: "settings"}, {Name: "free"},
	{Name: "enabled"}, {Name: "transport"},
}}

// channel reads a channel block; enabled is false for `enabled = false`.
func (d *decoder) channel(b *hcl.Block, reg *registry) (ch Channel, enabled bool) {
	ch = Channel{Name: b.Labels[0], Weight: 1}
	enabled = true
	where := fmt.Sprintf("channel %q", ch.Name)
	c := d.content(b.Body, channelSchema, where)
	d.mark(Ref{Kind: "channel", Name: ch.Name}, b.DefRange, c)
	d.boolean(c.Attributes["enabled"], where, &enabled)
	if a := c.Attributes["vendor"]; a != nil && d.str(a, where, &ch.Vendor) && strings.TrimSpace(ch.Vendor) == "" {
		d.errorf(a.Expr.Range(), where, "vendor must not be empty")
	}
	if a := c.Attributes["base_url"]; a != nil && d.str(a, where, &ch.BaseURL) && ch.BaseURL != "" {
		if u, err := url.Parse(ch.BaseURL); err != nil || u.Scheme == "" {
			d.errorf(a.Expr.Range(), where, "base_url: %q is not a URL (want e.g. https://api.openai.com)", ch.BaseURL)
		}
	}
	d.str(c.Attributes["api_key"], where, &ch.APIKey)

	fa := c.Attributes["families"]
	for _, it := range d.strList(fa, where) {
		switch {
		case strings.TrimSpace(it.v) == "":
			d.errorf(it.r, where, "families: a family must not be empty")
		case contains(ch.Families, it.v):
			d.errorf(it.r, where, "families: %q is listed twice", it.v)
		default:
			// Checked against the plugins' families at provision.
			d.ranges[itemRef(Ref{Kind: "channel", Name: ch.Name, Attr: "families"}, it.v)] = it.r
			ch.Families = append(ch.Families, it.v)
		}
	}
	if fa == nil {
		ch.Families = []string{DefaultFamily}
	}
	pa := c.Attributes["protocols"]
	before := len(d.diags)
	ch.Protocols = d.protocols(pa, where, "protocols")
	if contains(ch.Families, "chat") && len(ch.Protocols) == 0 && len(d.diags) == before {
		r := b.DefRange
		if pa != nil {
			r = pa.Expr.Range()
		}
		d.errorf(r, where, "a chat channel needs protocols (one or more of %s)", protocolList())
	}

	for _, it := range d.strList(c.Attributes["models"], where) {
		client, upstream, mapped := strings.Cut(it.v, "=")
		m, declared := reg.ids[client]
		switch {
		case client == "" || (mapped && upstream == ""):
			d.errorf(it.r, where, "models: %q: want a model id, or client=upstream", it.v)
		case !declared && reg.aliases[client] != "":
			d.errorf(it.r, where, "models: %q is an alias of model %q; list the model id", client, reg.aliases[client])
		case !declared:
			if near := Suggest(client, reg.names()); near != "" {
				d.errorf(it.r, where, "models: %q is not a declared model (did you mean %q? else add a model %q block)", client, near, client)
			} else {
				d.errorf(it.r, where, "models: %q is not a declared model (add a model %q block)", client, client)
			}
		case ch.served(client):
			d.errorf(it.r, where, "models: %q is listed twice", client)
		case len(ch.Families) > 0 && !contains(ch.Families, m.Family):
			d.errorf(it.r, where, "models: model %q is of family %q, which the channel's families (%s) do not include", client, m.Family, strings.Join(ch.Families, ", "))
		default:
			ch.Models = append(ch.Models, it.v)
		}
	}
	d.integer(c.Attributes["priority"], where, &ch.Priority)
	d.intMin(c.Attributes["weight"], where, 1, &ch.Weight)
	d.duration(c.Attributes["timeout"], where, &ch.Timeout)
	d.duration(c.Attributes["idle_timeout"], where, &ch.IdleTimeout)
	ch.Tools = d.tools(c.Attributes["tools"], where)
	ch.Settings = d.strMap(c.Attributes["settings"], where)
	if a := c.Attributes["transport"]; a != nil && d.str(a, where, &ch.Transport) {
		switch ch.Transport {
		case TransportOutOfProcess:
			ch.Transport = "" // the default
		case TransportInProcess:
		default:
			d.errorf(a.Expr.Range(), where, "transport: %q is not a transport (want %q, the default, or %q for a vendor built into tollgate)",
				ch.Transport, TransportOutOfProcess, TransportInProcess)
		}
	}
	return ch, enabled
}

// checkTransports refuses a vendor whose channels ask for different
// transports: a vendor runs in one place, its plugin process or the
// gateway's.
func (d *decoder) checkTransports(cfg *Config) {
	first := map[string]*Channel{}
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		prev, ok := first[ch.Vendor]
		if !ok {
			first[ch.Vendor] = ch
			continue
		}
		if prev.Transport == ch.Transport {
			continue
		}
		r, ok := d.ranges[Ref{Kind: "channel", Name: ch.Name, Attr: "transport"}]
		if !ok {
			r = d.ranges[Ref{Kind: "channel", Name: ch.Name}]
		}
		d.errorf(r, fmt.Sprintf("channel %q", ch.Name), "transport: the vendor %q runs %s for channel %q and %s here; all channels of one vendor use one transport",
			ch.Vendor, transportName(prev.Transport), prev.Name, transportName(ch.Transport))
	}
}

// minAdminToken is the shortest admin token that does not draw a warning.
const minAdminToken = 16

// localHost reports whether host is loopback or a private address, where
// plain http does not leave the machine or the site.
func localHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}

// warnings finds what loads but probably is not what the operator meant.
func (d *decoder) warnings(cfg *Config) hcl.Diagnostics {
	var out hcl.Diagnostics
	warn := func(ref Ref, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if ref.Attr != "" && !strings.HasPrefix(msg, ref.Attr) {
			msg = ref.Attr + ": " + msg
		}
		r := d.ranges[ref]
		out = append(out, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: ref.String() + ": " + msg, Subject: r.Ptr()})
	}
	if t := cfg.Server.AdminToken; t != "" && len(t) < minAdminToken {
		warn(Ref{Kind: "server", Attr: "admin_token"}, "admin_token is %d characters; whoever guesses it controls every account and key: use %d or more random characters (or leave it out and one is generated)", len(t), 2*minAdminToken)
	}
	if e := cfg.Audit.Every; e > 0 && e < MinAuditEvery {
		warn(Ref{Kind: "audit", Attr: "every"}, "%s is short: each audit reads every entry and row of the books (a few seconds of a core per million rows); once an hour is usual", e)
	}
	for _, m := range cfg.Models {
		ref := Ref{Kind: "model", Name: m.ID}
		if len(cfg.byModel[m.ID]) == 0 {
			warn(ref, "no enabled channel serves it; calls to it get 503 no_channel_available")
		}
		if m.Free || m.Family != "chat" {
			continue
		}
		if p := m.Price; p.Output == 0 {
			warn(Ref{Kind: "model", Name: m.ID, Attr: "price"}, "output is not priced, so generated tokens are free; set output (per million tokens)")
		} else if p.CachedInput > p.Input {
			warn(Ref{Kind: "model", Name: m.ID, Attr: "price"}, "cached_input (%s) is above input (%s): cached tokens would cost more than fresh ones; are the two swapped?", p.CachedInput, p.Input)
		}
	}
	for _, ch := range cfg.Channels {
		ref := Ref{Kind: "channel", Name: ch.Name}
		if len(ch.Models) == 0 {
			warn(ref, "lists no models, so it serves nothing (add models = [...])")
		}
		if u, err := url.Parse(ch.BaseURL); err == nil && u.Scheme == "http" && ch.APIKey != "" && !localHost(u.Hostname()) {
			warn(Ref{Kind: "channel", Name: ch.Name, Attr: "base_url"}, "plain http to %s: the api_key crosses the network unencrypted; use https", u.Host)
		}
	}
	vendors := cfg.PluginNames()
	for _, p := range cfg.Plugins {
		if contains(vendors, p.Name) {
			continue
		}
		if !d.disabledVendors[p.Name] {
			warn(Ref{Kind: "plugin", Name: p.Name}, "no enabled channel has vendor = %q, so this block is unused%s", p.Name, didYouMean(p.Name, vendors))
		}
	}
	return out
}

func (c *Channel) served(id string) bool {
	_, ok := c.UpstreamModel(id)
	return ok
}

// value evaluates an attribute; ok is false when it failed or is null.
func (d *decoder) value(a *hcl.Attribute, where string) (cty.Value, bool) {
	v, diags := a.Expr.Value(d.ctx)
	if diags.HasErrors() {
		d.addDiags(diags, where+": "+a.Name)
		return cty.NilVal, false
	}
	if v.IsNull() {
		return v, false
	}
	if !v.IsWhollyKnown() {
		d.errorf(a.Expr.Range(), where, "%s: value is not known at load time", a.Name)
		return v, false
	}
	return v, true
}

func (d *decoder) str(a *hcl.Attribute, where string, dst *string) bool {
	if a == nil {
		return false
	}
	v, ok := d.value(a, where)
	if !ok {
		return false
	}
	if v.Type() != cty.String {
		d.errorf(a.Expr.Range(), where, "%s: want a string, got %s", a.Name, v.Type().FriendlyName())
		return false
	}
	*dst = v.AsString()
	return true
}

func (d *decoder) boolean(a *hcl.Attribute, where string, dst *bool) {
	if a == nil {
		return
	}
	v, ok := d.value(a, where)
	if !ok {
		return
	}
	if v.Type() != cty.Bool {
		d.errorf(a.Expr.Range(), where, "%s: want true or false, got %s", a.Name, v.Type().FriendlyName())
		return
	}
	*dst = v.True()
}

func (d *decoder) integer(a *hcl.Attribute, where string, dst *int) bool {
	if a == nil {
		return false
	}
	v, ok := d.value(a, where)
	if !ok {
		return false
	}
	if v.Type() != cty.Number {
		d.errorf(a.Expr.Range(), where, "%s: want a whole number, got %s", a.Name, v.Type().FriendlyName())
		return false
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || n > maxInt || n < -maxInt {
		d.errorf(a.Expr.Range(), where, "%s: want a whole number between %d and %d, got %s", a.Name, -maxInt, maxInt, bf.Text('g', -1))
		return false
	}
	*dst = int(n)
	return true
}

// intMin is integer with a lower bound; dst keeps its default on error.
func (d *decoder) intMin(a *hcl.Attribute, where string, lo int, dst *int) bool {
	var n int
	if !d.integer(a, where, &n) {
		return false
	}
	if n < lo {
		d.errorf(a.Expr.Range(), where, "%s: must be at least %d, got %d", a.Name, lo, n)
		return false
	}
	*dst = n
	return true
}

func (d *decoder) duration(a *hcl.Attribute, where string, dst *time.Duration) {
	var s string
	if a == nil || !d.str(a, where, &s) {
		return
	}
	t, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(a.Expr.Range(), where, "%s: %q is not a duration (want e.g. \"30s\", \"10m\")", a.Name, s)
		return
	}
	if t < 0 {
		d.errorf(a.Expr.Range(), where, "%s: %q must not be negative", a.Name, s)
		return
	}
	*dst = t
}

// item is one list element with where it was written.
type item struct {
	v string
	r hcl.Range
}

// strList evaluates a list of strings, keeping each element's range when the
// list is written out literally.
func (d *decoder) strList(a *hcl.Attribute, where string) []item {
	if a == nil {
		return nil
	}
	if exprs, diags := hcl.ExprList(a.Expr); !diags.HasErrors() {
		out := make([]item, 0, len(exprs))
		for _, e := range exprs {
			v, diags := e.Value(d.ctx)
			if diags.HasErrors() {
				d.addDiags(diags, where+": "+a.Name)
				continue
			}
			if v.IsNull() || v.Type() != cty.String || !v.IsKnown() {
				d.errorf(e.Range(), where, "%s: want a list of strings, found %s", a.Name, friendly(v))
				continue
			}
			out = append(out, item{v.AsString(), e.Range()})
		}
		return out
	}
	v, ok := d.value(a, where)
	if !ok {
		return nil
	}
	if !v.Type().IsListType() && !v.Type().IsTupleType() && !v.Type().IsSetType() {
		d.errorf(a.Expr.Range(), where, "%s: want a list of strings, got %s", a.Name, v.Type().FriendlyName())
		return nil
	}
	var out []item
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			d.errorf(a.Expr.Range(), where, "%s: want a list of strings, found %s", a.Name, friendly(e))
			continue
		}
		out = append(out, item{e.AsString(), a.Expr.Range()})
	}
	return out
}

// number is v as a float, or -1 when it is not a number.
func number(v cty.Value) float64 {
	if v.Type() != cty.Number {
		return -1
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

func friendly(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}

// strMap evaluates settings = { k = v }: scalar values become strings.
func (d *decoder) strMap(a *hcl.Attribute, where string) map[string]string {
	if a == nil {
		return nil
	}
	v, ok := d.value(a, where)
	if !ok {
		return nil
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		d.errorf(a.Expr.Range(), where, "%s: want a map such as { key = \"value\" }, got %s", a.Name, v.Type().FriendlyName())
		return nil
	}
	out := make(map[string]string, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil {
			d.errorf(a.Expr.Range(), where, "%s: %q: want a string, number or bool, got %s", a.Name, k.AsString(), e.Type().FriendlyName())
			continue
		}
		out[k.AsString()] = s.AsString()
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func transportName(t string) string {
	if t == "" {
		return TransportOutOfProcess
	}
	return t
}
