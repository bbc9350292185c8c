// Package storetest is the conformance suite every store.Store backend
// passes. A backend's test calls Run (and RunDurable when its data
// outlives a process) from its own _test.go file.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Run runs the conformance suite of every role, then what concerns the
// store as a whole. open returns a new, empty store for one subtest and
// arranges its Close at cleanup (ignoring store.ErrClosed, since some
// subtests close it themselves). A backend written role by role may run
// the role suites one at a time.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	// The money roles' tests end with an audit of the books they made.
	withAudit := audited(open)
	t.Run("accounts", func(t *testing.T) { RunAccounts(t, withAudit) })
	t.Run("wallets", func(t *testing.T) { RunWallets(t, withAudit) })
	t.Run("keys", func(t *testing.T) { RunKeys(t, open) })
	t.Run("logs", func(t *testing.T) { RunLogs(t, open) })
	t.Run("idempotency", func(t *testing.T) { RunIdempotency(t, open) })
	t.Run("models", func(t *testing.T) { RunModels(t, open) })
	t.Run("tasks", func(t *testing.T) { RunTasks(t, withAudit) })
	t.Run("knowledge bases", func(t *testing.T) { RunKnowledgeBases(t, open) })
	t.Run("agents", func(t *testing.T) { RunAgents(t, withAudit) })
	t.Run("users", func(t *testing.T) { RunUsers(t, open) })
	t.Run("sessions", func(t *testing.T) { RunSessions(t, open) })
	t.Run("orders", func(t *testing.T) { RunOrders(t, withAudit) })
	t.Run("cancelled context", func(t *testing.T) { t.Parallel(); testCancelled(t, open(t)) })
	t.Run("closed", func(t *testing.T) { t.Parallel(); testClosed(t, open(t)) })
}

// RunAccounts is the suite of the Accounts role.
func RunAccounts(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("accounts", func(t *testing.T) { t.Parallel(); testAccounts(t, open(t)) })
}

// RunWallets is the suite of the Wallets role: credits, holds, settlements.
func RunWallets(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("credit", func(t *testing.T) { t.Parallel(); testCredit(t, open(t)) })
	t.Run("place hold", func(t *testing.T) { t.Parallel(); testPlaceHold(t, open(t)) })
	t.Run("settle", func(t *testing.T) { t.Parallel(); testSettle(t, open(t)) })
	t.Run("settle refusals", func(t *testing.T) { t.Parallel(); testSettleRefusals(t, open(t)) })
	t.Run("money range", func(t *testing.T) { t.Parallel(); testMoneyRange(t, open(t)) })
	t.Run("open holds", func(t *testing.T) { t.Parallel(); testOpenHolds(t, open(t)) })
	t.Run("double settle", func(t *testing.T) { t.Parallel(); testDoubleSettle(t, open(t)) })
	t.Run("concurrent holds", func(t *testing.T) { t.Parallel(); testConcurrentHolds(t, open(t)) })
	t.Run("concurrent settles", func(t *testing.T) { t.Parallel(); testConcurrentSettles(t, open(t)) })
}

// RunKeys is the suite of the Keys role.
func RunKeys(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("keys", func(t *testing.T) { t.Parallel(); testKeys(t, open(t)) })
	t.Run("update key", func(t *testing.T) { t.Parallel(); testUpdateKey(t, open(t)) })
	t.Run("delete key", func(t *testing.T) { t.Parallel(); testDeleteKey(t, open(t)) })
	t.Run("touch key", func(t *testing.T) { t.Parallel(); testTouchKey(t, open(t)) })
}

// RunLogs is the suite of the Logs role.
func RunLogs(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("get log", func(t *testing.T) { t.Parallel(); testGetLog(t, open(t)) })
	t.Run("query logs", func(t *testing.T) { t.Parallel(); testQueryLogs(t, open(t)) })
	t.Run("scan logs", func(t *testing.T) { t.Parallel(); testScanLogs(t, open(t)) })
}

// RunIdempotency is the suite of the Idempotency role.
func RunIdempotency(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("idempotency", func(t *testing.T) { t.Parallel(); testIdempotency(t, open(t)) })
	t.Run("concurrent idempotency claims", func(t *testing.T) { t.Parallel(); testIdempotencyRace(t, open(t)) })
}

