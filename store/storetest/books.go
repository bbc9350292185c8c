package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// Tamperer breaks a store's books on purpose, as a disk error, a bug or a
// hand at the database could: each backend writes its own records
// directly, around every check of the store. The store has applied every
// move made before a call.
type Tamperer interface {
	// SetWallet overwrites an account's wallet.
	SetWallet(account string, balance, held money.Nano)
	// EditEntry rewrites book entry seq with fn's changes.
	EditEntry(seq uint64, fn func(*store.BookEntry))
	// DeleteEntry removes book entry seq.
	DeleteEntry(seq uint64)
	// AddEntry appends e after the last entry (its Seq is ignored).
	AddEntry(e store.BookEntry)
	// SetRowCost overwrites a log row's cost.
	SetRowCost(id uint64, cost money.Nano)
	// DeleteRow removes a log row.
	DeleteRow(id uint64)
	// DeleteHold removes an open hold's record.
	DeleteHold(id string)
}

// audited opens stores whose books must pass an audit when the test that
// made them ends (unless it failed or closed the store itself).
func audited(open func(t *testing.T) store.Store) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() {
			if t.Failed() {
				return
			}
			// t.Context is done once cleanups run.
			rep, err := audit.Run(context.Background(), s, audit.Options{})
			if errors.Is(err, store.ErrClosed) {
				return
			}
			mustNil(t, "audit at the test's end", err)
			if !rep.OK {
				t.Errorf("the books fail their audit at the test's end:\n%s", violations(rep))
			}
		})
		return s
	}
}

func violations(rep audit.Report) string {
	var b strings.Builder
	for _, v := range rep.Violations {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

// RunBooks is the suite of the Books role: every kind of money move leaves
// its entry, the books pass an audit, and one entry or record broken on
// purpose (tamper opens a Tamperer on the store), rule by rule, is named.
func RunBooks(t *testing.T, open func(t *testing.T) store.Store, tamper func(t *testing.T, s store.Store) Tamperer) {
	t.Run("entries", func(t *testing.T) { t.Parallel(); testBookEntries(t, open(t)) })
	for _, c := range tamperCases {
		t.Run("tampered "+c.rule+": "+c.desc, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			b := bookScenario(t, s)
			c.break_(tamper(t, s), b)
			rep, err := audit.Run(t.Context(), s, audit.Options{})
			mustNil(t, "audit", err)
			if rep.OK || rep.ByRule[c.rule] == 0 {
				t.Fatalf("the audit did not find %s; it found:\n%s", c.rule, violations(rep))
			}
			want := c.want(b)
			want.Rule = c.rule
			for _, v := range rep.Violations {
				if v.Rule == want.Rule && v.AccountID == want.AccountID && (want.Entry == 0 || v.Entry == want.Entry) &&
					(want.HoldID == "" || v.HoldID == want.HoldID) && (want.TaskID == "" || v.TaskID == want.TaskID) &&
					(want.LogID == 0 || v.LogID == want.LogID) {
					return
				}
			}
			t.Fatalf("no violation names %+v; the audit found:\n%s", want, violations(rep))
		})
	}
}

// scenario is what bookScenario made: the entries of its moves and the
// rows of its settlements.
type scenario struct {
	entries            []store.BookEntry
	credit             store.BookEntry // the operator's credit of 5
	chatHold, chatDone store.BookEntry // a call's hold and settlement
	openHold           store.BookEntry // a call still in flight
	taskDone           store.BookEntry // the refund that ended img_b1
	chatRow, taskRow   uint64
}

func (s *scenario) entry(t *testing.T, kind, holdID string) store.BookEntry {
	t.Helper()
	for _, e := range s.entries {
		if e.Kind == kind && (holdID == "" || e.HoldID == holdID) {
			return e
		}
	}
	t.Fatalf("no %s entry of hold %q in %+v", kind, holdID, s.entries)
	return store.BookEntry{}
}

// bookScenario makes one money move of every kind on account "a": an
// opening credit, an operator's credit, a call held and settled, a call
// in flight, a task refunded, a task under way, a refusal without a hold,
// a top-up and its partial refund. Its books pass.
func bookScenario(t *testing.T, s store.Store) *scenario {
	t.Helper()
	ctx := store.WithCause(t.Context(), store.Cause{AdminToken: "admtok_1"})
	a := store.Account{ID: "a", Name: "a", Status: store.AccountActive, CreatedAt: t0}
	mustNil(t, "create account", s.CreateAccount(ctx, a, cr(100), "sign-up"))
	_, err := s.Credit(ctx, "a", cr(5), "goodwill")
	mustNil(t, "credit", err)

	h := hold("a", "req-chat", cr(10))
	_, err = s.PlaceHold(ctx, h)
	mustNil(t, "hold", err)
	chat := rowFor(h, cr(3))
	mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(3), Row: chat}))
	_, err = s.PlaceHold(ctx, hold("a", "req-open", cr(7)))
	mustNil(t, "open hold", err)

	tk := newTask(t, s, "a", "img_b1", "gw1", cr(4), t0)
	done, st := finish(tk, store.TaskFailed, 0, `{"error":{}}`)
	mustNil(t, "finish task", s.FinishTask(ctx, done, st))
	newTask(t, s, "a", "img_b2", "gw1", cr(2), t0)
	refused := &store.LogRow{AccountID: "a", CreatedAt: t0, SubmittedAt: t0, Status: store.StatusRejected,
		ErrorCode: "quota_exceeded", RequestID: "req-refused"}
	mustNil(t, "refusal", s.Settle(ctx, store.Settlement{Row: refused}))

	mustNil(t, "create order", s.CreateOrder(ctx, topUp("a", "o-1", 1)))
	o := getOrder(t, s, "o-1")
	o.Status, o.PaymentID = store.OrderPaid, "pi_1"
	mustNil(t, "pay", s.UpdateOrder(ctx, &o, o.Credits, "card top-up o-1"))
	o.Refunded, o.Debited = 1000, money.MustParse("100")
	mustNil(t, "refund", s.UpdateOrder(ctx, &o, -o.Debited, "refund of o-1"))

	b := &scenario{entries: bookEntries(t, s), chatRow: chat.ID, taskRow: st.Row.ID}
	b.credit = b.entry(t, store.EntryCredit, "")
	for _, e := range b.entries {
		if e.Kind == store.EntryCredit && e.Note == "goodwill" {
			b.credit = e
		}
	}
	b.chatHold, b.chatDone = b.entry(t, store.EntryHold, "req-chat"), b.entry(t, store.EntrySettle, "req-chat")
	b.openHold, b.taskDone = b.entry(t, store.EntryHold, "req-open"), b.entry(t, store.EntryRefund, "req-img_b1")
	rep, err := audit.Run(t.Context(), s, audit.Options{})
	mustNil(t, "audit", err)
	if !rep.OK {
		t.Fatalf("the scenario's books fail their audit:\n%s", violations(rep))
	}
	return b
}

