package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
)

// Tests of what the conformance suites cannot see: several instances on
// one database.

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func account(t *testing.T, s *Store, id string, credit money.Nano) {
	t.Helper()
	if err := s.CreateAccount(t.Context(), store.Account{ID: id, Name: id, Status: store.AccountActive, CreatedAt: t0}, credit, "x"); err != nil {
		t.Fatal(err)
	}
}

func hold(account, id string, amount money.Nano) store.Hold {
	return store.Hold{ID: id, AccountID: account, KeyID: "k", Model: "m", Amount: amount, SubmittedAt: t0}
}

// Instances starting at once on an empty database migrate it once.
func TestConcurrentStartMigratesOnce(t *testing.T) {
	url := testpg.Schema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(t.Context(), Options{URL: url})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != SchemaVersion() {
		t.Fatalf("%d migrations recorded (%v), want %d", n, err, SchemaVersion())
	}

	t.Run("a newer database is refused", func(t *testing.T) {
		if _, err := conn.Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')`); err != nil {
			t.Fatal(err)
		}
		defer conn.Exec(t.Context(), `DELETE FROM schema_migrations WHERE version = 9999`)
		for _, no := range []bool{false, true} {
			if _, err := Open(t.Context(), Options{URL: url, NoMigrate: no}); err == nil || !strings.Contains(err.Error(), "newer version") {
				t.Fatalf("NoMigrate=%v: %v", no, err)
			}
		}
	})
	t.Run("NoMigrate refuses a database behind", func(t *testing.T) {
		_, err := Open(t.Context(), Options{URL: testpg.Schema(t), NoMigrate: true})
		if err == nil || !strings.Contains(err.Error(), "tollgate migrate") {
			t.Fatalf("open: %v", err)
		}
		applied, err := Migrate(t.Context(), url, nil)
		if err != nil || len(applied) != 0 {
			t.Fatalf("migrating a migrated database: %v %v", applied, err)
		}
	})
}