// RunModels is the suite of the Models role.
func RunModels(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("models", func(t *testing.T) { t.Parallel(); testModels(t, open(t)) })
}

// t0 is the suite's clock origin; every time is UTC and whole or
// nanosecond-exact so backends can be compared field by field.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func cr(n int64) money.Nano { return money.Credits(n) }

func mustNil(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func newAccount(t *testing.T, s store.Store, id string, credit money.Nano) {
	t.Helper()
	a := store.Account{ID: id, Name: "name " + id, Status: store.AccountActive, CreatedAt: t0}
	mustNil(t, "create account "+id, s.CreateAccount(t.Context(), a, credit, "sign-up"))
}

func wallet(t *testing.T, s store.Store, id string) store.Wallet {
	t.Helper()
	w, err := s.GetWallet(t.Context(), id)
	mustNil(t, "wallet "+id, err)
	return w
}

func wantWallet(t *testing.T, s store.Store, id string, balance, held money.Nano) {
	t.Helper()
	same(t, "wallet "+id, wallet(t, s, id), store.Wallet{AccountID: id, Balance: balance, Held: held})
}

func hold(account, id string, amount money.Nano) store.Hold {
	return store.Hold{
		ID: id, AccountID: account, KeyID: "key-" + account, KeyName: "main", KeyPrefix: "tg-abc",
		Model: "model-x", Amount: amount, SubmittedAt: t0,
	}
}

// rowFor is the row a settlement of h writes.
func rowFor(h store.Hold, cost money.Nano) *store.LogRow {
	return &store.LogRow{
		AccountID: h.AccountID, CreatedAt: t0.Add(time.Second), SubmittedAt: h.SubmittedAt,
		KeyID: h.KeyID, KeyName: h.KeyName, KeyPrefix: h.KeyPrefix, Model: h.Model,
		Status: store.StatusSuccess, InputTokens: 10, OutputTokens: 20, Cost: cost,
		LatencyMS: 1000, RequestID: h.ID,
	}
}

func keyUsage(t *testing.T, s store.Store, id string) money.Nano {
	t.Helper()
	n, err := s.KeyUsage(t.Context(), id)
	mustNil(t, "key usage", err)
	return n
}

func accountRows(t *testing.T, s store.Store, account string) []store.LogRow {
	t.Helper()
	rows, err := s.QueryLogs(t.Context(), store.LogQuery{AccountID: account})
	mustNil(t, "query logs", err)
	return rows
}

// normRow puts a row's times in UTC, as backends return them.
func normRow(r store.LogRow) store.LogRow {
	r.CreatedAt, r.SubmittedAt = r.CreatedAt.UTC(), r.SubmittedAt.UTC()
	if r.ResultExpiresAt != nil {
		t := r.ResultExpiresAt.UTC()
		r.ResultExpiresAt = &t
	}
	if r.Attempts != nil {
		as := make([]store.Attempt, len(r.Attempts))
		for i, a := range r.Attempts {
			a.CreatedAt = a.CreatedAt.UTC()
			as[i] = a
		}
		r.Attempts = as
	}
	return r
}

func normKey(k store.Key) store.Key {
	k.CreatedAt = k.CreatedAt.UTC()
	for _, p := range []**time.Time{&k.ExpiresAt, &k.LastUsedAt} {
		if *p != nil {
			t := (*p).UTC()
			*p = &t
		}
	}
	return k
}

func testAccounts(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := store.Account{ID: "acct-1", Name: "Ada", Status: store.AccountActive, CreatedAt: t0, RPM: 60, Concurrency: 4}
	mustNil(t, "create", s.CreateAccount(ctx, a, cr(121), "sign-up credit"))
	got, err := s.GetAccount(ctx, a.ID)
	mustNil(t, "get", err)
	got.CreatedAt = got.CreatedAt.UTC()
	same(t, "account", got, a)
	wantWallet(t, s, a.ID, cr(121), 0)

	dup := a
	dup.Name = "Other"
	mustIs(t, "duplicate create", s.CreateAccount(ctx, dup, cr(5), "again"), store.ErrExists)
	wantWallet(t, s, a.ID, cr(121), 0)
	if got, _ := s.GetAccount(ctx, a.ID); got.Name != "Ada" {
		t.Fatalf("duplicate create changed the account: %+v", got)
	}

	led, err := s.ListLedger(ctx, a.ID)
	mustNil(t, "ledger", err)
	if len(led) != 1 || led[0].Amount != cr(121) || led[0].Note != "sign-up credit" || led[0].AccountID != a.ID ||
		led[0].ID == 0 || led[0].CreatedAt.IsZero() {
		t.Fatalf("ledger = %+v, want one sign-up entry of 121", led)
	}

	mustNil(t, "create without credit", s.CreateAccount(ctx, store.Account{ID: "acct-0", Status: store.AccountActive, CreatedAt: t0}, 0, ""))
	wantWallet(t, s, "acct-0", 0, 0)
	if led, err := s.ListLedger(ctx, "acct-0"); err != nil || len(led) != 0 {
		t.Fatalf("ledger of an account opened with 0 = %+v, %v; want none", led, err)
	}
	// An id that extends another must not see its records.
	mustNil(t, "create prefix sibling", s.CreateAccount(ctx, store.Account{ID: "acct-10", CreatedAt: t0}, cr(1), "x"))
	if led, _ := s.ListLedger(ctx, "acct-1"); len(led) != 1 {
		t.Fatalf("ledger of acct-1 = %+v, want its one entry only", led)
	}

	all, err := s.ListAccounts(ctx)
	mustNil(t, "list", err)
	ids := map[string]bool{}
	for _, a := range all {
		ids[a.ID] = true
	}
	if len(all) != 3 || !ids["acct-0"] || !ids["acct-1"] || !ids["acct-10"] {
		t.Fatalf("list = %+v, want acct-0, acct-1, acct-10", all)
	}

	a.Name, a.Status, a.RPM = "Ada L.", store.AccountDisabled, 0
	mustNil(t, "update", s.UpdateAccount(ctx, a))
	got, err = s.GetAccount(ctx, a.ID)
	mustNil(t, "get after update", err)
	got.CreatedAt = got.CreatedAt.UTC()
	same(t, "updated account", got, a)
	wantWallet(t, s, a.ID, cr(121), 0)

	tests := []struct {
		desc string
		err  error
	}{
		{"get unknown", func() error { _, err := s.GetAccount(ctx, "nope"); return err }()},
		{"wallet unknown", func() error { _, err := s.GetWallet(ctx, "nope"); return err }()},
		{"update unknown", s.UpdateAccount(ctx, store.Account{ID: "nope", CreatedAt: t0})},
		{"credit unknown", func() error { _, err := s.Credit(ctx, "nope", cr(1), ""); return err }()},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) { mustIs(t, tc.desc, tc.err, store.ErrNotFound) })
	}
	if _, err := s.GetAccount(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("update of an unknown account created it")
	}
}

