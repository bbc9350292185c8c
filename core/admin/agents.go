package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Organizations, agents and agent keys (PRODUCT.md §2): an account is an
// organization; its agents are served to agent keys by the pipeline's
// agent stage.

// AgentSpec is what a new agent (or an agent update) says; nil fields are
// left as they are (create: their defaults).
type AgentSpec struct {
	Name            *string
	SystemPrompt    *string
	Model           *string
	Temperature     **float64 // pointer to nil: none
	KnowledgeBases  *[]string
	WebSearch       *bool
	ImageGeneration *bool
	Published       *bool
}

// apply validates spec onto a.
func (spec AgentSpec) apply(a *store.Agent) error {
	if spec.Name != nil {
		a.Name = strings.TrimSpace(*spec.Name)
	}
	if spec.SystemPrompt != nil {
		a.SystemPrompt = *spec.SystemPrompt
	}
	if spec.Model != nil {
		a.Model = strings.TrimSpace(*spec.Model)
	}
	if spec.Temperature != nil {
		a.Temperature = *spec.Temperature
		// The completions-style range (spec: temperature 0 to 2).
		if t := a.Temperature; t != nil && (*t < 0 || *t > 2) {
			return apierr.Newf(apierr.InvalidRequest, "temperature must be null or from 0 to 2, got %v", *t)
		}
	}
	if spec.KnowledgeBases != nil {
		a.KnowledgeBases = []string{}
		for _, id := range *spec.KnowledgeBases {
			id = strings.TrimSpace(id)
			if id == "" {
				return apierr.New(apierr.InvalidRequest, "knowledge_bases: a kb id must not be empty")
			}
			if !slices.Contains(a.KnowledgeBases, id) {
				a.KnowledgeBases = append(a.KnowledgeBases, id)
			}
		}
	}
	if spec.WebSearch != nil {
		a.WebSearch = *spec.WebSearch
	}
	if spec.ImageGeneration != nil {
		a.ImageGeneration = *spec.ImageGeneration
	}
	if spec.Published != nil {
		a.Published = *spec.Published
	}
	switch {
	case a.Name == "":
		return apierr.New(apierr.InvalidRequest, "name is required")
	case a.Model == "":
		return apierr.New(apierr.InvalidRequest, "model is required: the model every call of the agent is locked to")
	}
	return nil
}

// CreateAgent makes an agent of an organization: published and without
// tools unless spec says otherwise.
func (s *Service) CreateAgent(ctx context.Context, accountID string, spec AgentSpec) (store.Agent, error) {
	now := s.now().UTC()
	a := store.Agent{ID: newID("agt_"), AccountID: accountID, KnowledgeBases: []string{}, Published: true,
		CreatedAt: now, UpdatedAt: now}
	if err := spec.apply(&a); err != nil {
		return store.Agent{}, err
	}
	return a, s.store.CreateAgent(ctx, a)
}

// UpdateAgent changes an agent that is not deleted.
func (s *Service) UpdateAgent(ctx context.Context, id string, spec AgentSpec) (store.Agent, error) {
	a, err := s.liveAgent(ctx, id)
	if err != nil {
		return store.Agent{}, err
	}
	if err := spec.apply(&a); err != nil {
		return store.Agent{}, err
	}
	a.UpdatedAt = s.now().UTC()
	return a, s.store.UpdateAgent(ctx, a)
}

// liveAgent reads an agent that is not deleted (a deleted one is not found).
func (s *Service) liveAgent(ctx context.Context, id string) (store.Agent, error) {
	a, err := s.store.GetAgent(ctx, id)
	if err == nil && a.DeletedAt != nil {
		err = store.ErrNotFound
	}
	return a, err
}

// agentKey builds a key of kind agent bound to a: no expiry (agent keys
// never expire until revoked), the spend cap given.
func (s *Service) agentKey(a store.Agent, name string, spendCap *money.Nano) (store.Key, string, error) {
	if spendCap != nil && *spendCap < 0 {
		return store.Key{}, "", apierr.New(apierr.InvalidRequest, "spend_cap must be null (no cap) or a decimal string of 0 or more")
	}
	if name = strings.TrimSpace(name); name == "" {
		return store.Key{}, "", apierr.New(apierr.InvalidRequest, "name is required")
	}
	raw, err := keys.Generate()
	if err != nil {
		return store.Key{}, "", err
	}
	sealed, err := s.sealer.Seal(raw)
	if err != nil {
		return store.Key{}, "", err
	}
	k := store.Key{
		ID: newID("key_"), AccountID: a.AccountID, Name: name, Prefix: keys.Display(raw), Hash: keys.Hash(raw),
		Sealed: sealed, Enabled: true, Kind: store.KindAgent, AgentID: a.ID, SpendCap: spendCap, CreatedAt: s.now().UTC(),
	}
	return k, raw, nil
}

