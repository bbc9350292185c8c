// Package users is the people who sign into the console: sign-up (the
// accounts.signup rule, the sign-up credit), sign-in with argon2id
// passwords and its throttling, sessions kept in the store (so every
// instance of a shared store honours them), invitations, roles, and the
// operator's routes to add people (/admin/v1/accounts/{id}/users).
package users

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/store"
)

// Throttle bounds failed sign-ins (and password confirmations), counted
// in the store in fixed windows, and sign-ups per address.
type Throttle struct {
	// PerAccount failures per email, PerAddress per client address, in
	// Window; then sign-in is refused until the window ends.
	PerAccount, PerAddress int
	// SignupsPerAddress sign-ups from one address in Window.
	SignupsPerAddress int
	Window            time.Duration
}

// DefaultThrottle: ten wrong passwords for one account, or thirty from
// one address, pause sign-in for a quarter of an hour.
var DefaultThrottle = Throttle{PerAccount: 10, PerAddress: 30, SignupsPerAddress: 10, Window: 15 * time.Minute}

// Options configure a Service.
type Options struct {
	Store store.Store
	// Admin makes the account of an open sign-up, with the sign-up credit.
	Admin *admin.Service
	// Signup is accounts.signup (config.SignupOpen, ...).
	Signup string
	// SessionTTL is how long a sign-in lasts (console.session_ttl).
	SessionTTL time.Duration
	Throttle   Throttle
	Params     Params
	Now        func() time.Time
	Logger     hclog.Logger
}

// Service does the people's operations. It is safe for concurrent use.
type Service struct {
	st     store.Store
	adm    *admin.Service
	signup string
	ttl    time.Duration
	thr    Throttle
	params Params
	now    func() time.Time
	log    hclog.Logger
}

// New returns the service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = config.DefaultSessionTTL
	}
	if o.Throttle == (Throttle{}) {
		o.Throttle = DefaultThrottle
	}
	if o.Params == (Params{}) {
		o.Params = DefaultParams
	}
	if o.Signup == "" {
		o.Signup = config.SignupClosed
	}
	return &Service{st: o.Store, adm: o.Admin, signup: o.Signup, ttl: o.SessionTTL, thr: o.Throttle,
		params: o.Params, now: o.Now, log: o.Logger}
}

// Signup is the sign-up mode (config.SignupOpen, SignupInvite, SignupClosed).
func (s *Service) Signup() string { return s.signup }

// Password bounds: long enough to resist guessing, short enough that a
// hash costs what it should.
const (
	minPassword = 8
	maxPassword = 1024
)

func invalid(format string, args ...any) *apierr.Error {
	return apierr.Newf(apierr.InvalidRequest, format, args...)
}

// FoldEmail is an email as the store keeps it: trimmed, lower case.
func FoldEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// checkEmail refuses what cannot be an address.
func checkEmail(e string) *apierr.Error {
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(e, " \t\r\n<>,;\"\x00") ||
		strings.Contains(domain, "@") || len(e) > 254 || !utf8.ValidString(e) {
		return invalid("%q is not an email address", e)
	}
	return nil
}

func checkPassword(p string) *apierr.Error {
	switch n := utf8.RuneCountInString(p); {
	case n < minPassword:
		return invalid("the password is too short: use at least %d characters", minPassword)
	case len(p) > maxPassword:
		return invalid("the password is too long: use at most %d bytes", maxPassword)
	}
	return nil
}

func checkRole(r string) *apierr.Error {
	if !store.ValidRole(r) {
		return invalid("role must be owner, member or admin; got %q", r)
	}
	return nil
}

// token returns a random token and its id: the hex SHA-256 the store
// keeps in its place.
func token() (raw, id string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	raw = base64.RawURLEncoding.EncodeToString(b)
	return raw, TokenID(raw), nil
}