func testCredit(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	steps := []struct {
		desc    string
		amount  money.Nano
		balance money.Nano
	}{
		{"top-up", cr(5), cr(105)},
		{"fractional", money.MustParse("0.000000001"), money.MustParse("105.000000001")},
		{"correction below zero", cr(-200), money.MustParse("-94.999999999")},
	}
	for _, st := range steps {
		t.Run(st.desc, func(t *testing.T) {
			w, err := s.Credit(ctx, "a", st.amount, st.desc)
			mustNil(t, "credit", err)
			same(t, "returned wallet", w, store.Wallet{AccountID: "a", Balance: st.balance})
			wantWallet(t, s, "a", st.balance, 0)
		})
	}
	led, err := s.ListLedger(ctx, "a")
	mustNil(t, "ledger", err)
	if len(led) != 4 {
		t.Fatalf("ledger has %d entries, want 4", len(led))
	}
	for i, st := range steps {
		e := led[i+1]
		if e.Amount != st.amount || e.Note != st.desc || e.ID <= led[i].ID {
			t.Fatalf("entry %d = %+v, want %s %q after id %d", i+1, e, st.amount, st.desc, led[i].ID)
		}
	}
}

func testPlaceHold(t *testing.T, s store.Store) {
	ctx := t.Context()
	tests := []struct {
		desc    string
		balance money.Nano
		before  money.Nano // an earlier hold, 0 for none
		amount  money.Nano
		err     error
	}{
		{desc: "within available", balance: cr(10), amount: cr(4)},
		{desc: "exactly available", balance: cr(10), amount: cr(10)},
		{desc: "exactly what other holds leave", balance: cr(10), before: cr(6), amount: cr(4)},
		{desc: "one nano over", balance: cr(10), amount: cr(10) + 1, err: store.ErrInsufficient},
		{desc: "over what other holds leave", balance: cr(10), before: cr(6), amount: cr(5), err: store.ErrInsufficient},
		{desc: "zero balance refuses any positive hold", balance: 0, amount: 1, err: store.ErrInsufficient},
		{desc: "negative balance refuses", balance: cr(-3), amount: 1, err: store.ErrInsufficient},
		{desc: "zero hold on zero balance", balance: 0, amount: 0},
	}
	for i, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			acct := fmt.Sprintf("acct-%d", i)
			newAccount(t, s, acct, 0)
			if tc.balance != 0 {
				_, err := s.Credit(ctx, acct, tc.balance, "setup")
				mustNil(t, "credit", err)
			}
			if tc.before != 0 {
				_, err := s.PlaceHold(ctx, hold(acct, acct+"-before", tc.before))
				mustNil(t, "earlier hold", err)
			}
			w, err := s.PlaceHold(ctx, hold(acct, acct+"-h", tc.amount))
			if tc.err != nil {
				mustIs(t, "place hold", err, tc.err)
				wantWallet(t, s, acct, tc.balance, tc.before)
				return
			}
			mustNil(t, "place hold", err)
			want := store.Wallet{AccountID: acct, Balance: tc.balance, Held: tc.before + tc.amount}
			same(t, "returned wallet", w, want)
			wantWallet(t, s, acct, want.Balance, want.Held)
		})
	}

	t.Run("unknown account", func(t *testing.T) {
		_, err := s.PlaceHold(ctx, hold("nope", "h-nope", 1))
		mustIs(t, "hold", err, store.ErrNotFound)
	})
	t.Run("duplicate hold id", func(t *testing.T) {
		newAccount(t, s, "dup", cr(10))
		_, err := s.PlaceHold(ctx, hold("dup", "h-dup", cr(1)))
		mustNil(t, "first hold", err)
		_, err = s.PlaceHold(ctx, hold("dup", "h-dup", cr(2)))
		mustIs(t, "second hold", err, store.ErrExists)
		wantWallet(t, s, "dup", cr(10), cr(1))
	})
}

