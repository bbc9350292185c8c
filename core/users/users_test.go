package users

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *clock                   { c := &clock{}; c.ns.Store(t0.UnixNano()); return c }
func cheap() Params                      { return Params{Memory: 64, Time: 1, Threads: 1} }
func client(addr string) Client          { return Client{Address: addr, UserAgent: "test"} }
func status(err error) int               { return apierr.As(err).Status }
func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

type fixture struct {
	st  store.Store
	svc *Service
	adm *admin.Service
	clk *clock
}

func newFixture(t *testing.T, signup string) *fixture {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sealer, err := keys.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, clk: newClock()}
	f.adm = admin.NewService(st, sealer, f.clk.now, config.DefaultSignupCredit)
	f.svc = New(Options{Store: st, Admin: f.adm, Signup: signup, SessionTTL: time.Hour, Params: cheap(), Now: f.clk.now})
	return f
}

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse", cheap())
	mustOK(t, "hash", err)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q is not argon2id's PHC form", h)
	}
	h2, _ := HashPassword("correct horse", cheap())
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, c := range []struct {
		pw   string
		want bool
	}{{"correct horse", true}, {"correct horsE", false}, {"", false}} {
		ok, err := CheckPassword(c.pw, h)
		if err != nil || ok != c.want {
			t.Fatalf("check %q = %v, %v; want %v", c.pw, ok, err, c.want)
		}
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=0,t=1,p=1$c2FsdA$aGFzaA", "plain"} {
		if _, err := CheckPassword("x", bad); err == nil {
			t.Fatalf("hash %q accepted", bad)
		}
	}
}

func TestSignUpOpen(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	ctx := t.Context()
	s, err := f.svc.SignUp(ctx, " Ada@Example.com ", "a long password", "", client("192.0.2.1"))
	mustOK(t, "sign up", err)
	if s.User.Email != "ada@example.com" || s.User.Role != store.RoleOwner || s.Token == "" {
		t.Fatalf("signed up as %+v", s.User)
	}
	w, err := f.st.GetWallet(ctx, s.User.AccountID)
	mustOK(t, "wallet", err)
	if w.Balance != money.MustParse("121.32") {
		t.Fatalf("trial credit %s, want 121.32", w.Balance)
	}
	u, se, err := f.svc.Session(ctx, s.Token)
	mustOK(t, "session", err)
	if u.ID != s.User.ID || se.Address != "192.0.2.1" {
		t.Fatalf("the session signs in %+v from %q", u, se.Address)
	}
	if strings.Contains(se.ID, s.Token) {
		t.Fatal("the store keeps the token itself")
	}

	_, err = f.svc.SignUp(ctx, "ADA@example.com", "another password", "", client("192.0.2.2"))
	if status(err) != http.StatusConflict {
		t.Fatalf("second sign-up of one email: %v", err)
	}
	for _, c := range []struct{ email, pw string }{{"not-an-email", "a long password"}, {"x@y", "short"}} {
		if _, err := f.svc.SignUp(ctx, c.email, c.pw, "", client("192.0.2.3")); status(err) != 400 {
			t.Fatalf("sign-up %q/%q: %v", c.email, c.pw, err)
		}
	}
}

func TestSignUpModes(t *testing.T) {
	ctx := context.Background()
	closed := newFixture(t, config.SignupClosed)
	if _, err := closed.svc.SignUp(ctx, "a@example.com", "a long password", "", client("a")); status(err) != 403 {
		t.Fatalf("closed sign-up: %v", err)
	}
	if _, _, err := closed.svc.Invite(ctx, "acct", store.RoleMember, "", ""); status(err) != 403 {
		t.Fatalf("an invitation with sign-up closed: %v", err)
	}

	f := newFixture(t, config.SignupInvite)
	if _, err := f.svc.SignUp(ctx, "a@example.com", "a long password", "", client("a")); status(err) != 403 {
		t.Fatalf("invite-only sign-up without an invitation: %v", err)
	}
	acct, err := f.adm.CreateAccount(ctx, "team", nil)
	mustOK(t, "account", err)
	inv, raw, err := f.svc.Invite(ctx, acct.ID, store.RoleAdmin, "Bob@example.com", "usr_x")
	mustOK(t, "invite", err)
	if inv.Email != "bob@example.com" || inv.ID == raw || inv.ID != TokenID(raw) {
		t.Fatalf("invitation %+v", inv)
	}
	if _, err := f.svc.SignUp(ctx, "eve@example.com", "a long password", raw, client("a")); status(err) != 400 {
		t.Fatalf("another email accepted the invitation: %v", err)
	}
	s, err := f.svc.SignUp(ctx, "bob@example.com", "a long password", raw, client("a"))
	mustOK(t, "accept", err)
	if s.User.AccountID != acct.ID || s.User.Role != store.RoleAdmin {
		t.Fatalf("joined as %+v", s.User)
	}
	if _, err := f.svc.SignUp(ctx, "bob2@example.com", "a long password", raw, client("a")); status(err) != 400 {
		t.Fatalf("an invitation used twice: %v", err)
	}
	// Joining gives no credit: the account keeps its own.
	w, _ := f.st.GetWallet(ctx, acct.ID)
	if w.Balance != money.MustParse("121.32") {
		t.Fatalf("balance %s after a member joined", w.Balance)
	}
}

