// Package admin is the operator's API (/admin/v1): accounts, credits and
// keys. The console and `tollgate admin` use it.
package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/jsonw"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/routes"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// Service does the admin operations; the HTTP handler and the first-start
// demo account both use it.
type Service struct {
	store  store.Store
	sealer *keys.Sealer
	now    func() time.Time
	signup money.Nano
}

// NewService returns the admin operations over st. signupCredit is what an
// account created without initial_credit starts with (the config's
// accounts.signup_credit).
func NewService(st store.Store, sealer *keys.Sealer, now func() time.Time, signupCredit money.Nano) *Service {
	return &Service{store: st, sealer: sealer, now: now, signup: signupCredit}
}

// SignupCredit is what an account created without initial_credit gets.
func (s *Service) SignupCredit() money.Nano { return s.signup }

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// CreateAccount makes an account holding credit (the sign-up credit when nil).
func (s *Service) CreateAccount(ctx context.Context, name string, credit *money.Nano) (store.Account, error) {
	a := store.Account{ID: newID("acct_"), Name: name, Status: store.AccountActive, CreatedAt: s.now().UTC()}
	amount := s.signup
	note := "sign-up credit"
	if credit != nil {
		amount, note = *credit, "initial credit"
	}
	return a, s.store.CreateAccount(ctx, a, amount, note)
}

// KeySpec is what a new key (or a key update) says.
type KeySpec struct {
	Name             *string
	AllowedModels    *[]string // nil: unchanged (create: all models); pointer to nil slice: all models
	RestrictModels   *bool
	ExpiresAt        **time.Time
	Enabled          *bool
	LogsAccountScope *bool
	Kind             *string
	SpendCap         **money.Nano // pointer to nil: no cap
	// UserID is the console user a new key belongs to (create only).
	UserID string
}

// CreateKey makes a key for an account and returns it with its raw value,
// which is shown this once (and later only through reveal).
func (s *Service) CreateKey(ctx context.Context, accountID string, spec KeySpec) (store.Key, string, error) {
	if _, err := s.store.GetAccount(ctx, accountID); err != nil {
		return store.Key{}, "", err
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
		ID: newID("key_"), AccountID: accountID, Prefix: keys.Display(raw), Hash: keys.Hash(raw),
		Sealed: sealed, Enabled: true, Kind: store.KindConsole, CreatedAt: s.now().UTC(), UserID: spec.UserID,
	}
	if err := applySpec(&k, spec); err != nil {
		return store.Key{}, "", err
	}
	if k.Name == "" {
		return store.Key{}, "", apierr.New(apierr.InvalidRequest, "name is required")
	}
	return k, raw, s.store.CreateKey(ctx, k)
}

func applySpec(k *store.Key, spec KeySpec) error {
	if spec.Name != nil {
		k.Name = strings.TrimSpace(*spec.Name)
	}
	if spec.RestrictModels != nil {
		k.RestrictModels = *spec.RestrictModels
		k.AllowedModels = nil
		if k.RestrictModels && spec.AllowedModels != nil {
			k.AllowedModels = append([]string{}, (*spec.AllowedModels)...)
		}
	}
	if spec.ExpiresAt != nil {
		k.ExpiresAt = *spec.ExpiresAt
	}
	if spec.Enabled != nil {
		k.Enabled = *spec.Enabled
	}
	if spec.LogsAccountScope != nil {
		k.LogsAccountScope = *spec.LogsAccountScope
	}
	if spec.SpendCap != nil {
		k.SpendCap = *spec.SpendCap
	}
	if k.AgentID != "" {
		// Agent keys never expire until revoked, and stay agent keys.
		if k.ExpiresAt != nil {
			return apierr.New(apierr.InvalidRequest, "an agent key never expires: revoke it (enabled false) or delete it instead")
		}
		if spec.Kind != nil && *spec.Kind != store.KindAgent {
			return apierr.Newf(apierr.InvalidRequest, "an agent key stays of kind agent; got %q", *spec.Kind)
		}
	}
	if spec.Kind != nil {
		switch *spec.Kind {
		case store.KindConsole, store.KindEmployee, store.KindDesktop, store.KindAgent:
			k.Kind = *spec.Kind
		default:
			return apierr.Newf(apierr.InvalidRequest, "kind must be one of console, employee, desktop, agent; got %q", *spec.Kind)
		}
	}
	return nil
}