func testSettle(t *testing.T, s store.Store) {
	ctx := t.Context()
	tests := []struct {
		desc            string
		balance, amount money.Nano
		charge          money.Nano
		wantBalance     money.Nano
	}{
		{"charge below the hold", cr(100), cr(30), cr(12), cr(88)},
		{"charge above the hold", cr(100), cr(30), cr(45), cr(55)},
		{"charge beyond the balance goes negative", cr(10), cr(10), cr(25), cr(-15)},
		{"zero charge releases the hold", cr(100), cr(30), 0, cr(100)},
		{"nano precision", cr(1), money.MustParse("0.5"), money.MustParse("0.123456789"), money.MustParse("0.876543211")},
	}
	for i, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			acct := fmt.Sprintf("acct-%d", i)
			newAccount(t, s, acct, tc.balance)
			// A second hold stays open, so Held must drop by exactly this one.
			_, err := s.PlaceHold(ctx, hold(acct, acct+"-other", 0))
			mustNil(t, "other hold", err)
			h := hold(acct, acct+"-h", tc.amount)
			_, err = s.PlaceHold(ctx, h)
			mustNil(t, "hold", err)
			before := keyUsage(t, s, h.KeyID)
			row := rowFor(h, tc.charge)
			mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: tc.charge, Row: row}))
			if row.ID == 0 {
				t.Fatal("settle did not assign the row id")
			}
			wantWallet(t, s, acct, tc.wantBalance, 0)
			if got := keyUsage(t, s, h.KeyID); got != before+tc.charge {
				t.Fatalf("key usage = %s, want %s", got, before+tc.charge)
			}
			got, err := s.GetLog(ctx, row.ID)
			mustNil(t, "get log", err)
			same(t, "row", normRow(got), *row)
			mustIs(t, "settle again", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: tc.charge, Row: rowFor(h, tc.charge)}), store.ErrNotFound)
			wantWallet(t, s, acct, tc.wantBalance, 0)
		})
	}

	t.Run("without a hold", func(t *testing.T) {
		newAccount(t, s, "nohold", cr(5))
		row := rowFor(hold("nohold", "rejected-1", 0), 0)
		row.Status, row.ErrorCode = store.StatusRejected, "invalid_request"
		mustNil(t, "settle", s.Settle(ctx, store.Settlement{Row: row}))
		got, err := s.GetLog(ctx, row.ID)
		mustNil(t, "get log", err)
		same(t, "row", normRow(got), *row)
		wantWallet(t, s, "nohold", cr(5), 0)
	})
	t.Run("usage adds up over settlements", func(t *testing.T) {
		newAccount(t, s, "sum", cr(100))
		for i, c := range []money.Nano{cr(1), cr(2), money.MustParse("0.25")} {
			h := hold("sum", fmt.Sprintf("sum-%d", i), cr(3))
			_, err := s.PlaceHold(ctx, h)
			mustNil(t, "hold", err)
			mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: c, Row: rowFor(h, c)}))
		}
		if got := keyUsage(t, s, "key-sum"); got != money.MustParse("3.25") {
			t.Fatalf("key usage = %s, want 3.25", got)
		}
		wantWallet(t, s, "sum", money.MustParse("96.75"), 0)
	})
}