func TestSignInAndThrottle(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	ctx := t.Context()
	_, err := f.svc.SignUp(ctx, "ada@example.com", "a long password", "", client("192.0.2.1"))
	mustOK(t, "sign up", err)
	_, err = f.svc.SignIn(ctx, "ADA@example.com", "a long password", client("192.0.2.1"))
	mustOK(t, "sign in", err)
	_, err = f.svc.SignIn(ctx, "nobody@example.com", "a long password", client("192.0.2.1"))
	if status(err) != 401 || apierr.As(err).Message != "wrong email or password" {
		t.Fatalf("unknown email: %v", err)
	}
	// Ten wrong passwords (from several addresses) pause the account.
	for i := range 10 {
		_, err := f.svc.SignIn(ctx, "ada@example.com", "wrong password", client("198.51.100."+string(rune('0'+i))))
		if status(err) != 401 {
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	_, err = f.svc.SignIn(ctx, "ada@example.com", "a long password", client("192.0.2.9"))
	e := apierr.As(err)
	if e.Status != 429 || !strings.Contains(e.Message, "too many failed sign-ins for this account") ||
		e.Header.Get("Retry-After") == "" {
		t.Fatalf("eleventh attempt with the right password: %v", err)
	}
	f.clk.advance(DefaultThrottle.Window)
	_, err = f.svc.SignIn(ctx, "ada@example.com", "a long password", client("192.0.2.9"))
	mustOK(t, "sign in after the window", err)

	// Thirty failures from one address (over several accounts) pause that
	// address, for every account.
	for i := range 30 {
		_, err := f.svc.SignIn(ctx, fmt.Sprintf("x%d@example.com", i%5), "wrong password", client("203.0.113.5"))
		if status(err) != 401 {
			t.Fatalf("failure %d from one address: %v", i, err)
		}
	}
	_, err = f.svc.SignIn(ctx, "ada@example.com", "a long password", client("203.0.113.5"))
	if e := apierr.As(err); e.Status != 429 || !strings.Contains(e.Message, "from your address") {
		t.Fatalf("sign-in from a paused address: %v", err)
	}
	_, err = f.svc.SignIn(ctx, "ada@example.com", "a long password", client("192.0.2.1"))
	mustOK(t, "sign in from another address", err)
}

func TestSessions(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	ctx := t.Context()
	a, err := f.svc.SignUp(ctx, "ada@example.com", "a long password", "", client("x"))
	mustOK(t, "sign up", err)
	b, err := f.svc.SignIn(ctx, "ada@example.com", "a long password", client("y"))
	mustOK(t, "sign in", err)
	for _, raw := range []string{"", "nope", a.Token + "x"} {
		if _, _, err := f.svc.Session(ctx, raw); !errors.Is(err, ErrNoSession) {
			t.Fatalf("token %q: %v", raw, err)
		}
	}
	mustOK(t, "sign out", f.svc.SignOut(ctx, a.Session))
	if _, _, err := f.svc.Session(ctx, a.Token); !errors.Is(err, ErrNoSession) {
		t.Fatalf("a signed-out session: %v", err)
	}
	if _, _, err := f.svc.Session(ctx, b.Token); err != nil {
		t.Fatalf("the other session ended too: %v", err)
	}
	c, _ := f.svc.SignIn(ctx, "ada@example.com", "a long password", client("z"))
	n, err := f.svc.SignOutEverywhere(ctx, c.User)
	mustOK(t, "sign out everywhere", err)
	if n != 2 {
		t.Fatalf("%d sessions ended, want 2", n)
	}
	for _, s := range []Signed{b, c} {
		if _, _, err := f.svc.Session(ctx, s.Token); !errors.Is(err, ErrNoSession) {
			t.Fatalf("a session outlived sign-out everywhere: %v", err)
		}
	}

	// A session ends at its TTL.
	d, _ := f.svc.SignIn(ctx, "ada@example.com", "a long password", client("z"))
	f.clk.advance(time.Hour)
	if _, _, err := f.svc.Session(ctx, d.Token); !errors.Is(err, ErrNoSession) {
		t.Fatalf("an expired session: %v", err)
	}

	// A disabled account signs no one in, and ends its sessions' use.
	e, _ := f.svc.SignIn(ctx, "ada@example.com", "a long password", client("z"))
	acct, _ := f.st.GetAccount(ctx, e.User.AccountID)
	acct.Status = store.AccountDisabled
	mustOK(t, "disable", f.st.UpdateAccount(ctx, acct))
	if _, _, err := f.svc.Session(ctx, e.Token); status(err) != 403 {
		t.Fatalf("a session of a disabled account: %v", err)
	}
	if _, err := f.svc.SignIn(ctx, "ada@example.com", "a long password", client("z")); status(err) != 403 {
		t.Fatalf("sign-in to a disabled account: %v", err)
	}
}

func TestPasswordChangeAndConfirm(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	ctx := t.Context()
	a, _ := f.svc.SignUp(ctx, "ada@example.com", "a long password", "", client("x"))
	other, _ := f.svc.SignIn(ctx, "ada@example.com", "a long password", client("y"))
	if err := f.svc.ConfirmPassword(ctx, a.User, "nope nope", client("x")); status(err) != 401 {
		t.Fatalf("confirm a wrong password: %v", err)
	}
	mustOK(t, "confirm", f.svc.ConfirmPassword(ctx, a.User, "a long password", client("x")))
	s, err := f.svc.ChangePassword(ctx, a.User, "a long password", "a new long password", client("x"))
	mustOK(t, "change", err)
	if _, _, err := f.svc.Session(ctx, other.Token); !errors.Is(err, ErrNoSession) {
		t.Fatal("a password change left another session signed in")
	}
	if _, _, err := f.svc.Session(ctx, s.Token); err != nil {
		t.Fatalf("the new session: %v", err)
	}
	if _, err := f.svc.SignIn(ctx, "ada@example.com", "a new long password", client("x")); err != nil {
		t.Fatalf("sign in with the new password: %v", err)
	}
}

func TestRoles(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	ctx := t.Context()
	a, _ := f.svc.SignUp(ctx, "ada@example.com", "a long password", "", client("x"))
	acct := a.User.AccountID
	bob, err := f.svc.CreateUser(ctx, acct, "bob@example.com", "a long password", store.RoleMember)
	mustOK(t, "create", err)
	if _, err := f.svc.CreateUser(ctx, acct, "bob@example.com", "a long password", store.RoleMember); status(err) != 409 {
		t.Fatalf("a taken email: %v", err)
	}
	if _, err := f.svc.CreateUser(ctx, acct, "c@example.com", "a long password", "boss"); status(err) != 400 {
		t.Fatalf("an unknown role: %v", err)
	}
	if _, err := f.svc.SetRole(ctx, acct, a.User.ID, store.RoleMember); status(err) != 400 {
		t.Fatalf("demoting the last owner: %v", err)
	}
	if err := f.svc.RemoveUser(ctx, acct, a.User.ID); status(err) != 400 {
		t.Fatalf("removing the last owner: %v", err)
	}
	_, err = f.svc.SetRole(ctx, acct, bob.ID, store.RoleOwner)
	mustOK(t, "promote", err)
	mustOK(t, "remove the first owner", f.svc.RemoveUser(ctx, acct, a.User.ID))
	if _, _, err := f.svc.Session(ctx, a.Token); !errors.Is(err, ErrNoSession) {
		t.Fatal("a removed person is still signed in")
	}
	if err := f.svc.RemoveUser(ctx, "another", bob.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing another account's person: %v", err)
	}
}