func bookEntries(t *testing.T, s store.Store) []store.BookEntry {
	t.Helper()
	v, err := s.AuditView(t.Context())
	mustNil(t, "audit view", err)
	defer v.Close()
	var out []store.BookEntry
	for e, err := range v.Entries(t.Context()) {
		mustNil(t, "entries", err)
		out = append(out, e)
	}
	return out
}

// testBookEntries checks what each move wrote.
func testBookEntries(t *testing.T, s store.Store) {
	b := bookScenario(t, s)
	type brief struct {
		Kind, Account, Hold, Req, Task, Order, Admin string
		Amount, Charge                               money.Nano
		Ledger, Log                                  bool
	}
	var got []brief
	for i, e := range b.entries {
		if i > 0 && e.Seq <= b.entries[i-1].Seq {
			t.Fatalf("entries out of order: %d after %d", e.Seq, b.entries[i-1].Seq)
		}
		if e.At.IsZero() {
			t.Errorf("entry %d (%s) has no time", e.Seq, e.Kind)
		}
		got = append(got, brief{e.Kind, e.AccountID, e.HoldID, e.RequestID, e.TaskID, e.OrderID, e.AdminToken,
			e.Amount, e.Charge, e.LedgerID != 0, e.LogID != 0})
	}
	want := []brief{
		{Kind: "credit", Account: "a", Admin: "admtok_1", Amount: cr(100), Ledger: true},
		{Kind: "credit", Account: "a", Admin: "admtok_1", Amount: cr(5), Ledger: true},
		{Kind: "hold", Account: "a", Hold: "req-chat", Req: "req-chat", Amount: cr(10)},
		{Kind: "settle", Account: "a", Hold: "req-chat", Req: "req-chat", Amount: cr(10), Charge: cr(3), Log: true},
		{Kind: "hold", Account: "a", Hold: "req-open", Req: "req-open", Amount: cr(7)},
		{Kind: "hold", Account: "a", Hold: "req-img_b1", Req: "req-img_b1", Task: "img_b1", Amount: cr(4)},
		{Kind: "refund", Account: "a", Hold: "req-img_b1", Req: "req-img_b1", Task: "img_b1", Amount: cr(4), Log: true},
		{Kind: "hold", Account: "a", Hold: "req-img_b2", Req: "req-img_b2", Task: "img_b2", Amount: cr(2)},
		{Kind: "credit", Account: "a", Order: "o-1", Admin: "admtok_1", Amount: money.MustParse("404.4"), Ledger: true},
		{Kind: "credit", Account: "a", Order: "o-1", Admin: "admtok_1", Amount: money.MustParse("-100"), Ledger: true},
	}
	same(t, "book entries", got, want)
	if b.chatDone.LogID != b.chatRow || b.taskDone.LogID != b.taskRow {
		t.Errorf("settlements name rows %d and %d, want %d and %d", b.chatDone.LogID, b.taskDone.LogID, b.chatRow, b.taskRow)
	}
	// The credit's ledger entry names the same cause.
	led, err := s.ListLedger(t.Context(), "a")
	mustNil(t, "ledger", err)
	if !slices.ContainsFunc(led, func(l store.LedgerEntry) bool { return l.ID == b.credit.LedgerID && l.AdminToken == "admtok_1" }) {
		t.Errorf("no ledger entry %d with the admin token in %+v", b.credit.LedgerID, led)
	}
	rep, err := audit.Run(t.Context(), s, audit.Options{})
	mustNil(t, "audit", err)
	if rep.Accounts != 1 || rep.Entries != int64(len(want)) || rep.Rows != 3 || rep.Tasks != 2 || rep.OpenHolds != 2 {
		t.Errorf("the audit read %d accounts, %d entries, %d rows, %d tasks, %d open holds; want 1, %d, 3, 2, 2",
			rep.Accounts, rep.Entries, rep.Rows, rep.Tasks, rep.OpenHolds, len(want))
	}
	if !rep.At.After(time.Now().Add(-time.Minute)) {
		t.Errorf("snapshot at %v", rep.At)
	}
}