// IssueAgentKey issues a key of an agent at once; the raw key is shown
// this once (and later only through reveal).
func (s *Service) IssueAgentKey(ctx context.Context, agentID, name string, spendCap *money.Nano) (store.Key, string, error) {
	a, err := s.liveAgent(ctx, agentID)
	if err != nil {
		return store.Key{}, "", err
	}
	k, raw, err := s.agentKey(a, name, spendCap)
	if err != nil {
		return store.Key{}, "", err
	}
	return k, raw, s.store.CreateKey(ctx, k)
}

// RequestAgentKey records an employee's request for a key of an agent.
func (s *Service) RequestAgentKey(ctx context.Context, agentID, requester, note string) (store.KeyRequest, error) {
	if requester = strings.TrimSpace(requester); requester == "" {
		return store.KeyRequest{}, apierr.New(apierr.InvalidRequest, "requester is required: who asks for the key")
	}
	a, err := s.liveAgent(ctx, agentID)
	if err != nil {
		return store.KeyRequest{}, err
	}
	r := store.KeyRequest{ID: newID("kreq_"), AccountID: a.AccountID, AgentID: a.ID, Requester: requester, Note: note,
		Status: store.KeyRequestPending, CreatedAt: s.now().UTC()}
	return r, s.store.CreateKeyRequest(ctx, r)
}

// DeleteAgent deletes an agent (softly: its keys answer 403 from then on).
func (s *Service) DeleteAgent(ctx context.Context, id string) error {
	return s.store.DeleteAgent(ctx, id, s.now())
}

// RejectKeyRequest answers a pending request with no; ErrDecided (with
// the request as it stands) when it was already answered.
func (s *Service) RejectKeyRequest(ctx context.Context, id string) (store.KeyRequest, error) {
	kr, err := s.store.RejectKeyRequest(ctx, id, s.now())
	if errors.Is(err, store.ErrDecided) {
		kr, _ = s.store.GetKeyRequest(ctx, id)
	}
	return kr, err
}

// ApproveKeyRequest issues the requested key with its spend cap; the key
// is named after its requester, and belongs to userID (the console user
// who asked; "" for none). The raw key is shown this once.
func (s *Service) ApproveKeyRequest(ctx context.Context, id string, spendCap *money.Nano, userID string) (store.KeyRequest, store.Key, string, error) {
	r, err := s.store.GetKeyRequest(ctx, id)
	if err != nil {
		return r, store.Key{}, "", err
	}
	if r.Status != store.KeyRequestPending {
		return r, store.Key{}, "", store.ErrDecided
	}
	// A deleted agent gets no new key; its pending requests can only be
	// rejected.
	a, err := s.liveAgent(ctx, r.AgentID)
	if errors.Is(err, store.ErrNotFound) {
		return r, store.Key{}, "", apierr.Newf(apierr.InvalidRequest, "the agent %q of this request was deleted; reject the request", r.AgentID)
	}
	if err != nil {
		return r, store.Key{}, "", err
	}
	k, raw, err := s.agentKey(a, r.Requester, spendCap)
	if err != nil {
		return r, store.Key{}, "", err
	}
	k.UserID = userID
	r, err = s.store.ApproveKeyRequest(ctx, id, k, s.now())
	return r, k, raw, err
}

// agentView is an agent's JSON.
type agentView struct {
	ID              string     `json:"id"`
	Object          string     `json:"object"`
	AccountID       string     `json:"account_id"`
	Name            string     `json:"name"`
	SystemPrompt    string     `json:"system_prompt"`
	Model           string     `json:"model"`
	Temperature     *float64   `json:"temperature"`
	KnowledgeBases  []string   `json:"knowledge_bases"`
	WebSearch       bool       `json:"web_search"`
	ImageGeneration bool       `json:"image_generation"`
	Published       bool       `json:"published"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	DeletedAt       *time.Time `json:"deleted_at,omitempty"`
}

func agentJSON(a store.Agent) agentView {
	kbs := append([]string{}, a.KnowledgeBases...)
	return agentView{ID: a.ID, Object: "agent", AccountID: a.AccountID, Name: a.Name, SystemPrompt: a.SystemPrompt,
		Model: a.Model, Temperature: a.Temperature, KnowledgeBases: kbs, WebSearch: a.WebSearch,
		ImageGeneration: a.ImageGeneration, Published: a.Published, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		DeletedAt: a.DeletedAt}
}

// keyRequestView is a key request's JSON; Key is the issued key in the
// answer that approves it (with the raw key, once).
type keyRequestView struct {
	ID        string     `json:"id"`
	Object    string     `json:"object"`
	AccountID string     `json:"account_id"`
	AgentID   string     `json:"agent_id"`
	Requester string     `json:"requester"`
	Note      string     `json:"note"`
	Status    string     `json:"status"`
	KeyID     *string    `json:"key_id"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at"`
	Key       *keyView   `json:"key,omitempty"`
}

