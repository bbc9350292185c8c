package badgerstore

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/store"
)

// A store whose data directory is removed says so, refuses new money
// moves (calls fail closed), and still closes within its bound.
func TestRemovedDirectoryFailsClosedAndCloses(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := Open(dir, Options{ProbeInterval: 10 * time.Millisecond, CloseTimeout: time.Second, memTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "h1", AccountID: "a", Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check of a working store: %v", err)
	}
	if st := s.Stats(); st.OpenHolds != 1 {
		t.Errorf("stats = %+v, want 1 open hold", st)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// The periodic check finds it.
	for deadline := time.Now().Add(2 * time.Second); s.Check(ctx) == nil && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Check(ctx); !errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), dir) {
		t.Fatalf("check after the directory went: %v, want ErrUnavailable naming no path", err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "h2", AccountID: "a", Amount: 1}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("hold after the directory went: %v, want ErrUnavailable", err)
	}
	if _, err := s.Credit(ctx, "a", 1, "x"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("credit after the directory went: %v, want ErrUnavailable", err)
	}
	// Enough writes that Badger must flush a memtable into the directory
	// that is gone: its flush then retries forever.
	for i := range 200 {
		_ = s.Settle(ctx, store.Settlement{Row: &store.LogRow{AccountID: "a", RequestID: "r", Model: string(make([]byte, 2048)) + string(rune('a'+i%26))}})
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s of a 1s bound")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
}

// The directory coming back (the operator restores it) lets moves in again.
// Root writes to read-only directories, so as root the test runs again as
// the unprivileged user nobody, in a child process.
func TestProbeRecovers(t *testing.T) {
	testkind.Mark(t, testkind.Unprivileged)
	if os.Geteuid() == 0 {
		runUnprivileged(t, "TestProbeRecovers")
		return
	}
	ctx := t.Context()
	dir := t.TempDir()
	s := openTemp(t, dir, Options{ProbeInterval: 10 * time.Millisecond})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	waitCheck(t, s, true)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	waitCheck(t, s, false)
}

// waitCheck waits up to 2 s for Check to fail (failing) or pass.
func waitCheck(t *testing.T, s *Store, failing bool) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if err = s.Check(t.Context()); (err != nil) == failing {
			return
		}
	}
	t.Fatalf("check: %v, want failing %v", err, failing)
}

// Checks from many goroutines at once (a flood of /readyz) neither fail
// each other nor the money moves: they read what the periodic probe found.
func TestConcurrentChecksDoNotRace(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, t.TempDir(), Options{ProbeInterval: time.Millisecond})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed sync.Map
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				if err := s.Check(ctx); err != nil {
					failed.Store("check", err)
				}
			}
		}()
	}
	for i := range 200 {
		h := store.Hold{ID: "h" + strconv.Itoa(i), AccountID: "a", Amount: 1}
		if _, err := s.PlaceHold(ctx, h); err != nil {
			failed.Store("hold", err)
		}
	}
	wg.Wait()
	failed.Range(func(k, v any) bool {
		t.Errorf("%s failed during concurrent checks: %v", k, v)
		return true
	})
}
