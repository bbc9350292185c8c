package pgstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// A hold whose placing lost the database's answer after it committed is
// released by its instance as soon as the database answers, its wallet's
// held amount with it; a doubt about a hold that never landed, or that
// another instance owns, changes nothing. (The link cut itself is tried
// against real processes by TestDatabaseOutageUnderLoad.)
func TestDoubtfulHoldsAreReleased(t *testing.T) {
	url := testpg.Schema(t)
	s := openURL(t, url, Options{Lease: 1500 * time.Millisecond})
	other := openURL(t, url, Options{Lease: 1500 * time.Millisecond})
	account(t, s, "a", money.Credits(10))
	for _, id := range []string{"landed", "kept"} {
		if _, err := s.PlaceHold(t.Context(), hold("a", id, money.Credits(1))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.PlaceHold(t.Context(), hold("a", "others", money.Credits(2))); err != nil {
		t.Fatal(err)
	}
	// As PlaceHold does when its statement fails with the link lost.
	lost := fmt.Errorf("%w: read: connection reset by peer", store.ErrUnavailable)
	s.doubt("landed", lost)
	s.doubt("never-landed", lost)
	s.doubt("others", lost)
	s.doubt("kept", store.ErrInsufficient) // a plain refusal is no doubt
	for deadline := time.Now().Add(5 * time.Second); s.inDoubt() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d holds still in doubt", s.inDoubt())
		}
	}
	w, err := s.GetWallet(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if w.Held != money.Credits(3) || w.Balance != money.Credits(10) {
		t.Fatalf("wallet %+v: want 3 held (kept and others), balance untouched", w)
	}
	if err := s.Settle(t.Context(), store.Settlement{HoldID: "landed", Charge: 0, Row: &store.LogRow{AccountID: "a", RequestID: "landed"}}); err == nil {
		t.Fatal("the released hold could still be settled")
	}
	// The release is in the books: they prove the wallet and the two
	// holds still open.
	rep, err := audit.Run(t.Context(), s, audit.Options{})
	if err != nil || !rep.OK || rep.OpenHolds != 2 {
		t.Fatalf("the books after the release: %+v, %v", rep, err)
	}
	released := false
	for _, e := range bookEntries(t, s) {
		released = released || e.Kind == store.EntryRelease && e.HoldID == "landed" && e.Amount == money.Credits(1)
	}
	if !released {
		t.Fatal("no release entry for the hold")
	}
}

func bookEntries(t *testing.T, s *Store) []store.BookEntry {
	t.Helper()
	v, err := s.AuditView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var out []store.BookEntry
	for e, err := range v.Entries(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