func keyRequestJSON(r store.KeyRequest) keyRequestView {
	v := keyRequestView{ID: r.ID, Object: "key_request", AccountID: r.AccountID, AgentID: r.AgentID,
		Requester: r.Requester, Note: r.Note, Status: r.Status, CreatedAt: r.CreatedAt, DecidedAt: r.DecidedAt}
	if r.KeyID != "" {
		v.KeyID = &r.KeyID
	}
	return v
}

// agentBody is the JSON of an agent create or patch.
type agentBody struct {
	Name            *string         `json:"name"`
	SystemPrompt    *string         `json:"system_prompt"`
	Model           *string         `json:"model"`
	Temperature     json.RawMessage `json:"temperature"`
	KnowledgeBases  *[]string       `json:"knowledge_bases"`
	WebSearch       *bool           `json:"web_search"`
	ImageGeneration *bool           `json:"image_generation"`
	Published       *bool           `json:"published"`
}

func (b agentBody) spec() (AgentSpec, error) {
	s := AgentSpec{Name: b.Name, SystemPrompt: b.SystemPrompt, Model: b.Model, KnowledgeBases: b.KnowledgeBases,
		WebSearch: b.WebSearch, ImageGeneration: b.ImageGeneration, Published: b.Published}
	if len(b.Temperature) > 0 {
		var t *float64
		if string(b.Temperature) != "null" {
			var v float64
			if err := json.Unmarshal(b.Temperature, &v); err != nil {
				return s, apierr.New(apierr.InvalidRequest, "temperature must be null or a number from 0 to 2")
			}
			t = &v
		}
		s.Temperature = &t
	}
	return s, nil
}

// capField reads an optional spend_cap: absent (set false), null (no cap)
// or a decimal string.
func capField(raw json.RawMessage) (limit *money.Nano, set bool, err error) {
	if len(raw) == 0 {
		return nil, false, nil
	}
	if string(raw) == "null" {
		return nil, true, nil
	}
	var n money.Nano
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, true, apierr.Newf(apierr.InvalidRequest, "spend_cap must be null (no cap) or a decimal string: %v", err)
	}
	if n < 0 {
		return nil, true, apierr.New(apierr.InvalidRequest, "spend_cap must be null (no cap) or a decimal string of 0 or more")
	}
	return &n, true, nil
}

func (h *Handler) agentRoutes() {
	m := h.mux
	m.HandleFunc("POST /admin/v1/accounts/{id}/agents", h.createAgent)
	m.HandleFunc("GET /admin/v1/accounts/{id}/agents", h.listAgents)
	m.HandleFunc("GET /admin/v1/agents/{id}", h.getAgent)
	m.HandleFunc("PATCH /admin/v1/agents/{id}", h.patchAgent)
	m.HandleFunc("DELETE /admin/v1/agents/{id}", h.deleteAgent)
	m.HandleFunc("POST /admin/v1/agents/{id}/keys", h.createAgentKey)
	m.HandleFunc("POST /admin/v1/agents/{id}/key-requests", h.createKeyRequest)
	m.HandleFunc("GET /admin/v1/accounts/{id}/key-requests", h.listKeyRequests)
	m.HandleFunc("POST /admin/v1/key-requests/{id}/approve", h.approveKeyRequest)
	m.HandleFunc("POST /admin/v1/key-requests/{id}/reject", h.rejectKeyRequest)
}

func (h *Handler) createAgent(w http.ResponseWriter, r *http.Request) {
	var body agentBody
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	spec, err := body.spec()
	if err != nil {
		fail(w, err)
		return
	}
	a, err := h.svc.CreateAgent(r.Context(), r.PathValue("id"), spec)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusCreated, agentJSON(a))
}

func (h *Handler) listAgents(w http.ResponseWriter, r *http.Request) {
	listOfAccount(h, w, r, h.store.ListAgents, agentJSON)
}

