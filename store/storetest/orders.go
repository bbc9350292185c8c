package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// RunOrders is the suite of the Orders role: card top-ups, whose changes
// move money in the same step, once.
func RunOrders(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("orders", func(t *testing.T) { t.Parallel(); testOrders(t, open(t)) })
	t.Run("order updates move money", func(t *testing.T) { t.Parallel(); testOrderUpdates(t, open(t)) })
	t.Run("concurrent order updates", func(t *testing.T) { t.Parallel(); testConcurrentOrderUpdates(t, open(t)) })
}

func topUp(account, id string, n int) store.Order {
	at := t0.Add(time.Duration(n) * time.Minute)
	return store.Order{
		ID: id, AccountID: account, UserID: "u-" + account, Credits: money.MustParse("404.4"),
		Amount: 40440, Currency: "usd", Processor: "stripe", Status: store.OrderPending,
		SessionID: "cs_" + id, PaymentURL: "https://pay.example/" + id, CreatedAt: at, UpdatedAt: at,
	}
}

func normOrder(o store.Order) store.Order {
	o.CreatedAt, o.UpdatedAt = o.CreatedAt.UTC(), o.UpdatedAt.UTC()
	if o.PaidAt != nil {
		p := o.PaidAt.UTC()
		o.PaidAt = &p
	}
	return o
}

func orderIDs(os []store.Order) []string {
	ids := []string{}
	for _, o := range os {
		ids = append(ids, o.ID)
	}
	return ids
}

func getOrder(t *testing.T, s store.Store, id string) store.Order {
	t.Helper()
	o, err := s.GetOrder(t.Context(), id)
	mustNil(t, "get order "+id, err)
	return normOrder(o)
}

func testOrders(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	newAccount(t, s, "b", 0)
	orders := []store.Order{topUp("a", "o-1", 1), topUp("b", "o-2", 2), topUp("a", "o-3", 3)}
	for _, o := range orders {
		mustNil(t, "create "+o.ID, s.CreateOrder(ctx, o))
	}
	for _, o := range orders {
		o.Version = 1
		same(t, "order "+o.ID, getOrder(t, s, o.ID), o)
		got, err := s.OrderByRef(ctx, o.SessionID)
		mustNil(t, "by session "+o.SessionID, err)
		same(t, "order by session "+o.SessionID, normOrder(got), o)
	}
	mustIs(t, "taken id", s.CreateOrder(ctx, topUp("b", "o-1", 9)), store.ErrExists)
	mustIs(t, "unknown account", s.CreateOrder(ctx, topUp("nope", "o-9", 9)), store.ErrNotFound)
	for _, id := range []string{"nope", ""} {
		_, err := s.GetOrder(ctx, id)
		mustIs(t, "get unknown "+id, err, store.ErrNotFound)
		_, err = s.OrderByRef(ctx, id)
		mustIs(t, "ref unknown "+id, err, store.ErrNotFound)
	}

	// The payment's id, once known, finds the order too.
	o := getOrder(t, s, "o-3")
	o.PaymentID = "pi_3"
	mustNil(t, "set payment", s.UpdateOrder(ctx, &o, 0, ""))
	got, err := s.OrderByRef(ctx, "pi_3")
	mustNil(t, "by payment", err)
	same(t, "order by payment", normOrder(got), o)
	if o.Version != 2 {
		t.Fatalf("version after one update = %d, want 2", o.Version)
	}

	list := func(q store.OrderQuery) []string {
		t.Helper()
		os, err := s.ListOrders(ctx, q)
		mustNil(t, "list", err)
		return orderIDs(os)
	}
	same(t, "every order, newest first", list(store.OrderQuery{}), []string{"o-3", "o-2", "o-1"})
	same(t, "a's orders", list(store.OrderQuery{AccountID: "a"}), []string{"o-3", "o-1"})
	same(t, "unknown account's", list(store.OrderQuery{AccountID: "nope"}), []string{})
	same(t, "limit", list(store.OrderQuery{Limit: 2}), []string{"o-3", "o-2"})
	same(t, "since", list(store.OrderQuery{Since: t0.Add(2 * time.Minute)}), []string{"o-3", "o-2"})

	paid := getOrder(t, s, "o-1")
	paid.Status = store.OrderPaid
	mustNil(t, "pay o-1", s.UpdateOrder(ctx, &paid, paid.Credits, "top-up"))
	same(t, "paid ones", list(store.OrderQuery{Statuses: []string{store.OrderPaid}}), []string{"o-1"})
	same(t, "a's pending ones", list(store.OrderQuery{AccountID: "a", Statuses: []string{store.OrderPending}}), []string{"o-3"})

	bad := topUp("a", "o-bad", 4)
	bad.Status = "lost"
	if err := s.CreateOrder(ctx, bad); err == nil {
		t.Fatal("an order with an unknown status was stored")
	}
}

