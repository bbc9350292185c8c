package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// RunUsers is the suite of the Users role: console users (one email per
// gateway) and the invitations that let people join an account.
func RunUsers(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("users", func(t *testing.T) { t.Parallel(); testUsers(t, open(t)) })
	t.Run("invitations", func(t *testing.T) { t.Parallel(); testInvitations(t, open(t)) })
	t.Run("concurrent acceptances", func(t *testing.T) { t.Parallel(); testConcurrentAcceptances(t, open(t)) })
}

// RunSessions is the suite of the Sessions role: sessions and the failed
// sign-ins that throttle them.
func RunSessions(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("sessions", func(t *testing.T) { t.Parallel(); testSessions(t, open(t)) })
	t.Run("sign-in failures", func(t *testing.T) { t.Parallel(); testSignInFailures(t, open(t)) })
	t.Run("concurrent sign-in failures", func(t *testing.T) { t.Parallel(); testConcurrentSignInFailures(t, open(t)) })
}

func user(account, id string, n int) store.User {
	return store.User{
		ID: id, AccountID: account, Email: id + "@example.com", PasswordHash: "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA",
		Role: store.RoleMember, CreatedAt: t0.Add(time.Duration(n) * time.Minute),
	}
}

func normUser(u store.User) store.User {
	u.CreatedAt = u.CreatedAt.UTC()
	return u
}

func userIDs(us []store.User) []string {
	ids := []string{}
	for _, u := range us {
		ids = append(ids, u.ID)
	}
	return ids
}

func testUsers(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	newAccount(t, s, "b", 0)
	owner := user("a", "u-2", 2)
	owner.Role, owner.TimeZone = store.RoleOwner, "Europe/Paris"
	users := []store.User{owner, user("a", "u-1", 1), user("b", "u-3", 3)}
	for _, u := range users {
		mustNil(t, "create "+u.ID, s.CreateUser(ctx, u))
	}
	for _, u := range users {
		got, err := s.GetUser(ctx, u.ID)
		mustNil(t, "get "+u.ID, err)
		same(t, "user "+u.ID, normUser(got), u)
		got, err = s.UserByEmail(ctx, u.Email)
		mustNil(t, "by email "+u.Email, err)
		same(t, "user by email "+u.Email, normUser(got), u)
	}
	list, err := s.ListUsers(ctx, "a")
	mustNil(t, "list", err)
	same(t, "users of a, oldest first", userIDs(list), []string{"u-1", "u-2"})

	dupEmail := user("b", "u-9", 9)
	dupEmail.Email = owner.Email
	mustIs(t, "taken email", s.CreateUser(ctx, dupEmail), store.ErrExists)
	mustIs(t, "taken id", s.CreateUser(ctx, user("b", "u-1", 9)), store.ErrExists)
	mustIs(t, "unknown account", s.CreateUser(ctx, user("nope", "u-8", 8)), store.ErrNotFound)
	for _, id := range []string{"nope", ""} {
		_, err = s.GetUser(ctx, id)
		mustIs(t, "get unknown "+id, err, store.ErrNotFound)
	}
	_, err = s.UserByEmail(ctx, "nobody@example.com")
	mustIs(t, "unknown email", err, store.ErrNotFound)

	// An update keeps the account, email and creation.
	up := owner
	up.AccountID, up.Email, up.CreatedAt = "b", "new@example.com", t0.Add(time.Hour)
	up.PasswordHash, up.Role, up.TimeZone = "$argon2id$new", store.RoleAdmin, ""
	mustNil(t, "update", s.UpdateUser(ctx, up))
	got, err := s.GetUser(ctx, owner.ID)
	mustNil(t, "get updated", err)
	want := up
	want.AccountID, want.Email, want.CreatedAt = owner.AccountID, owner.Email, owner.CreatedAt
	same(t, "updated user", normUser(got), want)
	mustIs(t, "update unknown", s.UpdateUser(ctx, user("a", "nope", 0)), store.ErrNotFound)

	// A delete frees the email and ends the user's sessions.
	se := session("u-1", "a", "s-1", 1)
	mustNil(t, "session", s.CreateSession(ctx, se))
	mustNil(t, "delete", s.DeleteUser(ctx, "u-1"))
	_, err = s.GetUser(ctx, "u-1")
	mustIs(t, "get deleted", err, store.ErrNotFound)
	_, err = s.GetSession(ctx, "s-1")
	mustIs(t, "session of a deleted user", err, store.ErrNotFound)
	mustIs(t, "delete twice", s.DeleteUser(ctx, "u-1"), store.ErrNotFound)
	mustNil(t, "email reused", s.CreateUser(ctx, withEmail(user("b", "u-4", 4), "u-1@example.com")))
	list, err = s.ListUsers(ctx, "a")
	mustNil(t, "list after delete", err)
	same(t, "users of a after delete", userIDs(list), []string{"u-2"})
}