// UpdateKey changes the fields spec sets of an existing key.
func (s *Service) UpdateKey(ctx context.Context, id string, spec KeySpec) (store.Key, error) {
	k, err := s.store.GetKey(ctx, id)
	if err != nil {
		return k, err
	}
	if err := applySpec(&k, spec); err != nil {
		return k, err
	}
	return k, s.store.UpdateKey(ctx, k)
}

// DeleteKey deletes a key: it is refused at once; its rows and usage stay.
func (s *Service) DeleteKey(ctx context.Context, id string) error { return s.store.DeleteKey(ctx, id) }

// Reveal returns a key's raw value; hash-only keys cannot be revealed.
func (s *Service) Reveal(ctx context.Context, keyID string) (string, error) {
	k, err := s.store.GetKey(ctx, keyID)
	if err != nil {
		return "", err
	}
	return s.sealer.Open(k.Sealed, k.Hash)
}

// Handler serves /admin/v1 behind the admin token.
type Handler struct {
	svc   *Service
	store store.Store
	token string
	// cause names the token in the money moves its calls make.
	cause store.Cause
	log   hclog.Logger
	mux   *routes.Mux
	fails *throttle
}

// TokenID names an admin token in the books (never the token itself):
// admtok_ and the first 12 hex digits of its SHA-256.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "admtok_" + hex.EncodeToString(sum[:6])
}

// NewHandler returns the admin API. token must not be empty.
func NewHandler(svc *Service, st store.Store, token string, logger hclog.Logger) *Handler {
	log := logger.Named("admin")
	h := &Handler{svc: svc, store: st, token: token, cause: store.Cause{AdminToken: TokenID(token)},
		log: log, mux: routes.New(), fails: newThrottle(svc.now, log)}
	m := h.mux
	m.HandleFunc("POST /admin/v1/accounts", h.createAccount)
	m.HandleFunc("GET /admin/v1/accounts", h.listAccounts)
	m.HandleFunc("GET /admin/v1/accounts/{id}", h.getAccount)
	m.HandleFunc("PATCH /admin/v1/accounts/{id}", h.patchAccount)
	m.HandleFunc("POST /admin/v1/accounts/{id}/credits", h.credit)
	m.HandleFunc("POST /admin/v1/accounts/{id}/keys", h.createKey)
	m.HandleFunc("GET /admin/v1/accounts/{id}/keys", h.listKeys)
	m.HandleFunc("GET /admin/v1/keys/{id}", h.getKey)
	m.HandleFunc("GET /admin/v1/keys/{id}/reveal", h.reveal)
	m.HandleFunc("PATCH /admin/v1/keys/{id}", h.patchKey)
	m.HandleFunc("DELETE /admin/v1/keys/{id}", h.deleteKey)
	m.HandleFunc("GET /admin/v1/audit", h.audit)
	h.agentRoutes()
	return h
}

// Routes is the admin route table: docs/reference.md is tested against it.
func (h *Handler) Routes() *routes.Mux { return h.mux }

// Handle mounts another admin route (a ServeMux pattern under /admin/v1)
// behind the same token: the knowledge base's routes.
func (h *Handler) Handle(pattern string, hf http.HandlerFunc) { h.mux.HandleFunc(pattern, hf) }

// Route is an operator's route a service beside the admin API adds to it
// (people, top-ups), behind the same token.
type Route struct {
	Pattern string
	Handler http.HandlerFunc
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	addr := clientAddr(r)
	if blocked, left := h.fails.blocked(addr); blocked {
		e := apierr.Newf(apierr.RateLimitExceeded, "too many failed admin attempts from this address; try again in %s", left.Round(time.Second))
		fail(w, e.WithHeader("Retry-After", retryAfter(left)))
		return
	}
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || h.token == "" ||
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.token)) != 1 {
		h.fails.fail(addr)
		fail(w, apierr.New(apierr.InvalidAPIKey, "admin authentication failed: send Authorization: Bearer <admin token>"))
		return
	}
	if _, pattern := h.mux.Handler(r); pattern == "" {
		fail(w, apierr.Newf(apierr.NotFound, "no admin route for %s %s (the routes are listed in docs/reference.md)", r.Method, r.URL.Path))
		return
	}
	r = r.WithContext(store.WithCause(r.Context(), h.cause))
	h.mux.ServeHTTP(routed{w, r}, r)
}

// routed carries the request to fail, so a store's ErrNotFound is answered
// naming what is missing and the full path asked for.
type routed struct {
	http.ResponseWriter
	r *http.Request
}

func fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		err = notFound(w)
	case errors.Is(err, store.ErrOutOfRange):
		err = apierr.New(apierr.InvalidRequest, "the amount would take the account's money beyond ±"+money.Max.String()+
			" credits, the largest amount the books hold; nothing was changed")
	}
	apierr.Write(w, protocol.OpenAIChat, apierr.As(err))
}

// notFound names the resource of the route's {id}: the segment before it
// ("accounts/{id}" is an account).
func notFound(w http.ResponseWriter) error {
	rw, ok := w.(routed)
	if !ok {
		return apierr.New(apierr.NotFound, "not found")
	}
	what := "resource"
	if before, _, ok := strings.Cut(rw.r.Pattern, "/{id}"); ok {
		what = strings.TrimSuffix(before[strings.LastIndexByte(before, '/')+1:], "s")
	}
	return apierr.Newf(apierr.NotFound, "%s %q does not exist (%s %s)", what, rw.r.PathValue("id"), rw.r.Method, rw.r.URL.Path)
}

// Fail, Reply and Decode write an error, write an answer and read a body
// the admin API's way, for the routes other packages mount with Handle.
func Fail(w http.ResponseWriter, err error)          { fail(w, err) }
func Reply(w http.ResponseWriter, status int, v any) { reply(w, status, v) }
func Decode(r *http.Request, v any) error            { return decode(r, v) }

func reply(w http.ResponseWriter, status int, v any) {
	jsonw.Write(w, status, v)
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apierr.Newf(apierr.InvalidRequest, "invalid JSON body: %v", err)
	}
	return nil
}

type accountView struct {
	store.Account
	Object    string     `json:"object"`
	Balance   money.Nano `json:"balance"`
	Held      money.Nano `json:"held"`
	Available money.Nano `json:"available"`
	// AllowedModels is the organization allowlist agents are checked
	// against: null for every model.
	AllowedModels []string `json:"allowed_models"`
}

func (h *Handler) view(ctx context.Context, a store.Account) (accountView, error) {
	w, err := h.store.GetWallet(ctx, a.ID)
	if err != nil {
		return accountView{}, err
	}
	o, err := h.store.GetOrganization(ctx, a.ID)
	if err != nil {
		return accountView{}, err
	}
	v := accountView{Account: a, Object: "account", Balance: w.Balance, Held: w.Held, Available: w.Available()}
	if o.RestrictModels {
		v.AllowedModels = append([]string{}, o.AllowedModels...)
	}
	return v, nil
}

func (h *Handler) createAccount(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name          string      `json:"name"`
		InitialCredit *money.Nano `json:"initial_credit"`
	}
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	if strings.TrimSpace(body.Name) == "" {
		fail(w, apierr.New(apierr.InvalidRequest, "name is required"))
		return
	}
	a, err := h.svc.CreateAccount(r.Context(), strings.TrimSpace(body.Name), body.InitialCredit)
	if err != nil {
		fail(w, err)
		return
	}
	v, err := h.view(r.Context(), a)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusCreated, v)
}

func (h *Handler) listAccounts(w http.ResponseWriter, r *http.Request) {
	accts, err := h.store.ListAccounts(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]accountView, 0, len(accts))
	for _, a := range accts {
		v, err := h.view(r.Context(), a)
		if err != nil {
			fail(w, err)
			return
		}
		out = append(out, v)
	}
	reply(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

func (h *Handler) getAccount(w http.ResponseWriter, r *http.Request) {
	a, err := h.store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	v, err := h.view(r.Context(), a)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, v)
}