// The sweep sees only the holds of lapsed instances, and one sweeper at
// a time; a hold is released exactly once whoever settles it.
func TestSweepExpiredHolds(t *testing.T) {
	url := testpg.Schema(t)
	live := openURL(t, url, Options{Lease: time.Hour})
	dead := openURL(t, url, Options{Lease: time.Hour})
	ctx := t.Context()
	account(t, live, "a", money.Credits(10))
	for i, s := range []*Store{live, dead, dead} {
		if _, err := s.PlaceHold(ctx, hold("a", fmt.Sprintf("h%d", i), money.Credits(1))); err != nil {
			t.Fatal(err)
		}
	}
	sweep := func(s *Store) (ids []string, swept bool) {
		t.Helper()
		swept, err := s.SweepExpiredHolds(ctx, func(_ context.Context, hs []store.Hold) error {
			for _, h := range hs {
				ids = append(ids, h.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids, swept
	}
	if ids, swept := sweep(live); !swept || len(ids) != 0 {
		t.Fatalf("with every lease running the sweep found %v", ids)
	}
	// Closing ends the lease at once (a SIGKILL lets it run out).
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	ids, _ := sweep(live)
	if fmt.Sprint(ids) != "[h1 h2]" {
		t.Fatalf("swept %v, want the closed instance's h1 h2", ids)
	}

	t.Run("one sweeper at a time", func(t *testing.T) {
		other := openURL(t, url, Options{})
		inside, release := make(chan struct{}), make(chan struct{})
		go func() {
			_, _ = live.SweepExpiredHolds(ctx, func(context.Context, []store.Hold) error {
				close(inside)
				<-release
				return nil
			})
		}()
		<-inside
		if _, swept := sweep(other); swept {
			t.Fatal("two sweepers at once")
		}
		close(release)
	})
	t.Run("released once", func(t *testing.T) {
		var wg sync.WaitGroup
		ok := make(chan struct{}, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &store.LogRow{AccountID: "a", CreatedAt: t0, Status: store.StatusInterrupted, RequestID: "h1"}
				if err := live.Settle(ctx, store.Settlement{HoldID: "h1", Row: r}); err == nil {
					ok <- struct{}{}
				} else if !errors.Is(err, store.ErrNotFound) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if len(ok) != 1 {
			t.Fatalf("%d settlements of one hold", len(ok))
		}
		if w, _ := live.GetWallet(ctx, "a"); w.Held != money.Credits(2) || w.Balance != money.Credits(10) {
			t.Fatalf("wallet %+v", w)
		}
	})
}

// A store whose lease has lapsed places no hold: its holds could be
// released under its running calls.
func TestNoHoldWithoutALease(t *testing.T) {
	url := testpg.Schema(t)
	s := openURL(t, url, Options{})
	account(t, s, "a", money.Credits(10))
	if _, err := s.pool.Exec(t.Context(), `UPDATE instances SET lease_until = now() - interval '1 second' WHERE id = $1`, s.instance); err != nil {
		t.Fatal(err)
	}
	_, err := s.PlaceHold(t.Context(), hold("a", "h", 1))
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("hold with a lapsed lease: %v", err)
	}
	if err := s.Check(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("check with a lapsed lease: %v", err)
	}
	if err := s.renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlaceHold(t.Context(), hold("a", "h", 1)); err != nil {
		t.Fatalf("after renewal: %v", err)
	}
}

// Two instances spending one wallet at once never overdraw it: the row's
// guarded update is the only judge.
func TestHoldsAcrossInstances(t *testing.T) {
	url := testpg.Schema(t)
	a, b := openURL(t, url, Options{}), openURL(t, url, Options{})
	account(t, a, "w", money.Credits(25))
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*Store{a, b}[i%2]
			_, err := s.PlaceHold(t.Context(), hold("w", fmt.Sprintf("h%d", i), money.Credits(1)))
			switch {
			case err == nil:
				mu.Lock()
				won++
				mu.Unlock()
			case !errors.Is(err, store.ErrInsufficient):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won != 25 {
		t.Fatalf("%d holds of 1 in a wallet of 25", won)
	}
	if w, _ := b.GetWallet(t.Context(), "w"); w.Held != money.Credits(25) || w.Balance != money.Credits(25) {
		t.Fatalf("wallet %+v", w)
	}
}

// A key changed through one instance drops every instance's cache within
// two polls; the other instance never answers from a stale entry after.
func TestCacheFollowsOtherInstances(t *testing.T) {
	url := testpg.Schema(t)
	const poll = 50 * time.Millisecond
	a, b := openURL(t, url, Options{CachePoll: poll}), openURL(t, url, Options{CachePoll: poll})
	ctx := t.Context()
	account(t, a, "acct", 0)
	k := store.Key{ID: "k1", AccountID: "acct", Name: "n", Prefix: "p", Hash: []byte("hash-1"), Kind: store.KindConsole,
		Enabled: true, CreatedAt: t0}
	if err := a.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := b.KeyByHash(ctx, k.Hash); err != nil || !got.Enabled {
			t.Fatalf("warm: %+v %v", got, err)
		}
	}
	if _, _, ok := b.cache.key(k.Hash); !ok {
		t.Fatal("the key is not cached")
	}
	k.Enabled = false
	if err := a.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	time.Sleep(2*poll + 20*time.Millisecond)
	for {
		got, err := b.KeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Enabled {
			break
		}
		if time.Since(changed) > 2*poll {
			// An entry may answer only while a poll begun within two
			// periods found no change; this one is older than the change.
			t.Fatalf("a disabled key still enabled %s after the change", time.Since(changed))
		}
	}
	t.Run("accounts too", func(t *testing.T) {
		acct, err := b.GetAccount(ctx, "acct")
		if err != nil || acct.Status != store.AccountActive {
			t.Fatal(acct, err)
		}
		acct.Status = store.AccountDisabled
		if err := a.UpdateAccount(ctx, acct); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*poll + 20*time.Millisecond)
		if got, _ := b.GetAccount(ctx, "acct"); got.Status != store.AccountDisabled {
			t.Fatalf("status %s after the change", got.Status)
		}
	})
	t.Run("agents and organizations too", func(t *testing.T) {
		ag := store.Agent{ID: "ag", AccountID: "acct", Name: "n", Model: "m", Published: true, CreatedAt: t0, UpdatedAt: t0}
		if err := a.CreateAgent(ctx, ag); err != nil {
			t.Fatal(err)
		}
		if got, err := b.GetAgent(ctx, "ag"); err != nil || !got.Published {
			t.Fatal(got, err)
		}
		if _, err := b.GetOrganization(ctx, "acct"); err != nil {
			t.Fatal(err)
		}
		ag.Published = false
		if err := a.UpdateAgent(ctx, ag); err != nil {
			t.Fatal(err)
		}
		if err := a.SetOrganization(ctx, store.Organization{AccountID: "acct", RestrictModels: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*poll + 20*time.Millisecond)
		if got, _ := b.GetAgent(ctx, "ag"); got.Published {
			t.Fatal("an unpublished agent still published on the other instance")
		}
		if o, _ := b.GetOrganization(ctx, "acct"); !o.RestrictModels {
			t.Fatal("a changed policy not seen by the other instance")
		}
	})
	t.Run("no answer from the cache when the poll stops", func(t *testing.T) {
		b.cache.mu.Lock()
		b.cache.polled = time.Now().Add(-time.Hour)
		b.cache.mu.Unlock()
		if _, _, ok := b.cache.key(k.Hash); ok {
			t.Fatal("a stale cache answered")
		}
	})
}

// The limits hold in total across instances: the function serializes an
// account's admissions, whichever instance asks.
func TestAdmitAcrossInstances(t *testing.T) {
	url := testpg.Schema(t)
	a, b := openURL(t, url, Options{}), openURL(t, url, Options{})
	ctx := t.Context()
	admit := func(s *Store, acct string, rpm, conc int) bool {
		t.Helper()
		ad, err := s.Admit(ctx, acct, rpm, conc)
		if err != nil {
			t.Fatal(err)
		}
		return ad.Allowed
	}
	t.Run("rpm", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		n := 0
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if admit([]*Store{a, b}[i%2], "r", 20, 0) {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if n != 20 {
			t.Fatalf("%d of 50 admitted at rpm 20", n)
		}
		ad, err := a.Admit(ctx, "r", 20, 0)
		if err != nil || ad.Allowed || ad.Concurrency || ad.RetryAfter <= 0 || ad.RetryAfter > 61*time.Second {
			t.Fatalf("refusal %+v %v", ad, err)
		}
	})
	t.Run("concurrency", func(t *testing.T) {
		for i := range 3 {
			if !admit([]*Store{a, b}[i%2], "c", 0, 3) {
				t.Fatalf("slot %d refused", i)
			}
		}
		ad, err := b.Admit(ctx, "c", 0, 3)
		if err != nil || ad.Allowed || !ad.Concurrency {
			t.Fatalf("a fourth slot: %+v %v", ad, err)
		}
		if err := a.Release(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if !admit(b, "c", 0, 3) {
			t.Fatal("a freed slot was not given again")
		}
		// The slots of an instance whose lease ended stop counting.
		c := openURL(t, url, Options{})
		if admit(c, "c", 0, 3) {
			t.Fatal("a fourth slot")
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if !admit(c, "c", 0, 3) {
			t.Fatal("the closed instance's slots still count")
		}
		// Releasing more than was taken never frees a place twice.
		for range 3 {
			if err := c.Release(ctx, "c"); err != nil {
				t.Fatal(err)
			}
		}
		if !admit(c, "c", 0, 2) || admit(c, "c", 0, 2) {
			t.Fatal("extra releases freed places they did not take")
		}
	})
}

// Text PostgreSQL cannot hold (NUL, invalid UTF-8) is stored with U+FFFD;
// ids that cannot be stored unchanged are refused.
func TestTextAndTimes(t *testing.T) {
	s := openURL(t, testpg.Schema(t), Options{})
	ctx := t.Context()
	account(t, s, "a", 0)
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &store.LogRow{AccountID: "a", CreatedAt: t0, ErrorMessage: "nul\x00 and \xff", RequestID: "r", ResultExpiresAt: &far}
	if err := s.Settle(ctx, store.Settlement{Row: r}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetLog(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ErrorMessage != "nul\uFFFD and \uFFFD" {
		t.Fatalf("message %q", got.ErrorMessage)
	}
	if got.ResultExpiresAt == nil || got.ResultExpiresAt.Year() != 2262 {
		t.Fatalf("a time past 2262 reads %v", got.ResultExpiresAt)
	}
	if err := s.CreateAccount(ctx, store.Account{ID: "bad\x00id"}, 0, ""); err == nil {
		t.Fatal("an id with NUL was stored")
	}
	if _, err := s.GetAccount(ctx, "bad\x00id"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lookup of an id with NUL: %v", err)
	}
}

// A database that goes away makes the store unavailable (money moves
// refused, probes failing), not a generic error.
func TestDatabaseGone(t *testing.T) {
	srv, err := testpg.Launch()
	testpg.Unavailable(t, err)
	url, err := srv.CreateDatabase(t.Context(), "gone")
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	s, err := Open(t.Context(), Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close() // fails: the database is gone
	account(t, s, "a", money.Credits(10))
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.OpenHolds != 0 {
		t.Fatalf("stats %+v", st)
	}
	srv.Stop()
	if _, err := s.PlaceHold(t.Context(), hold("a", "h", 1)); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("hold with the database gone: %v", err)
	}
	if err := s.Check(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("check with the database gone: %v", err)
	}
}