func invitation(account, id string, n int) store.Invitation {
	at := t0.Add(time.Duration(n) * time.Minute)
	return store.Invitation{ID: id, AccountID: account, Role: store.RoleAdmin, CreatedBy: "u-0",
		CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
}

func normInvitation(inv store.Invitation) store.Invitation {
	inv.CreatedAt, inv.ExpiresAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
	return inv
}

func testInvitations(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	newAccount(t, s, "b", 0)
	i1, i2 := invitation("a", "inv-1", 1), invitation("a", "inv-2", 2)
	i2.Email, i2.Role = "x@example.com", store.RoleMember
	for _, inv := range []store.Invitation{i2, i1, invitation("b", "inv-3", 3)} {
		mustNil(t, "create "+inv.ID, s.CreateInvitation(ctx, inv))
	}
	mustIs(t, "taken id", s.CreateInvitation(ctx, invitation("b", "inv-1", 4)), store.ErrExists)
	mustIs(t, "unknown account", s.CreateInvitation(ctx, invitation("nope", "inv-9", 9)), store.ErrNotFound)
	list, err := s.ListInvitations(ctx, "a")
	mustNil(t, "list", err)
	if len(list) != 2 {
		t.Fatalf("invitations of a: %+v", list)
	}
	same(t, "first invitation", normInvitation(list[0]), i1)
	same(t, "second invitation", normInvitation(list[1]), i2)

	// Accepting makes the user in the invitation's account with its role,
	// whatever the user says, and uses the invitation up.
	u := user("b", "u-1", 5)
	u.Role = store.RoleOwner
	inv, got, err := s.AcceptInvitation(ctx, "inv-1", u, t0.Add(time.Hour))
	mustNil(t, "accept", err)
	same(t, "accepted invitation", normInvitation(inv), i1)
	want := u
	want.AccountID, want.Role = "a", store.RoleAdmin
	same(t, "user made", normUser(got), want)
	stored, err := s.GetUser(ctx, "u-1")
	mustNil(t, "get accepted user", err)
	same(t, "user stored", normUser(stored), want)
	_, _, err = s.AcceptInvitation(ctx, "inv-1", user("a", "u-2", 6), t0.Add(time.Hour))
	mustIs(t, "accept twice", err, store.ErrNotFound)

	// For another email than the invitation's: refused.
	_, _, err = s.AcceptInvitation(ctx, "inv-2", user("a", "u-6", 7), t0)
	mustIs(t, "accept for another email", err, store.ErrNotFound)
	// Expired: refused, and it stays until deleted.
	_, _, err = s.AcceptInvitation(ctx, "inv-2", withEmail(user("a", "u-3", 7), i2.Email), i2.ExpiresAt)
	mustIs(t, "accept expired", err, store.ErrNotFound)
	// A taken email: refused, the invitation stays.
	mustNil(t, "taker", s.CreateUser(ctx, withEmail(user("b", "u-7", 8), i2.Email)))
	_, _, err = s.AcceptInvitation(ctx, "inv-2", withEmail(user("a", "u-4", 8), i2.Email), t0)
	mustIs(t, "accept with a taken email", err, store.ErrExists)
	list, err = s.ListInvitations(ctx, "a")
	mustNil(t, "list after", err)
	same(t, "invitations left", len(list), 1)
	mustNil(t, "delete", s.DeleteInvitation(ctx, "inv-2"))
	mustIs(t, "delete twice", s.DeleteInvitation(ctx, "inv-2"), store.ErrNotFound)
	_, _, err = s.AcceptInvitation(ctx, "inv-2", user("a", "u-5", 9), t0)
	mustIs(t, "accept deleted", err, store.ErrNotFound)
	list, err = s.ListInvitations(ctx, "a")
	mustNil(t, "list at the end", err)
	same(t, "invitations at the end", len(list), 0)
}

// testConcurrentAcceptances: of several people accepting one invitation
// at once, exactly one joins.
func testConcurrentAcceptances(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	mustNil(t, "invite", s.CreateInvitation(ctx, invitation("a", "inv", 0)))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = s.AcceptInvitation(ctx, "inv", user("x", fmt.Sprintf("u-%d", i), i), t0)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("accept: %v", err)
		}
	}
	list, err := s.ListUsers(ctx, "a")
	mustNil(t, "list", err)
	if ok != 1 || len(list) != 1 {
		t.Fatalf("%d acceptances passed, %d users made; want one", ok, len(list))
	}
}

func withEmail(u store.User, e string) store.User { u.Email = e; return u }

func session(userID, account, id string, n int) store.Session {
	at := t0.Add(time.Duration(n) * time.Minute)
	return store.Session{ID: id, UserID: userID, AccountID: account, CreatedAt: at, ExpiresAt: at.Add(time.Hour),
		Address: "192.0.2.1", UserAgent: "test/1.0"}
}

