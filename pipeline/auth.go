package pipeline

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
)

// The five messages of the spec's Authentication part.
const (
	msgMissing        = "authentication failed: missing or malformed api key"
	msgInvalid        = "authentication failed: invalid api key"
	msgRevoked        = "authentication failed: api key revoked"
	msgExpired        = "authentication failed: api key expired"
	msgAccountBlocked = "authentication failed: account is not active"
	msgNoBalance      = "insufficient balance: the account's balance is exhausted (all keys of an account share one balance, so a new key does not help); "
)

// KeyForms says which of the key forms an endpoint accepts.
type KeyForms int

const (
	// AllForms: x-api-key, the alternate header, the key query parameter,
	// Authorization: Bearer — looked up in that order.
	AllForms KeyForms = iota
	// HeaderForms: GET /v1/models accepts only Bearer and x-api-key.
	HeaderForms
	// GoogleForms: all forms plus x-goog-api-key (generate-content clients).
	GoogleForms
)

// altHeader is keys.AltHeader under the key Go stores it (Get then
// needs no copy to canonicalize it).
var altHeader = http.CanonicalHeaderKey(keys.AltHeader)

// queryKey is the key= query parameter; a URL without a query is not
// parsed.
func queryKey(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get("key")
}

// ExtractKey finds the key in the request. A form whose value is empty
// counts as absent. found is false when no form carries a value.
func ExtractKey(r *http.Request, forms KeyForms) (raw string, found bool) {
	if v := strings.TrimSpace(r.Header.Get("X-Api-Key")); v != "" {
		return v, true
	}
	if forms != HeaderForms {
		if v := strings.TrimSpace(r.Header.Get(altHeader)); v != "" {
			return v, true
		}
		if forms == GoogleForms {
			if v := strings.TrimSpace(r.Header.Get("X-Goog-Api-Key")); v != "" {
				return v, true
			}
		}
		if v := strings.TrimSpace(queryKey(r)); v != "" {
			return v, true
		}
	}
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if token = strings.TrimSpace(token); token != "" {
				return token, true
			}
		}
		// A present but non-Bearer Authorization is a malformed key.
		return "", true
	}
	return "", false
}

// keyHint names the headers a client of protocol p sends its key in, as
// its vendor's own clients do, then the form every endpoint takes.
func keyHint(forms KeyForms, p protocol.ID) string {
	const key = keys.Prefix + "..."
	switch {
	case forms == GoogleForms:
		return "x-goog-api-key: " + key + ", the query parameter ?key=" + key + ", or Authorization: Bearer " + key
	case p == protocol.AnthropicMessages:
		return "x-api-key: " + key + " or Authorization: Bearer " + key
	case forms == HeaderForms:
		return "Authorization: Bearer " + key + " or x-api-key: " + key
	}
	return "Authorization: Bearer " + key
}

// Authenticator resolves a request's key to a key record and its account.
// The server uses it for endpoints outside the chat chain too.
type Authenticator struct {
	store store.Store
	now   func() time.Time

	mu      sync.Mutex
	touched map[string]time.Time // key id -> last use written
}

// NewAuthenticator returns an authenticator over st.
func NewAuthenticator(st store.Store, now func() time.Time) *Authenticator {
	return &Authenticator{store: st, now: now, touched: map[string]time.Time{}}
}

// touchEvery is how often at most a key's last use is written.
const touchEvery = time.Minute

// Used records that k was used now (the key's last_used_at): written in
// the background, at most once a minute per key, never on the caller's
// path. The balance and catalog endpoints do not call it (spec).
func (a *Authenticator) Used(ctx context.Context, k *store.Key) {
	now := a.now()
	a.mu.Lock()
	if last, ok := a.touched[k.ID]; ok && now.Sub(last) < touchEvery {
		a.mu.Unlock()
		return
	}
	if len(a.touched) >= 100_000 {
		clear(a.touched)
	}
	a.touched[k.ID] = now
	a.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = a.store.TouchKey(ctx, k.ID, now)
	}()
}