func (h *Handler) patchAccount(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name        *string `json:"name"`
		Status      *string `json:"status"`
		RPM         *int    `json:"rpm"`
		Concurrency *int    `json:"concurrency"`
		// The organization allowlist: null every model, [] none.
		AllowedModels json.RawMessage `json:"allowed_models"`
	}
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	var org *store.Organization
	if len(body.AllowedModels) > 0 {
		o, err := orgAllowlist(body.AllowedModels)
		if err != nil {
			fail(w, err)
			return
		}
		org = &o
	}
	if body.Status != nil && *body.Status != store.AccountActive && *body.Status != store.AccountDisabled {
		fail(w, apierr.Newf(apierr.InvalidRequest, "status must be active or disabled, got %q", *body.Status))
		return
	}
	a, err := h.store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	if body.Name != nil {
		a.Name = *body.Name
	}
	if body.Status != nil {
		a.Status = *body.Status
	}
	if body.RPM != nil {
		if *body.RPM < 0 {
			fail(w, apierr.New(apierr.InvalidRequest, "rpm must be 0 (the config default) or more"))
			return
		}
		a.RPM = *body.RPM
	}
	if body.Concurrency != nil {
		if *body.Concurrency < 0 {
			fail(w, apierr.New(apierr.InvalidRequest, "concurrency must be 0 (the config default) or more"))
			return
		}
		a.Concurrency = *body.Concurrency
	}
	if err := h.store.UpdateAccount(r.Context(), a); err != nil {
		fail(w, err)
		return
	}
	if org != nil {
		org.AccountID = a.ID
		if err := h.store.SetOrganization(r.Context(), *org); err != nil {
			fail(w, err)
			return
		}
	}
	v, err := h.view(r.Context(), a)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, v)
}

func (h *Handler) credit(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Amount *money.Nano `json:"amount"`
		Note   string      `json:"note"`
	}
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	if body.Amount == nil || *body.Amount == 0 {
		fail(w, apierr.New(apierr.InvalidRequest, "amount is required and must not be 0 (a decimal string; negative for a correction)"))
		return
	}
	wallet, err := h.store.Credit(r.Context(), r.PathValue("id"), *body.Amount, body.Note)
	if errors.Is(err, store.ErrOutOfRange) {
		// Nothing was booked; say what the books hold so the operator can
		// pick an amount that fits.
		msg := "amount " + body.Amount.String() + " would take the account's balance or available balance beyond ±" +
			money.Max.String() + " credits, the largest amount the books hold; nothing was credited"
		if cur, werr := h.store.GetWallet(r.Context(), r.PathValue("id")); werr == nil {
			msg += " (balance " + cur.Balance.String() + ", held " + cur.Held.String() + ")"
		}
		fail(w, apierr.New(apierr.InvalidRequest, msg))
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{
		"object": "wallet", "account_id": wallet.AccountID, "balance": wallet.Balance,
		"held": wallet.Held, "available": wallet.Available(),
	})
}

// audit proves the books in one snapshot, while the gateway serves: the
// report, violations and all; its ok says whether every rule holds.
func (h *Handler) audit(w http.ResponseWriter, r *http.Request) {
	o := audit.Options{}
	if v := r.URL.Query().Get("max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fail(w, apierr.Newf(apierr.InvalidRequest, "max must be a whole number of violations to list, 1 or more; got %q", v))
			return
		}
		o.Max = n
	}
	rep, err := audit.Run(r.Context(), h.store, o)
	if err != nil {
		fail(w, err)
		return
	}
	if !rep.OK {
		h.log.Error("an audit asked through the admin API found violations", "violations", rep.Count)
	}
	reply(w, http.StatusOK, rep)
}

// keyBody is the JSON of a key create or patch. allowed_models null means
// every model; [] denies every model.
type keyBody struct {
	Name             *string         `json:"name"`
	AllowedModels    json.RawMessage `json:"allowed_models"`
	ExpiresAt        json.RawMessage `json:"expires_at"` // null clears it: RawMessage keeps the null, a pointer would not
	Enabled          *bool           `json:"enabled"`
	LogsAccountScope *bool           `json:"logs_account_scope"`
	Kind             *string         `json:"kind"`
	SpendCap         json.RawMessage `json:"spend_cap"`
}

func (b keyBody) spec() (KeySpec, error) {
	s := KeySpec{Name: b.Name, Enabled: b.Enabled, LogsAccountScope: b.LogsAccountScope, Kind: b.Kind}
	limit, set, err := capField(b.SpendCap)
	if err != nil {
		return s, err
	}
	if set {
		s.SpendCap = &limit
	}
	if len(b.AllowedModels) > 0 {
		restrict := string(b.AllowedModels) != "null"
		s.RestrictModels = &restrict
		if restrict {
			var list []string
			if err := json.Unmarshal(b.AllowedModels, &list); err != nil {
				return s, apierr.New(apierr.InvalidRequest, "allowed_models must be null or an array of model ids")
			}
			s.AllowedModels = &list
		}
	}
	if len(b.ExpiresAt) > 0 {
		var t *time.Time
		if string(b.ExpiresAt) != "null" {
			var v time.Time
			if err := json.Unmarshal(b.ExpiresAt, &v); err != nil {
				return s, apierr.New(apierr.InvalidRequest, "expires_at must be an RFC 3339 timestamp or null")
			}
			t = &v
		}
		s.ExpiresAt = &t
	}
	return s, nil
}