func normSession(se store.Session) store.Session {
	se.CreatedAt, se.ExpiresAt = se.CreatedAt.UTC(), se.ExpiresAt.UTC()
	return se
}

func testSessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	s1, s2, s3 := session("u-1", "a", "s-1", 1), session("u-1", "a", "s-2", 0), session("u-2", "a", "s-3", 90)
	for _, se := range []store.Session{s1, s2, s3} {
		mustNil(t, "create "+se.ID, s.CreateSession(ctx, se))
	}
	mustIs(t, "taken id", s.CreateSession(ctx, session("u-9", "a", "s-1", 5)), store.ErrExists)
	got, err := s.GetSession(ctx, "s-1")
	mustNil(t, "get", err)
	same(t, "session", normSession(got), s1)
	_, err = s.GetSession(ctx, "nope")
	mustIs(t, "get unknown", err, store.ErrNotFound)
	list, err := s.ListSessions(ctx, "u-1")
	mustNil(t, "list", err)
	if len(list) != 2 || list[0].ID != "s-2" || list[1].ID != "s-1" {
		t.Fatalf("sessions of u-1, oldest first: %+v", list)
	}

	mustNil(t, "delete", s.DeleteSession(ctx, "s-2"))
	mustIs(t, "delete twice", s.DeleteSession(ctx, "s-2"), store.ErrNotFound)

	// s-1 expires at t0+61m, s-3 at t0+150m.
	n, err := s.DeleteExpiredSessions(ctx, t0.Add(61*time.Minute))
	mustNil(t, "delete expired", err)
	same(t, "expired sessions deleted", n, 1)
	_, err = s.GetSession(ctx, "s-1")
	mustIs(t, "expired session", err, store.ErrNotFound)
	_, err = s.GetSession(ctx, "s-3")
	mustNil(t, "live session", err)

	for i := range 3 {
		mustNil(t, "another", s.CreateSession(ctx, session("u-2", "a", fmt.Sprintf("s-x%d", i), i)))
	}
	n, err = s.DeleteUserSessions(ctx, "u-2")
	mustNil(t, "sign out everywhere", err)
	same(t, "sessions ended", n, 4)
	list, err = s.ListSessions(ctx, "u-2")
	mustNil(t, "list after", err)
	same(t, "sessions left", len(list), 0)
	n, err = s.DeleteUserSessions(ctx, "u-2")
	mustNil(t, "sign out everywhere again", err)
	same(t, "sessions ended again", n, 0)
}

func testSignInFailures(t *testing.T, s store.Store) {
	ctx := t.Context()
	const w = 15 * time.Minute
	f, err := s.SignInFailuresOf(ctx, "addr:192.0.2.1", t0, w)
	mustNil(t, "none yet", err)
	same(t, "no failures", f, store.SignInFailures{})
	for i := 1; i <= 3; i++ {
		f, err = s.FailSignIn(ctx, "addr:192.0.2.1", t0.Add(time.Duration(i)*time.Minute), w)
		mustNil(t, "fail", err)
		if f.Count != i || !f.Since.Equal(t0.Add(time.Minute)) {
			t.Fatalf("failure %d: %+v", i, f)
		}
	}
	f, err = s.SignInFailuresOf(ctx, "addr:192.0.2.1", t0.Add(10*time.Minute), w)
	mustNil(t, "read", err)
	if f.Count != 3 || !f.Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("failures in the window: %+v", f)
	}
	f, err = s.SignInFailuresOf(ctx, "email:other", t0, w)
	mustNil(t, "other subject", err)
	same(t, "another subject's failures", f.Count, 0)
	// The window ends w after it started: then nothing is counted, and the
	// next failure starts a new window.
	f, err = s.SignInFailuresOf(ctx, "addr:192.0.2.1", t0.Add(time.Minute+w), w)
	mustNil(t, "read after the window", err)
	same(t, "failures after the window", f.Count, 0)
	f, err = s.FailSignIn(ctx, "addr:192.0.2.1", t0.Add(time.Minute+w), w)
	mustNil(t, "fail in a new window", err)
	if f.Count != 1 || !f.Since.Equal(t0.Add(time.Minute+w)) {
		t.Fatalf("first failure of a new window: %+v", f)
	}
	mustNil(t, "clear", s.ClearSignInFailures(ctx, "addr:192.0.2.1"))
	f, err = s.SignInFailuresOf(ctx, "addr:192.0.2.1", t0.Add(w), w)
	mustNil(t, "read cleared", err)
	same(t, "cleared failures", f.Count, 0)
	mustNil(t, "clear twice", s.ClearSignInFailures(ctx, "addr:192.0.2.1"))
}

func testConcurrentSignInFailures(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.FailSignIn(ctx, "email:x@example.com", t0, time.Hour); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	f, err := s.SignInFailuresOf(ctx, "email:x@example.com", t0, time.Hour)
	mustNil(t, "read", err)
	same(t, "concurrent failures counted", f.Count, n)
}