// Authenticate checks the key and the account. The error is a 401 with one
// of the five messages, or a 500 when the store fails (fail closed); a
// missing key's message shows how protocol p's clients send it.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request, forms KeyForms, p protocol.ID) (*store.Key, *store.Account, error) {
	var who authenticated
	return a.authenticate(ctx, r, forms, p, &who)
}

// authenticated is what authentication finds, in storage its caller owns
// (a chat call's Call, so that the lookup allocates nothing of its own).
type authenticated struct {
	hash    [sha256.Size]byte
	key     store.Key
	account store.Account
}

// authenticate is Authenticate, the key and account kept in who.
func (a *Authenticator) authenticate(ctx context.Context, r *http.Request, forms KeyForms, p protocol.ID, who *authenticated) (*store.Key, *store.Account, error) {
	raw, _ := ExtractKey(r, forms)
	if !keys.WellFormed(raw) {
		return nil, nil, apierr.New(apierr.InvalidAPIKey, msgMissing+" (send it as "+keyHint(forms, p)+")")
	}
	k, err := a.store.KeyByHash(ctx, keys.HashInto(&who.hash, raw))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, apierr.New(apierr.InvalidAPIKey, msgInvalid)
	}
	if err != nil {
		return nil, nil, apierr.Internal(err)
	}
	who.key = k
	if !k.Enabled {
		return nil, nil, apierr.New(apierr.InvalidAPIKey, msgRevoked)
	}
	if k.ExpiresAt != nil && !a.now().Before(*k.ExpiresAt) {
		return nil, nil, apierr.New(apierr.InvalidAPIKey, msgExpired)
	}
	acct, err := a.store.GetAccount(ctx, k.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, apierr.New(apierr.InvalidAPIKey, msgAccountBlocked)
	}
	if err != nil {
		return nil, nil, apierr.Internal(err)
	}
	if acct.Status != store.AccountActive {
		return &who.key, nil, apierr.New(apierr.InvalidAPIKey, msgAccountBlocked)
	}
	who.account = acct
	return &who.key, &who.account, nil
}

// QuotaError is the 402 of an exhausted balance, saying where credit
// comes from.
func QuotaError(cfg *config.Config, r *http.Request) *apierr.Error {
	return apierr.New(apierr.QuotaExceeded, msgNoBalance+TopUpHint(cfg, r))
}

type authStage struct {
	cfg    *config.Config
	auth   *Authenticator
	store  store.Store
	limits Limiter
}

func newAuth(d *Deps, _ map[string]string) (Stage, error) {
	s := &authStage{cfg: d.Config, auth: d.Auth, store: d.Store}
	if s.auth == nil {
		s.auth = NewAuthenticator(d.Store, d.Now)
	}
	if d.Limits != nil {
		s.limits = d.Limits
	}
	return s, nil
}

func (s *authStage) Name() string { return "auth" }

func (s *authStage) Serve(ctx context.Context, c *Call) error {
	forms := c.Forms
	if c.Protocol == protocol.GeminiNative {
		forms = GoogleForms
	}
	k, acct, err := s.auth.authenticate(ctx, c.Request, forms, c.Protocol, &c.own.who)
	if err != nil {
		return err
	}
	c.Key, c.Account = k, acct
	if !c.Quiet {
		s.auth.Used(ctx, k)
	}
	if read := c.ReadBody; read != nil {
		// The key is known: only now is the body read (a 402's row keeps
		// the model the body names). A body that could not be read ends
		// the call here: the server may have given up the request's
		// context with the connection.
		c.ReadBody = nil
		if c.Body, c.BodyErr = read(); c.BodyErr != nil {
			return c.BodyErr
		}
	}
	if c.Billed {
		w, err := s.store.GetWallet(ctx, acct.ID)
		if err != nil {
			return apierr.Internal(err)
		}
		c.Wallet = w
		if w.Balance <= 0 {
			if _, retry := c.Request.Header["Idempotency-Key"]; !retry {
				return QuotaError(s.cfg, c.Request)
			}
			c.Unpaid = QuotaError(s.cfg, c.Request)
		}
	}
	if s.limits != nil && !c.Uncounted {
		release, lerr := s.limits.Acquire(ctx, acct.ID, acct.RPM, acct.Concurrency)
		if lerr != nil {
			return lerr
		}
		c.Defer(release)
	}
	return nil
}