func testOrderUpdates(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(10))
	mustNil(t, "create", s.CreateOrder(ctx, topUp("a", "o-1", 1)))
	o := getOrder(t, s, "o-1")
	stale := o

	// Paid: the credit and the order in one step; the ledger entry names
	// the order.
	o.Status, o.PaymentID = store.OrderPaid, "pi_1"
	paidAt := t0.Add(time.Hour)
	o.PaidAt = &paidAt
	mustNil(t, "pay", s.UpdateOrder(ctx, &o, o.Credits, "card top-up o-1"))
	wantWallet(t, s, "a", cr(10)+o.Credits, 0)
	same(t, "the paid order", getOrder(t, s, "o-1"), o)
	led, err := s.ListLedger(ctx, "a")
	mustNil(t, "ledger", err)
	last := led[len(led)-1]
	if last.Amount != o.Credits || last.OrderID != "o-1" || last.Note != "card top-up o-1" {
		t.Fatalf("the top-up's ledger entry is %+v", last)
	}

	// The same event again, from the version read before: nothing.
	stale.Status = store.OrderPaid
	mustIs(t, "a stale update", s.UpdateOrder(ctx, &stale, stale.Credits, "again"), store.ErrChanged)
	wantWallet(t, s, "a", cr(10)+o.Credits, 0)
	same(t, "the order after a stale update", getOrder(t, s, "o-1"), o)
	if led2, _ := s.ListLedger(ctx, "a"); len(led2) != len(led) {
		t.Fatalf("a refused update wrote a ledger entry: %+v", led2)
	}

	// Refunded in full: the credits go back, below zero when they were
	// spent (a spend settled meanwhile).
	h := hold("a", "spend", o.Credits)
	_, err = s.PlaceHold(ctx, h)
	mustNil(t, "hold", err)
	mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: o.Credits, Row: rowFor(h, o.Credits)}))
	o.Status, o.Refunded, o.Debited = store.OrderRefunded, o.Amount, o.Credits
	mustNil(t, "refund", s.UpdateOrder(ctx, &o, -o.Credits, "refund of o-1"))
	wantWallet(t, s, "a", cr(10)-o.Credits, 0)
	same(t, "the refunded order", getOrder(t, s, "o-1"), o)
	led, _ = s.ListLedger(ctx, "a")
	if last := led[len(led)-1]; last.Amount != -o.Credits || last.OrderID != "o-1" {
		t.Fatalf("the refund's ledger entry is %+v", last)
	}
	if o.Version != 3 {
		t.Fatalf("version = %d after two updates, want 3", o.Version)
	}

	// Refused moves change nothing.
	unknown := topUp("a", "o-none", 2)
	unknown.Version = 1
	mustIs(t, "unknown order", s.UpdateOrder(ctx, &unknown, cr(1), ""), store.ErrNotFound)
	newAccount(t, s, "c", cr(10))
	mustNil(t, "create o-2", s.CreateOrder(ctx, topUp("c", "o-2", 2)))
	big := getOrder(t, s, "o-2")
	big.Status = store.OrderPaid
	mustIs(t, "out of range", s.UpdateOrder(ctx, &big, money.Max, "too much"), store.ErrOutOfRange)
	if got := getOrder(t, s, "o-2"); got.Status != store.OrderPending || got.Version != 1 {
		t.Fatalf("an order refused for its credit changed: %+v", got)
	}
	wantWallet(t, s, "c", cr(10), 0)
	wantWallet(t, s, "a", cr(10)-o.Credits, 0)
	other := getOrder(t, s, "o-2")
	other.AccountID = "b"
	if err := s.UpdateOrder(ctx, &other, cr(1), ""); err == nil {
		t.Fatal("an order was moved to another account")
	}
}

// Many writers change one order from the version they read: one wins, its
// credit is made once, the others are told the order changed.
func testConcurrentOrderUpdates(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	mustNil(t, "create", s.CreateOrder(ctx, topUp("a", "o-1", 1)))
	read := getOrder(t, s, "o-1")
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, changed := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := read
			o.Status = store.OrderPaid
			err := s.UpdateOrder(ctx, &o, o.Credits, fmt.Sprint("writer ", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrChanged):
				changed++
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || changed != n-1 {
		t.Fatalf("%d writers won and %d were told the order changed, want 1 and %d", won, changed, n-1)
	}
	wantWallet(t, s, "a", read.Credits, 0)
	if got := getOrder(t, s, "o-1"); got.Status != store.OrderPaid || got.Version != 2 {
		t.Fatalf("the order after the race: %+v", got)
	}
	led, err := s.ListLedger(ctx, "a")
	mustNil(t, "ledger", err)
	if len(led) != 1 {
		t.Fatalf("%d ledger entries after the race, want 1: %+v", len(led), led)
	}
}