// TokenID is the id the store keeps for a session or invitation token.
func TokenID(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Client is where a request comes from.
type Client struct {
	Address   string // the client's IP address
	UserAgent string
}

// Signed is a new session: its record and the token its cookie carries.
type Signed struct {
	User    store.User
	Session store.Session
	Token   string
}

// newSession signs u in.
func (s *Service) newSession(ctx context.Context, u store.User, c Client) (Signed, error) {
	raw, id, err := token()
	if err != nil {
		return Signed{}, err
	}
	now := s.now().UTC()
	ua := c.UserAgent
	if len(ua) > 256 {
		ua = ua[:256]
	}
	se := store.Session{ID: id, UserID: u.ID, AccountID: u.AccountID, CreatedAt: now, ExpiresAt: now.Add(s.ttl),
		Address: c.Address, UserAgent: strings.ToValidUTF8(ua, "?")}
	if err := s.st.CreateSession(ctx, se); err != nil {
		return Signed{}, err
	}
	return Signed{User: u, Session: se, Token: raw}, nil
}

// SignUp makes a person an account and signs them in. With an
// invitation they join its account with its role (any sign-up mode but
// closed); otherwise, when sign-up is open, they get a new account of
// their own, holding the sign-up credit, as its owner.
func (s *Service) SignUp(ctx context.Context, email, password, invitation string, c Client) (Signed, error) {
	email = FoldEmail(email)
	if s.signup == config.SignupClosed {
		return Signed{}, apierr.New(apierr.PermissionDenied, "sign-up is closed on this gateway; ask its operator to add you")
	}
	if err := checkEmail(email); err != nil {
		return Signed{}, err
	}
	if err := checkPassword(password); err != nil {
		return Signed{}, err
	}
	if invitation == "" && s.signup == config.SignupInvite {
		return Signed{}, apierr.New(apierr.PermissionDenied, "sign-up needs an invitation on this gateway: ask an account's owner for an invitation link")
	}
	if err := s.throttled(ctx, "signup:"+c.Address, s.thr.SignupsPerAddress,
		"too many sign-ups from your address"); err != nil {
		return Signed{}, err
	}
	if _, err := s.st.UserByEmail(ctx, email); err == nil {
		return Signed{}, taken(email)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Signed{}, err
	}
	hash, err := HashPassword(password, s.params)
	if err != nil {
		return Signed{}, err
	}
	u := store.User{ID: newID("usr_"), Email: email, PasswordHash: hash, Role: store.RoleOwner, CreatedAt: s.now().UTC()}
	if invitation != "" {
		_, u, err = s.st.AcceptInvitation(ctx, TokenID(invitation), u, s.now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			return Signed{}, invalid("the invitation is unknown, used, expired or for another email address; ask for a new one")
		case errors.Is(err, store.ErrExists):
			return Signed{}, taken(email)
		case err != nil:
			return Signed{}, err
		}
	} else {
		// The sign-up credit names the person it was made for.
		a, err := s.adm.CreateAccount(store.WithCause(ctx, store.Cause{UserID: u.ID}), email, nil)
		if err != nil {
			return Signed{}, err
		}
		u.AccountID = a.ID
		if err := s.st.CreateUser(ctx, u); err != nil {
			// Another sign-up took the email since the check: the account
			// just made (and its credit) must not stay usable.
			a.Status = store.AccountDisabled
			if uerr := s.st.UpdateAccount(ctx, a); uerr != nil {
				s.log.Error("sign-up lost a race; disabling its account failed", "account", a.ID, "error", uerr)
			}
			if errors.Is(err, store.ErrExists) {
				return Signed{}, taken(email)
			}
			return Signed{}, err
		}
	}
	if _, err := s.st.FailSignIn(ctx, "signup:"+c.Address, s.now(), s.thr.Window); err != nil {
		return Signed{}, err
	}
	s.log.Info("signed up", "user", u.ID, "account", u.AccountID, "role", u.Role, "invited", invitation != "")
	return s.newSession(ctx, u, c)
}

func taken(email string) *apierr.Error {
	e := invalid("%s already has an account here: sign in instead", email)
	e.Status = http.StatusConflict
	return e
}

// throttled refuses when subject has limit failures in the current window.
func (s *Service) throttled(ctx context.Context, subject string, limit int, what string) error {
	if limit <= 0 {
		return nil
	}
	f, err := s.st.SignInFailuresOf(ctx, subject, s.now(), s.thr.Window)
	if err != nil {
		return err
	}
	if f.Count < limit {
		return nil
	}
	wait := f.Since.Add(s.thr.Window).Sub(s.now())
	mins := int(wait.Round(time.Minute) / time.Minute)
	e := apierr.Newf(apierr.RateLimitExceeded, "%s (%d in %s): try again in %d minute%s",
		what, f.Count, s.thr.Window, max(mins, 1), plural(max(mins, 1)))
	return e.WithHeader("Retry-After", strconv.Itoa(max(int(wait.Seconds()), 1)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// errCredentials is the one answer to a wrong email or password, so the
// answer does not tell which.
var errCredentials = apierr.New(apierr.InvalidAPIKey, "wrong email or password")

// SignIn checks a person's password and signs them in. Failures are
// counted per email and per address; past the Throttle's bounds sign-in
// is refused, right password or not, until the window ends.
func (s *Service) SignIn(ctx context.Context, email, password string, c Client) (Signed, error) {
	email = FoldEmail(email)
	if err := s.throttled(ctx, "addr:"+c.Address, s.thr.PerAddress, "too many failed sign-ins from your address"); err != nil {
		return Signed{}, err
	}
	if err := s.throttled(ctx, "email:"+email, s.thr.PerAccount, "too many failed sign-ins for this account"); err != nil {
		return Signed{}, err
	}
	u, err := s.st.UserByEmail(ctx, email)
	hash := u.PasswordHash
	if errors.Is(err, store.ErrNotFound) {
		hash = dummyHash()
	} else if err != nil {
		return Signed{}, err
	}
	ok, err := CheckPassword(password, hash)
	if err != nil {
		return Signed{}, fmt.Errorf("user %s: %w", u.ID, err)
	}
	if !ok || u.ID == "" {
		return Signed{}, s.failed(ctx, email, c)
	}
	if err := s.active(ctx, u.AccountID); err != nil {
		return Signed{}, err
	}
	if err := s.st.ClearSignInFailures(ctx, "email:"+email); err != nil {
		return Signed{}, err
	}
	return s.newSession(ctx, u, c)
}

// failed counts a wrong password against the email and the address.
func (s *Service) failed(ctx context.Context, email string, c Client) error {
	now := s.now()
	for _, subject := range []string{"email:" + email, "addr:" + c.Address} {
		if _, err := s.st.FailSignIn(ctx, subject, now, s.thr.Window); err != nil {
			return err
		}
	}
	return errCredentials
}

// active refuses an account that is disabled.
func (s *Service) active(ctx context.Context, accountID string) error {
	a, err := s.st.GetAccount(ctx, accountID)
	if err != nil {
		return err
	}
	if a.Status != store.AccountActive {
		return apierr.New(apierr.PermissionDenied, "this account is not active; ask the gateway's operator")
	}
	return nil
}

// ErrNoSession is the answer to a cookie that signs no one in: unknown,
// ended or expired, or of a person or account no longer there.
var ErrNoSession = errors.New("users: no session")

// Session is who a session token signs in.
func (s *Service) Session(ctx context.Context, raw string) (store.User, store.Session, error) {
	if raw == "" {
		return store.User{}, store.Session{}, ErrNoSession
	}
	se, err := s.st.GetSession(ctx, TokenID(raw))
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, store.Session{}, ErrNoSession
	}
	if err != nil {
		return store.User{}, store.Session{}, err
	}
	if !s.now().Before(se.ExpiresAt) {
		_ = s.st.DeleteSession(ctx, se.ID)
		return store.User{}, store.Session{}, ErrNoSession
	}
	u, err := s.st.GetUser(ctx, se.UserID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.AccountID != se.AccountID) {
		return store.User{}, store.Session{}, ErrNoSession
	}
	if err != nil {
		return store.User{}, store.Session{}, err
	}
	if err := s.active(ctx, u.AccountID); err != nil {
		return store.User{}, store.Session{}, err
	}
	return u, se, nil
}

// SignOut ends one session.
func (s *Service) SignOut(ctx context.Context, se store.Session) error {
	err := s.st.DeleteSession(ctx, se.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// SignOutEverywhere ends every session of u, this one included.
func (s *Service) SignOutEverywhere(ctx context.Context, u store.User) (int, error) {
	return s.st.DeleteUserSessions(ctx, u.ID)
}

// ConfirmPassword checks u's password again before a sensitive step (a
// key's reveal); wrong answers count as failed sign-ins.
func (s *Service) ConfirmPassword(ctx context.Context, u store.User, password string, c Client) error {
	if err := s.throttled(ctx, "email:"+u.Email, s.thr.PerAccount, "too many wrong passwords for this account"); err != nil {
		return err
	}
	ok, err := CheckPassword(password, u.PasswordHash)
	if err != nil {
		return err
	}
	if !ok {
		if err := s.failed(ctx, u.Email, c); err != nil && !errors.Is(err, errCredentials) {
			return err
		}
		return apierr.New(apierr.InvalidAPIKey, "wrong password")
	}
	return nil
}

// ChangePassword replaces u's password after checking the current one;
// every session of u ends, and a new one starts for this client.
func (s *Service) ChangePassword(ctx context.Context, u store.User, current, next string, c Client) (Signed, error) {
	if err := checkPassword(next); err != nil {
		return Signed{}, err
	}
	if err := s.ConfirmPassword(ctx, u, current, c); err != nil {
		return Signed{}, err
	}
	hash, err := HashPassword(next, s.params)
	if err != nil {
		return Signed{}, err
	}
	u.PasswordHash = hash
	if err := s.st.UpdateUser(ctx, u); err != nil {
		return Signed{}, err
	}
	if _, err := s.st.DeleteUserSessions(ctx, u.ID); err != nil {
		return Signed{}, err
	}
	return s.newSession(ctx, u, c)
}

// SetTimeZone sets the IANA zone u's times are shown in ("" lets the
// browser say).
func (s *Service) SetTimeZone(ctx context.Context, u store.User, zone string) (store.User, error) {
	if zone != "" {
		if _, err := time.LoadLocation(zone); err != nil {
			return u, invalid("%q is not a time zone (want an IANA name such as Europe/Paris)", zone)
		}
	}
	u.TimeZone = zone
	return u, s.st.UpdateUser(ctx, u)
}

// CreateUser adds a person to an existing account (the operator's `tollgate
// admin user create`, or an owner adding a teammate).
func (s *Service) CreateUser(ctx context.Context, accountID, email, password, role string) (store.User, error) {
	email = FoldEmail(email)
	if err := checkEmail(email); err != nil {
		return store.User{}, err
	}
	if err := checkPassword(password); err != nil {
		return store.User{}, err
	}
	if err := checkRole(role); err != nil {
		return store.User{}, err
	}
	hash, err := HashPassword(password, s.params)
	if err != nil {
		return store.User{}, err
	}
	u := store.User{ID: newID("usr_"), AccountID: accountID, Email: email, PasswordHash: hash, Role: role, CreatedAt: s.now().UTC()}
	err = s.st.CreateUser(ctx, u)
	if errors.Is(err, store.ErrExists) {
		return u, taken(email)
	}
	return u, err
}

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

// Invite makes an invitation to accountID with role, for email only
// when it is not empty; by is the inviting user ("" for the operator).
// The token, the link's secret, is returned this once.
func (s *Service) Invite(ctx context.Context, accountID, role, email, by string) (store.Invitation, string, error) {
	if s.signup == config.SignupClosed {
		return store.Invitation{}, "", apierr.New(apierr.PermissionDenied,
			"sign-up is closed on this gateway (accounts { signup = false }), so an invitation could not be accepted; the operator adds people with `tollgate admin user create`")
	}
	if err := checkRole(role); err != nil {
		return store.Invitation{}, "", err
	}
	if email = FoldEmail(email); email != "" {
		if err := checkEmail(email); err != nil {
			return store.Invitation{}, "", err
		}
	}
	raw, id, err := token()
	if err != nil {
		return store.Invitation{}, "", err
	}
	now := s.now().UTC()
	inv := store.Invitation{ID: id, AccountID: accountID, Role: role, Email: email, CreatedBy: by,
		CreatedAt: now, ExpiresAt: now.Add(InvitationTTL)}
	return inv, raw, s.st.CreateInvitation(ctx, inv)
}

// SetRole changes the role of a user of accountID; an account keeps at
// least one owner.
func (s *Service) SetRole(ctx context.Context, accountID, userID, role string) (store.User, error) {
	if err := checkRole(role); err != nil {
		return store.User{}, err
	}
	u, err := s.member(ctx, accountID, userID)
	if err != nil {
		return u, err
	}
	if u.Role == store.RoleOwner && role != store.RoleOwner {
		if err := s.keepOwner(ctx, accountID); err != nil {
			return u, err
		}
	}
	u.Role = role
	return u, s.st.UpdateUser(ctx, u)
}

// RemoveUser removes a user of accountID and ends their sessions; an
// account keeps at least one owner. Their keys stay with the account.
func (s *Service) RemoveUser(ctx context.Context, accountID, userID string) error {
	u, err := s.member(ctx, accountID, userID)
	if err != nil {
		return err
	}
	if u.Role == store.RoleOwner {
		if err := s.keepOwner(ctx, accountID); err != nil {
			return err
		}
	}
	return s.st.DeleteUser(ctx, userID)
}

// member reads a user of accountID (another account's is not found).
func (s *Service) member(ctx context.Context, accountID, userID string) (store.User, error) {
	u, err := s.st.GetUser(ctx, userID)
	if err == nil && u.AccountID != accountID {
		err = store.ErrNotFound
	}
	return u, err
}

// keepOwner refuses to take away the account's last owner.
func (s *Service) keepOwner(ctx context.Context, accountID string) error {
	us, err := s.st.ListUsers(ctx, accountID)
	if err != nil {
		return err
	}
	owners := 0
	for _, u := range us {
		if u.Role == store.RoleOwner {
			owners++
		}
	}
	if owners <= 1 {
		return invalid("an account keeps at least one owner: make someone else owner first")
	}
	return nil
}

// Sweep removes expired sessions every interval until ctx ends.
func (s *Service) Sweep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.st.DeleteExpiredSessions(ctx, s.now()); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("removing expired sessions", "error", err)
				}
			} else if n > 0 {
				s.log.Debug("expired sessions removed", "count", n)
			}
		}
	}
}