func testSettleRefusals(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(50))
	h := hold("a", "h-open", cr(20))
	_, err := s.PlaceHold(ctx, h)
	mustNil(t, "hold", err)

	tests := []struct {
		desc string
		st   store.Settlement
		err  error // nil: any error
	}{
		{"unknown hold", store.Settlement{HoldID: "h-unknown", Charge: cr(5), Row: rowFor(hold("a", "h-unknown", 0), cr(5))}, store.ErrNotFound},
		{"charge without a hold", store.Settlement{Charge: cr(1), Row: rowFor(hold("a", "r-1", 0), cr(1))}, nil},
		{"no row", store.Settlement{HoldID: h.ID, Charge: cr(1)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := s.Settle(ctx, tc.st)
			if err == nil {
				t.Fatal("settle succeeded")
			}
			if tc.err != nil {
				mustIs(t, "settle", err, tc.err)
			}
			if tc.st.Row != nil && tc.st.Row.ID != 0 {
				t.Fatalf("refused settlement assigned row id %d", tc.st.Row.ID)
			}
			wantWallet(t, s, "a", cr(50), cr(20))
			if rows := accountRows(t, s, "a"); len(rows) != 0 {
				t.Fatalf("refused settlement wrote rows: %+v", rows)
			}
			if got := keyUsage(t, s, h.KeyID); got != 0 {
				t.Fatalf("refused settlement charged the key %s", got)
			}
			holds, err := s.OpenHolds(ctx)
			mustNil(t, "open holds", err)
			if len(holds) != 1 || holds[0].ID != h.ID {
				t.Fatalf("open holds = %+v, want %s only", holds, h.ID)
			}
		})
	}
}