// tamperCases break one thing each; want is the violation that must name
// it (zero fields are not compared).
var tamperCases = []struct {
	rule, desc string
	break_     func(Tamperer, *scenario)
	want       func(*scenario) audit.Violation
}{
	{audit.RuleBalance, "a credit's amount edited",
		func(x Tamperer, b *scenario) {
			x.EditEntry(b.credit.Seq, func(e *store.BookEntry) { e.Amount = cr(6) })
		},
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a"} }},
	{audit.RuleBalance, "the wallet's balance edited",
		func(x Tamperer, b *scenario) { x.SetWallet("a", cr(1000), cr(9)) },
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a"} }},
	{audit.RuleHeld, "the wallet's held sum edited",
		func(x Tamperer, b *scenario) { x.SetWallet("a", money.MustParse("406.4"), cr(10)) },
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a"} }},
	{audit.RuleHoldNotLive, "an open hold's instance gone",
		func(x Tamperer, b *scenario) {
			x.EditEntry(b.openHold.Seq, func(e *store.BookEntry) { e.Owner = "gone-instance" })
		},
		func(b *scenario) audit.Violation {
			return audit.Violation{AccountID: "a", Entry: b.openHold.Seq, HoldID: "req-open"}
		}},
	{audit.RuleHoldRecord, "an open hold's record removed",
		func(x Tamperer, b *scenario) { x.DeleteHold("req-open") },
		func(b *scenario) audit.Violation {
			return audit.Violation{AccountID: "a", Entry: b.openHold.Seq, HoldID: "req-open"}
		}},
	{audit.RuleTaskSettlement, "a task settled twice",
		func(x Tamperer, b *scenario) { x.AddEntry(b.taskDone) },
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a", TaskID: "img_b1"} }},
	{audit.RuleTaskSettlement, "a task's settlement removed",
		func(x Tamperer, b *scenario) { x.DeleteEntry(b.taskDone.Seq) },
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a", TaskID: "img_b1"} }},
	{audit.RuleTaskRow, "a task's row removed",
		func(x Tamperer, b *scenario) { x.DeleteRow(b.taskRow) },
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a", TaskID: "img_b1"} }},
	{audit.RuleRowCost, "a row's cost edited",
		func(x Tamperer, b *scenario) { x.SetRowCost(b.chatRow, cr(4)) },
		func(b *scenario) audit.Violation {
			return audit.Violation{AccountID: "a", Entry: b.chatDone.Seq, LogID: b.chatRow}
		}},
	{audit.RuleSettlementHold, "a settled hold's entry removed",
		func(x Tamperer, b *scenario) { x.DeleteEntry(b.chatHold.Seq) },
		func(b *scenario) audit.Violation {
			return audit.Violation{AccountID: "a", Entry: b.chatDone.Seq, HoldID: "req-chat"}
		}},
	{audit.RuleSettlementHold, "a hold settled twice",
		func(x Tamperer, b *scenario) { x.AddEntry(b.chatDone) },
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a", HoldID: "req-chat"} }},
	{audit.RuleSettlementRow, "a settled row removed",
		func(x Tamperer, b *scenario) { x.DeleteRow(b.chatRow) },
		func(b *scenario) audit.Violation {
			return audit.Violation{AccountID: "a", Entry: b.chatDone.Seq, LogID: b.chatRow}
		}},
	{audit.RuleEntry, "an entry of no known kind",
		func(x Tamperer, b *scenario) {
			e := b.credit
			e.Kind = "gift"
			x.AddEntry(e)
		},
		func(b *scenario) audit.Violation { return audit.Violation{AccountID: "a"} }},
}
