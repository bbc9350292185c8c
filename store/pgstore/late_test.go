package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// A call served while its instance is cut from the database for longer
// than its lease: another instance's sweep releases its hold (an
// interrupted row, nothing charged) and the available balance is spent
// meanwhile. When the link comes back the call's settlement still charges
// it, once, late, taking the balance below zero by that charge only; no
// other instance can charge it, a retry charges nothing more, and the
// books prove it all.
func TestSettlementAfterItsHoldWasSweptChargesLate(t *testing.T) {
	raw := testpg.Schema(t)
	srv := testpg.Start(t)
	proxy := testpg.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.Port))
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr
	const lease = 1200 * time.Millisecond
	cut := openURL(t, u.String(), Options{Lease: lease})
	sweeper := openURL(t, raw, Options{Lease: lease})
	account(t, cut, "a", money.Credits(10))
	if _, err := cut.PlaceHold(t.Context(), hold("a", "served", money.Credits(4))); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	released := sweepUntil(t, sweeper, "served", 5*lease)
	if !released {
		t.Fatal("the sweep never released the hold of the cut instance")
	}
	// The released credits are spent by a call on the other instance.
	if _, err := sweeper.PlaceHold(t.Context(), hold("a", "spender", money.Credits(10))); err != nil {
		t.Fatal(err)
	}
	if err := sweeper.Settle(t.Context(), settlement("a", "spender", money.Credits(9))); err != nil {
		t.Fatal(err)
	}
	// Another instance cannot charge the swept hold.
	if err := sweeper.Settle(t.Context(), settlement("a", "served", money.Credits(3))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another instance's late charge: %v, want ErrNotFound", err)
	}
	proxy.Mend()
	st := settlement("a", "served", money.Credits(3))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err = cut.Settle(t.Context(), st)
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the served call's settlement after the sweep: %v", err)
	}
	if st.Row.ID == 0 {
		t.Fatal("no row id")
	}
	if err := cut.Settle(t.Context(), settlement("a", "served", money.Credits(3))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second late charge: %v, want ErrNotFound", err)
	}
	w, err := sweeper.GetWallet(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if w.Balance != money.Credits(-2) || w.Held != 0 {
		t.Fatalf("wallet %+v: want balance -2 (10 - 9 - 3), nothing held", w)
	}
	var late int
	for _, e := range bookEntries(t, sweeper) {
		if e.Kind == store.EntryLate {
			late++
			if e.HoldID != "served" || e.Charge != money.Credits(3) || e.Amount != 0 || e.LogID != st.Row.ID || e.Owner != cut.instance {
				t.Errorf("late entry %+v", e)
			}
		}
	}
	if late != 1 {
		t.Fatalf("%d late entries, want 1", late)
	}
	rep, err := audit.Run(t.Context(), sweeper, audit.Options{})
	if err != nil || !rep.OK {
		t.Fatalf("the books after a late charge: %+v, %v", rep, err)
	}
	// A late charge of a hold no sweep released is named.
	(&tamperer{t: t, s: sweeper}).AddEntry(store.BookEntry{Kind: store.EntryLate, AccountID: "a", Charge: money.Credits(1),
		HoldID: "spender", Owner: sweeper.instance, At: time.Now()})
	rep, err = audit.Run(t.Context(), sweeper, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, v := range rep.Violations {
		named = named || v.Rule == audit.RuleSettlementHold && v.HoldID == "spender"
	}
	if !named {
		t.Fatalf("a late charge without a sweep's release was not named: %+v", rep.Violations)
	}
}

// sweepUntil runs s's sweep of lapsed leases, releasing as the gateway's
// recovery does (an interrupted row, nothing charged), until it released
// hold id or limit passed.
func sweepUntil(t *testing.T, s *Store, id string, limit time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		found := false
		_, err := s.SweepExpiredHolds(t.Context(), func(ctx context.Context, hs []store.Hold) error {
			for _, h := range hs {
				row := &store.LogRow{AccountID: h.AccountID, RequestID: h.ID, Status: store.StatusInterrupted, KeyID: h.KeyID, CreatedAt: time.Now()}
				if err := s.Settle(ctx, store.Settlement{HoldID: h.ID, Row: row}); err != nil {
					return err
				}
				found = found || h.ID == id
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if found {
			return true
		}
	}
	return false
}

func settlement(acct, id string, charge money.Nano) store.Settlement {
	return store.Settlement{HoldID: id, Charge: charge, Row: &store.LogRow{
		AccountID: acct, RequestID: id, KeyID: "k", Model: "m", Status: store.StatusSuccess, Cost: charge, CreatedAt: time.Now()}}
}

// The row of a call without a hold sent again (its first insert committed
// but the answer was lost with the link) is not written twice; a row of
// the same request at another time still is.
func TestHoldlessRowRetriedIsWrittenOnce(t *testing.T) {
	s := openURL(t, testpg.Schema(t), Options{})
	account(t, s, "a", money.Credits(1))
	at := time.Now()
	refused := func(at time.Time) store.Settlement {
		return store.Settlement{Row: &store.LogRow{AccountID: "a", RequestID: "req_refused", KeyID: "k", Model: "m",
			Status: store.StatusError, ErrorCode: "insufficient_quota", CreatedAt: at}}
	}
	first, again := refused(at), refused(at)
	for _, st := range []store.Settlement{first, again} {
		if err := s.Settle(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	if first.Row.ID == 0 || again.Row.ID != first.Row.ID {
		t.Fatalf("row ids %d and %d: want the retry to answer the first row's", first.Row.ID, again.Row.ID)
	}
	if err := s.Settle(t.Context(), refused(at.Add(time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	rows, err := s.QueryLogs(t.Context(), store.LogQuery{AccountID: "a", Ref: "req_refused", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (the retried one once, the later one)", len(rows))
	}
}