// testMoneyRange: no move takes a balance, a held sum or an available
// balance out of money's range; a refused move is ErrOutOfRange and
// changes nothing (issue 10: crediting a near-maximal amount twice, or a
// settlement on a balance near the floor, wrapped around).
func testMoneyRange(t *testing.T, s store.Store) {
	ctx := t.Context()
	half := money.Max/2 + 1
	t.Run("opening credit out of range", func(t *testing.T) {
		err := s.CreateAccount(ctx, store.Account{ID: "min", Name: "n", Status: store.AccountActive, CreatedAt: t0}, money.Nano(-1<<63), "x")
		mustIs(t, "create", err, store.ErrOutOfRange)
		_, err = s.GetAccount(ctx, "min")
		mustIs(t, "get", err, store.ErrNotFound)
	})
	t.Run("credit past the maximum", func(t *testing.T) {
		newAccount(t, s, "top", half)
		_, err := s.Credit(ctx, "top", half, "twice")
		mustIs(t, "second credit", err, store.ErrOutOfRange)
		wantWallet(t, s, "top", half, 0)
		_, err = s.Credit(ctx, "top", money.Max-half, "to the top")
		mustNil(t, "credit to exactly the maximum", err)
		wantWallet(t, s, "top", money.Max, 0)
		_, err = s.Credit(ctx, "top", 1, "one more")
		mustIs(t, "one nano more", err, store.ErrOutOfRange)
		led, err := s.ListLedger(ctx, "top")
		mustNil(t, "ledger", err)
		if len(led) != 2 {
			t.Fatalf("refused credits wrote ledger entries: %+v", led)
		}
	})
	t.Run("correction past the minimum", func(t *testing.T) {
		newAccount(t, s, "bottom", 0)
		_, err := s.Credit(ctx, "bottom", money.Min, "down")
		mustNil(t, "credit to exactly the minimum", err)
		_, err = s.Credit(ctx, "bottom", -1, "one below")
		mustIs(t, "one nano below", err, store.ErrOutOfRange)
		wantWallet(t, s, "bottom", money.Min, 0)
	})
	t.Run("available out of range", func(t *testing.T) {
		// Held above the balance, then a deep correction: the balance
		// alone would fit, but balance minus held would not.
		newAccount(t, s, "avail", cr(10))
		_, err := s.PlaceHold(ctx, hold("avail", "avail-h", cr(10)))
		mustNil(t, "hold", err)
		_, err = s.Credit(ctx, "avail", cr(-5), "correction")
		mustNil(t, "correction", err)
		_, err = s.Credit(ctx, "avail", money.Min+cr(3), "deep correction")
		mustIs(t, "deep correction", err, store.ErrOutOfRange)
		wantWallet(t, s, "avail", cr(5), cr(10))
	})
	t.Run("settlement past the minimum", func(t *testing.T) {
		newAccount(t, s, "debt", cr(10))
		h := hold("debt", "debt-h", cr(10))
		_, err := s.PlaceHold(ctx, h)
		mustNil(t, "hold", err)
		_, err = s.Credit(ctx, "debt", money.Min+cr(100), "deep correction")
		mustNil(t, "correction", err)
		bal := money.Min + cr(110)
		wantWallet(t, s, "debt", bal, cr(10))
		row := rowFor(h, cr(200))
		err = s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(200), Row: row})
		mustIs(t, "settle", err, store.ErrOutOfRange)
		if row.ID != 0 {
			t.Fatalf("a refused settlement assigned row id %d", row.ID)
		}
		wantWallet(t, s, "debt", bal, cr(10))
		if rows := accountRows(t, s, "debt"); len(rows) != 0 {
			t.Fatalf("a refused settlement wrote rows: %+v", rows)
		}
		if got := keyUsage(t, s, h.KeyID); got != 0 {
			t.Fatalf("a refused settlement charged the key %s", got)
		}
		// The hold is still open: a settlement the books can take closes it.
		mustNil(t, "settle within range", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(110), Row: rowFor(h, cr(110))}))
		wantWallet(t, s, "debt", money.Min, 0)
	})
}

func testOpenHolds(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(50))
	newAccount(t, s, "b", cr(50))
	ha, hb, hc := hold("a", "h-a", cr(1)), hold("b", "h-b", cr(2)), hold("a", "h-c", cr(3))
	hb.UnitType, hb.SubmittedAt = "image", t0.Add(1500*time.Millisecond)
	for _, h := range []store.Hold{ha, hb, hc} {
		_, err := s.PlaceHold(ctx, h)
		mustNil(t, "hold", err)
	}
	mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: hc.ID, Charge: cr(1), Row: rowFor(hc, cr(1))}))
	holds, err := s.OpenHolds(ctx)
	mustNil(t, "open holds", err)
	got := map[string]store.Hold{}
	for _, h := range holds {
		h.SubmittedAt = h.SubmittedAt.UTC()
		got[h.ID] = h
	}
	same(t, "open holds", got, map[string]store.Hold{ha.ID: ha, hb.ID: hb})
}

