package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// RunDurable checks that data outlives Close and that ids are never
// reused. newBackend prepares empty storage for one test and returns a
// function that opens it; each call opens the same storage anew, after
// the previous store was closed.
func RunDurable(t *testing.T, newBackend func(t *testing.T) (reopen func(t *testing.T) store.Store)) {
	reopen := newBackend(t)
	ctx := t.Context()

	s := reopen(t)
	newAccount(t, s, "a", cr(100))
	k := key("a", "k1", 1)
	mustNil(t, "create key", s.CreateKey(ctx, k))
	open, settled := hold("a", "h-open", cr(5)), hold("a", "h-settled", cr(5))
	open.KeyID, settled.KeyID = k.ID, k.ID
	for _, h := range []store.Hold{open, settled} {
		_, err := s.PlaceHold(ctx, h)
		mustNil(t, "hold", err)
	}
	first := rowFor(settled, cr(2))
	mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: settled.ID, Charge: cr(2), Row: first}))
	_, err := s.Credit(ctx, "a", cr(1), "top-up")
	mustNil(t, "credit", err)
	mustNil(t, "put model", s.PutModel(ctx, store.Model{ID: "m", OwnedBy: "o"}))
	ledger, err := s.ListLedger(ctx, "a")
	mustNil(t, "ledger", err)
	idem := running("r1", t0)
	_, _, err = s.ClaimIdempotencyKey(ctx, "a", "idem", idem, t0)
	mustNil(t, "claim", err)
	idem.State, idem.Status, idem.Body, idem.ExpiresAt = store.IdemDone, 200, []byte(`{"ok":true}`), t0.Add(7*24*time.Hour)
	mustNil(t, "complete", s.CompleteIdempotencyKey(ctx, "a", "idem", idem))
	newKB(t, s, "kb", "a")
	putPages(t, s, "kb", store.Page{ID: "p1", Title: "One", Tags: []string{"t"}}, store.Page{ID: "p2", Links: []string{"one"}})
	kbVersion, err := s.PageVersion(ctx)
	mustNil(t, "page version", err)
	newAccount(t, s, "buyer", 0)
	mustNil(t, "create order", s.CreateOrder(ctx, topUp("buyer", "o-1", 1)))
	paid := getOrder(t, s, "o-1")
	paid.Status, paid.PaymentID = store.OrderPaid, "pi_1"
	mustNil(t, "pay order", s.UpdateOrder(ctx, &paid, paid.Credits, "top-up"))
	mustNil(t, "close", s.Close())

	lastRow, lastLedger := first.ID, ledger[len(ledger)-1].ID
	for round := range 2 {
		s = reopen(t)
		wantWallet(t, s, "a", cr(99), cr(5))
		got, err := s.KeyByHash(ctx, k.Hash)
		mustNil(t, "key by hash", err)
		same(t, "key", normKey(got), k)
		if n := keyUsage(t, s, k.ID); n != cr(2) {
			t.Fatalf("key usage %s after reopen, want 2", n)
		}
		holds, err := s.OpenHolds(ctx)
		mustNil(t, "open holds", err)
		if len(holds) != 1 || holds[0].ID != open.ID {
			t.Fatalf("open holds after reopen = %+v", holds)
		}
		row, err := s.GetLog(ctx, first.ID)
		mustNil(t, "get log", err)
		same(t, "row", normRow(row), *first)
		rec, won, err := s.ClaimIdempotencyKey(ctx, "a", "idem", running("r2", t0), t0.Add(time.Hour))
		mustNil(t, "claim after reopen", err)
		if won {
			t.Fatal("an idempotency record was lost on reopen")
		}
		same(t, "idempotency record", rec, idem)
		if ms, err := s.ListModels(ctx); err != nil || len(ms) != 1 {
			t.Fatalf("models after reopen = %+v, %v", ms, err)
		}
		if v, err := s.PageVersion(ctx); err != nil || v != kbVersion+uint64(round) {
			t.Fatalf("page version after reopen = %d, %v; want %d", v, err, kbVersion+uint64(round))
		}
		same(t, "backlinks after reopen", backlinks(t, s, "p1"), []string{"p2"})
		same(t, "order after reopen", getOrder(t, s, "o-1"), paid)
		if o, err := s.OrderByRef(ctx, "pi_1"); err != nil || o.ID != "o-1" {
			t.Fatalf("order by payment after reopen: %+v, %v", o, err)
		}
		wantWallet(t, s, "buyer", paid.Credits, 0)
		if l, err := s.ListLedger(ctx, "buyer"); err != nil || len(l) != 1 || l[0].OrderID != "o-1" {
			t.Fatalf("the buyer's ledger after reopen: %+v, %v", l, err)
		}
		putPages(t, s, "kb", store.Page{ID: "p3", Title: fmt.Sprint(round)}) // numbers go on after a reopen

		r := rowFor(hold("a", fmt.Sprint("after-reopen-", round), 0), 0) // a call of its own each round
		mustNil(t, "settle after reopen", s.Settle(ctx, store.Settlement{Row: r}))
		if r.ID <= lastRow {
			t.Fatalf("round %d: row id %d after reopen, want above %d", round, r.ID, lastRow)
		}
		lastRow = r.ID
		_, err = s.Credit(ctx, "a", 0, "no-op correction")
		mustNil(t, "credit", err)
		l, err := s.ListLedger(ctx, "a")
		mustNil(t, "ledger", err)
		if id := l[len(l)-1].ID; id <= lastLedger {
			t.Fatalf("round %d: ledger id %d after reopen, want above %d", round, id, lastLedger)
		}
		lastLedger = l[len(l)-1].ID
		mustNil(t, "close", s.Close())
	}

	// A spend cap after reopen sees the key's spend (2) and its open hold
	// (5), both from before.
	s = reopen(t)
	limit := cr(10)
	over, fits := capped(hold("a", "capped-over", cr(4)), k.ID, &limit), capped(hold("a", "capped-fits", cr(3)), k.ID, &limit)
	_, err = s.PlaceHold(ctx, over)
	mustIs(t, "4 of the 3 left of the cap after reopen", err, store.ErrSpendCap)
	_, err = s.PlaceHold(ctx, fits)
	mustNil(t, "the 3 left of the cap after reopen", err)
	mustNil(t, "close", s.Close())
}
