package audit_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// books is a store's books held in memory.
type books struct {
	entries []store.BookEntry
	wallets []store.Wallet
	rows    []store.RowBrief
	fail    error // AuditView's error
}

func (b *books) AuditView(context.Context) (store.BooksView, error) {
	if b.fail != nil {
		return nil, b.fail
	}
	return view{b}, nil
}

type view struct{ b *books }

func seq[T any](xs []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, x := range xs {
			if !yield(x, nil) {
				return
			}
		}
	}
}

func (v view) Entries(context.Context) iter.Seq2[store.BookEntry, error] { return seq(v.b.entries) }
func (v view) Settlements(context.Context) iter.Seq2[store.BookEntry, error] {
	var s []store.BookEntry
	for _, e := range v.b.entries {
		if e.Settles() {
			s = append(s, e)
		}
	}
	return seq(s)
}
func (v view) Wallets(context.Context) iter.Seq2[store.Wallet, error] { return seq(v.b.wallets) }
func (v view) Holds(context.Context) iter.Seq2[store.HoldRecord, error] {
	return seq[store.HoldRecord](nil)
}
func (v view) Tasks(context.Context) iter.Seq2[store.TaskBrief, error] {
	return seq[store.TaskBrief](nil)
}
func (v view) Rows(context.Context) iter.Seq2[store.RowBrief, error] { return seq(v.b.rows) }
func (v view) Live(string) bool                                      { return false }
func (v view) At() time.Time                                         { return time.Unix(1_700_000_000, 0) }
func (v view) Close() error                                          { return nil }

// A credit of 10, a call held for 2 and charged 0.5 with its row.
func oneCall() *books {
	c := money.Credits
	return &books{
		entries: []store.BookEntry{
			{Seq: 1, Kind: store.EntryCredit, AccountID: "a", Amount: c(10)},
			{Seq: 2, Kind: store.EntryHold, AccountID: "a", Amount: c(2), HoldID: "req-1"},
			{Seq: 3, Kind: store.EntrySettle, AccountID: "a", Amount: c(2), Charge: money.MustParse("0.5"), HoldID: "req-1", LogID: 1},
		},
		wallets: []store.Wallet{{AccountID: "a", Balance: money.MustParse("9.5")}},
		rows:    []store.RowBrief{{ID: 1, AccountID: "a", RequestID: "req-1", Cost: money.MustParse("0.5")}},
	}
}

// Each run is counted by its result, kept for /metrics and logged: one
// line when it passes, the count by rule and each violation when not.
func TestRunnerOnce(t *testing.T) {
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
	b := oneCall()
	r := audit.NewRunner(b, time.Hour, log, nil)
	if rep, err := r.Once(t.Context()); err != nil || !rep.OK || rep.Rows != 1 || rep.Entries != 3 {
		t.Fatalf("books that hold: %+v, %v", rep, err)
	}
	if !strings.Contains(out.String(), "[INFO]  audit of the books passed: accounts=1 entries=3 rows=1") {
		t.Errorf("log:\n%s", out.String())
	}

	out.Reset()
	b.rows[0].Cost = money.MustParse("0.6")
	rep, err := r.Once(t.Context())
	if err != nil || rep.OK || rep.ByRule[audit.RuleRowCost] != 1 || rep.Violations[0].Entry != 3 || rep.Violations[0].LogID != 1 {
		t.Fatalf("a row costing more than its settlement: %+v, %v", rep, err)
	}
	for _, want := range []string{"[ERROR] audit of the books found violations:", "violations=1", "by_rule=row_cost=1",
		"[ERROR] audit violation: rule=row_cost account_id=a entry=3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	b.fail = errors.New("disk gone")
	if _, err := r.Once(t.Context()); err == nil {
		t.Fatal("an audit that could not read its books passed")
	}
	if !strings.Contains(out.String(), "[ERROR] audit of the books could not finish: error=") {
		t.Errorf("log:\n%s", out.String())
	}
	st := r.Status()
	if st.Passed != 1 || st.Failed != 1 || st.Errors != 1 || st.Last == nil || st.Last.OK || st.LastErr == nil || st.LastAt.IsZero() {
		t.Errorf("status %+v", st)
	}
}

// A run the gateway's stop cancels is not a result.
func TestRunnerStops(t *testing.T) {
	r := audit.NewRunner(oneCall(), time.Millisecond, hclog.NewNullLogger(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once its context ended")
	}
}