const workers = 64

// run starts n goroutines on fn and waits for them.
func run(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	done := make(chan struct{})
	start := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	for range n {
		<-done
	}
	return errs
}

func testDoubleSettle(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	h := hold("a", "h-once", cr(10))
	_, err := s.PlaceHold(ctx, h)
	mustNil(t, "hold", err)
	errs := run(workers, func(int) error {
		return s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(7), Row: rowFor(h, cr(7))})
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("settle: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d settlements of one hold succeeded, want 1", ok)
	}
	wantWallet(t, s, "a", cr(93), 0)
	if n := len(accountRows(t, s, "a")); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	if got := keyUsage(t, s, h.KeyID); got != cr(7) {
		t.Fatalf("key usage %s, want 7", got)
	}
}

func testConcurrentHolds(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(10))
	errs := run(workers, func(i int) error {
		_, err := s.PlaceHold(ctx, hold("a", fmt.Sprintf("h-%d", i), cr(1)))
		return err
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrInsufficient):
			t.Fatalf("place hold: %v", err)
		}
	}
	if ok != 10 {
		t.Fatalf("%d holds of 1 fit in a balance of 10, want 10", ok)
	}
	wantWallet(t, s, "a", cr(10), cr(10))
	holds, err := s.OpenHolds(ctx)
	mustNil(t, "open holds", err)
	if len(holds) != 10 {
		t.Fatalf("%d open holds, want 10", len(holds))
	}
}

func testConcurrentSettles(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(1000))
	newAccount(t, s, "b", cr(1000))
	acct := func(i int) string { return string(rune('a' + i%2)) }
	for i := range workers {
		_, err := s.PlaceHold(ctx, hold(acct(i), fmt.Sprintf("h-%d", i), cr(10)))
		mustNil(t, "hold", err)
	}
	rows := make([]*store.LogRow, workers)
	errs := run(workers, func(i int) error {
		h := hold(acct(i), fmt.Sprintf("h-%d", i), cr(10))
		rows[i] = rowFor(h, cr(int64(i%5)))
		if i%8 == 7 {
			// A refusal in the same burst must not fail the others.
			if err := s.Settle(ctx, store.Settlement{HoldID: "missing", Row: rowFor(hold(acct(i), "missing", 0), 0)}); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("settle of a missing hold: %v", err)
			}
		}
		return s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(int64(i % 5)), Row: rows[i]})
	})
	var want [2]money.Nano
	ids := map[uint64]bool{}
	for i, err := range errs {
		mustNil(t, "settle", err)
		want[i%2] += cr(int64(i % 5))
		if rows[i].ID == 0 || ids[rows[i].ID] {
			t.Fatalf("row id %d is zero or repeated", rows[i].ID)
		}
		ids[rows[i].ID] = true
	}
	wantWallet(t, s, "a", cr(1000)-want[0], 0)
	wantWallet(t, s, "b", cr(1000)-want[1], 0)
	if got := keyUsage(t, s, "key-a"); got != want[0] {
		t.Fatalf("key usage %s, want %s", got, want[0])
	}
	if n := len(accountRows(t, s, "a")) + len(accountRows(t, s, "b")); n != workers {
		t.Fatalf("%d rows, want %d", n, workers)
	}
}