// getAgent shows a deleted agent too, with deleted_at: it tells the
// operator why its keys are refused.
func (h *Handler) getAgent(w http.ResponseWriter, r *http.Request) {
	a, err := h.store.GetAgent(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, agentJSON(a))
}

func (h *Handler) patchAgent(w http.ResponseWriter, r *http.Request) {
	var body agentBody
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	spec, err := body.spec()
	if err != nil {
		fail(w, err)
		return
	}
	a, err := h.svc.UpdateAgent(r.Context(), r.PathValue("id"), spec)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, agentJSON(a))
}

func (h *Handler) deleteAgent(w http.ResponseWriter, r *http.Request) {
	if err := h.svc.DeleteAgent(r.Context(), r.PathValue("id")); err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "object": "agent", "deleted": true})
}

func (h *Handler) createAgentKey(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name     string          `json:"name"`
		SpendCap json.RawMessage `json:"spend_cap"`
	}
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	limit, _, err := capField(body.SpendCap)
	if err != nil {
		fail(w, err)
		return
	}
	k, raw, err := h.svc.IssueAgentKey(r.Context(), r.PathValue("id"), body.Name, limit)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusCreated, keyJSON(k, raw))
}

func (h *Handler) createKeyRequest(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Requester string `json:"requester"`
		Note      string `json:"note"`
	}
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	kr, err := h.svc.RequestAgentKey(r.Context(), r.PathValue("id"), body.Requester, body.Note)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusCreated, keyRequestJSON(kr))
}

// listKeyRequests lists an organization's key requests, oldest first;
// ?status= keeps one status.
func (h *Handler) listKeyRequests(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.KeyRequestPending, store.KeyRequestApproved, store.KeyRequestRejected:
	default:
		fail(w, apierr.Newf(apierr.InvalidRequest, "status must be pending, approved or rejected, got %q", status))
		return
	}
	list := func(ctx context.Context, account string) ([]store.KeyRequest, error) {
		rs, err := h.store.ListKeyRequests(ctx, account)
		if status != "" {
			rs = slices.DeleteFunc(rs, func(kr store.KeyRequest) bool { return kr.Status != status })
		}
		return rs, err
	}
	listOfAccount(h, w, r, list, keyRequestJSON)
}

func (h *Handler) approveKeyRequest(w http.ResponseWriter, r *http.Request) {
	var body struct {
		SpendCap json.RawMessage `json:"spend_cap"`
	}
	if err := decodeOptional(r, &body); err != nil {
		fail(w, err)
		return
	}
	limit, _, err := capField(body.SpendCap)
	if err != nil {
		fail(w, err)
		return
	}
	kr, k, raw, err := h.svc.ApproveKeyRequest(r.Context(), r.PathValue("id"), limit, "")
	if err != nil {
		fail(w, decided(r, kr, err))
		return
	}
	v := keyRequestJSON(kr)
	kv := keyJSON(k, raw)
	v.Key = &kv
	reply(w, http.StatusOK, v)
}

func (h *Handler) rejectKeyRequest(w http.ResponseWriter, r *http.Request) {
	var body struct{}
	if err := decodeOptional(r, &body); err != nil {
		fail(w, err)
		return
	}
	kr, err := h.svc.RejectKeyRequest(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, decided(r, kr, err))
		return
	}
	reply(w, http.StatusOK, keyRequestJSON(kr))
}

// decided turns ErrDecided into a 409 naming the request's status.
func decided(r *http.Request, kr store.KeyRequest, err error) error {
	if !errors.Is(err, store.ErrDecided) {
		return err
	}
	status := kr.Status
	if status == "" || status == store.KeyRequestPending {
		status = "answered"
	}
	e := apierr.Newf(apierr.InvalidRequest, "key request %q was already %s", r.PathValue("id"), status)
	e.Status = http.StatusConflict
	return e
}

// decodeOptional is decode for a body that may be empty.
func decodeOptional(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return apierr.Newf(apierr.InvalidRequest, "invalid JSON body: %v", err)
	}
	return nil
}

// orgAllowlist reads PATCH /accounts/{id}'s allowed_models: the
// organization allowlist (null: every model; []: none).
func orgAllowlist(raw json.RawMessage) (store.Organization, error) {
	var o store.Organization
	if string(raw) == "null" {
		return o, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return o, apierr.New(apierr.InvalidRequest, "allowed_models must be null (every model) or an array of model ids")
	}
	o.RestrictModels, o.AllowedModels = true, []string{}
	for _, id := range list {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(o.AllowedModels, id) {
			o.AllowedModels = append(o.AllowedModels, id)
		}
	}
	return o, nil
}