type keyView struct {
	ID               string     `json:"id"`
	Object           string     `json:"object"`
	Key              string     `json:"key,omitempty"`
	AccountID        string     `json:"account_id"`
	Name             string     `json:"name"`
	Prefix           string     `json:"prefix"`
	AllowedModels    []string   `json:"allowed_models"`
	ExpiresAt        *time.Time `json:"expires_at"`
	Enabled          bool       `json:"enabled"`
	LogsAccountScope bool       `json:"logs_account_scope"`
	Kind             string     `json:"kind"`
	Revealable       bool       `json:"revealable"`
	CreatedAt        time.Time  `json:"created_at"`
	LastUsedAt       *time.Time `json:"last_used_at"`
	// AgentID is the agent an agent key is bound to (null otherwise);
	// SpendCap its spend cap (null: none); Spent what it spent, in GET
	// /keys/{id} only.
	AgentID  *string     `json:"agent_id"`
	SpendCap *money.Nano `json:"spend_cap"`
	Spent    *money.Nano `json:"spent,omitempty"`
}

func keyJSON(k store.Key, raw string) keyView {
	v := keyView{
		ID: k.ID, Object: "api_key", Key: raw, AccountID: k.AccountID, Name: k.Name, Prefix: k.Prefix,
		ExpiresAt: k.ExpiresAt, Enabled: k.Enabled, LogsAccountScope: k.LogsAccountScope, Kind: k.Kind,
		Revealable: len(k.Sealed) > 0, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt,
	}
	if k.RestrictModels {
		v.AllowedModels = append([]string{}, k.AllowedModels...)
	}
	if k.AgentID != "" {
		v.AgentID = &k.AgentID
	}
	v.SpendCap = k.SpendCap
	return v
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) {
	var body keyBody
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	spec, err := body.spec()
	if err != nil {
		fail(w, err)
		return
	}
	k, raw, err := h.svc.CreateKey(r.Context(), r.PathValue("id"), spec)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusCreated, keyJSON(k, raw))
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request) {
	listOfAccount(h, w, r, h.store.ListKeys, func(k store.Key) keyView { return keyJSON(k, "") })
}

// listOfAccount answers a GET /accounts/{id}/... list: 404 when the
// account does not exist, else what list gives, each item as its view.
func listOfAccount[T, V any](h *Handler, w http.ResponseWriter, r *http.Request,
	list func(context.Context, string) ([]T, error), view func(T) V) {
	id := r.PathValue("id")
	if _, err := h.store.GetAccount(r.Context(), id); err != nil {
		fail(w, err)
		return
	}
	items, err := list(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]V, 0, len(items))
	for _, it := range items {
		out = append(out, view(it))
	}
	reply(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

// getKey shows a key with what it spent over its life (settled calls,
// streams included) beside its spend cap.
func (h *Handler) getKey(w http.ResponseWriter, r *http.Request) {
	k, err := h.store.GetKey(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	spent, err := h.store.KeyUsage(r.Context(), k.ID)
	if err != nil {
		fail(w, err)
		return
	}
	v := keyJSON(k, "")
	v.Spent = &spent
	reply(w, http.StatusOK, v)
}

func (h *Handler) reveal(w http.ResponseWriter, r *http.Request) {
	raw, err := h.svc.Reveal(r.Context(), r.PathValue("id"))
	if errors.Is(err, keys.ErrNotRevealable) {
		fail(w, apierr.New(apierr.InvalidRequest, err.Error()))
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, map[string]string{"id": r.PathValue("id"), "key": raw})
}

func (h *Handler) patchKey(w http.ResponseWriter, r *http.Request) {
	var body keyBody
	if err := decode(r, &body); err != nil {
		fail(w, err)
		return
	}
	spec, err := body.spec()
	if err != nil {
		fail(w, err)
		return
	}
	k, err := h.svc.UpdateKey(r.Context(), r.PathValue("id"), spec)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, keyJSON(k, ""))
}

func (h *Handler) deleteKey(w http.ResponseWriter, r *http.Request) {
	if err := h.svc.DeleteKey(r.Context(), r.PathValue("id")); err != nil {
		fail(w, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "object": "api_key", "deleted": true})
}