func testModels(t *testing.T, s store.Store) {
	ctx := t.Context()
	if ms, err := s.ListModels(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("models of an empty store = %+v, %v", ms, err)
	}
	for _, m := range []store.Model{
		{ID: "m-b", OwnedBy: "x", Family: "chat"},
		{ID: "m-a", OwnedBy: "y", Family: "image"},
		{ID: "m-b", OwnedBy: "z", Family: "chat"}, // replaces
	} {
		mustNil(t, "put model", s.PutModel(ctx, m))
	}
	ms, err := s.ListModels(ctx)
	mustNil(t, "list models", err)
	got := map[string]store.Model{}
	for _, m := range ms {
		got[m.ID] = m
	}
	if len(ms) != 2 {
		t.Fatalf("models = %+v, want 2", ms)
	}
	same(t, "models", got, map[string]store.Model{
		"m-a": {ID: "m-a", OwnedBy: "y", Family: "image"},
		"m-b": {ID: "m-b", OwnedBy: "z", Family: "chat"},
	})
}

func testCancelled(t *testing.T, s store.Store) {
	newAccount(t, s, "a", cr(10))
	h := hold("a", "h", cr(2))
	_, err := s.PlaceHold(t.Context(), h)
	mustNil(t, "hold", err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(1), Row: rowFor(h, cr(1))}); err == nil {
		t.Fatal("settle with a cancelled context succeeded")
	}
	if _, err := s.PlaceHold(ctx, hold("a", "h2", cr(1))); err == nil {
		t.Fatal("hold with a cancelled context succeeded")
	}
	wantWallet(t, s, "a", cr(10), cr(2))
	holds, err := s.OpenHolds(t.Context())
	mustNil(t, "open holds", err)
	if len(holds) != 1 {
		t.Fatalf("open holds = %+v, want the first only", holds)
	}
}

func testClosed(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(10))
	mustNil(t, "close", s.Close())
	calls := []struct {
		desc string
		call func() error
	}{
		{"CreateAccount", func() error { return s.CreateAccount(ctx, store.Account{ID: "b"}, 0, "") }},
		{"GetAccount", func() error { _, err := s.GetAccount(ctx, "a"); return err }},
		{"ListAccounts", func() error { _, err := s.ListAccounts(ctx); return err }},
		{"UpdateAccount", func() error { return s.UpdateAccount(ctx, store.Account{ID: "a"}) }},
		{"GetWallet", func() error { _, err := s.GetWallet(ctx, "a"); return err }},
		{"Credit", func() error { _, err := s.Credit(ctx, "a", 1, ""); return err }},
		{"ListLedger", func() error { _, err := s.ListLedger(ctx, "a"); return err }},
		{"PlaceHold", func() error { _, err := s.PlaceHold(ctx, hold("a", "h", 1)); return err }},
		{"Settle", func() error { return s.Settle(ctx, store.Settlement{Row: rowFor(hold("a", "h", 0), 0)}) }},
		{"OpenHolds", func() error { _, err := s.OpenHolds(ctx); return err }},
		{"CreateKey", func() error { return s.CreateKey(ctx, key("a", "k", 1)) }},
		{"GetKey", func() error { _, err := s.GetKey(ctx, "k"); return err }},
		{"KeyByHash", func() error { _, err := s.KeyByHash(ctx, []byte("h")); return err }},
		{"ListKeys", func() error { _, err := s.ListKeys(ctx, "a"); return err }},
		{"UpdateKey", func() error { return s.UpdateKey(ctx, key("a", "k", 1)) }},
		{"DeleteKey", func() error { return s.DeleteKey(ctx, "k") }},
		{"KeyUsage", func() error { _, err := s.KeyUsage(ctx, "k"); return err }},
		{"TouchKey", func() error { return s.TouchKey(ctx, "k", time.Now()) }},
		{"GetLog", func() error { _, err := s.GetLog(ctx, 1); return err }},
		{"QueryLogs", func() error { _, err := s.QueryLogs(ctx, store.LogQuery{AccountID: "a"}); return err }},
		{"ScanLogs", func() error {
			return s.ScanLogs(ctx, store.LogQuery{AccountID: "a"}, func(store.LogRow) bool { return true })
		}},
		{"PutModel", func() error { return s.PutModel(ctx, store.Model{ID: "m"}) }},
		{"ListModels", func() error { _, err := s.ListModels(ctx); return err }},
	}
	for _, c := range calls {
		t.Run(c.desc, func(t *testing.T) { mustIs(t, c.desc, c.call(), store.ErrClosed) })
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
