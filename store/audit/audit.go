// Package audit proves a store's books: from the journal of money moves
// alone (store.Books), every account's balance and held sum, every open
// hold, every ended task and every log row, in one consistent snapshot
// read while the gateway serves. `tollgate audit`, GET /admin/v1/audit and
// the gateway's periodic audit (`audit { every }`) run it; tests end with
// it (internal/testgw). It sits beside the backends, at the storage level:
// the conformance suite audits every backend with it.
package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// The rules, as a report names them.
const (
	// RuleBalance: an account's balance is not its credits less its
	// settled charges (or the books name an account without a wallet).
	RuleBalance = "balance"
	// RuleHeld: an account's held sum is not the sum of its open holds.
	RuleHeld = "held"
	// RuleHoldNotLive: an open hold belongs neither to a call in flight
	// (its instance's lease has lapsed) nor to an unfinished task.
	RuleHoldNotLive = "hold_not_live"
	// RuleHoldRecord: the open holds of the books and the hold records
	// the store keeps for recovery disagree.
	RuleHoldRecord = "hold_record"
	// RuleTaskSettlement: an ended task has not exactly one settlement.
	RuleTaskSettlement = "task_settlement"
	// RuleTaskRow: an ended task has not exactly one log row.
	RuleTaskRow = "task_row"
	// RuleRowCost: a log row's cost is not what its settlement charged
	// (a row without a settlement costs nothing).
	RuleRowCost = "row_cost"
	// RuleSettlementHold: a settlement closes a hold the books never
	// opened, or closed already, or releases another amount than it held.
	RuleSettlementHold = "settlement_without_hold"
	// RuleSettlementRow: a settlement's log row does not exist.
	RuleSettlementRow = "settlement_without_row"
	// RuleEntry: an entry the books cannot hold (an unknown kind).
	RuleEntry = "entry"
)

// Rules lists every rule, in the order a report's counts show them.
var Rules = []string{RuleBalance, RuleHeld, RuleHoldNotLive, RuleHoldRecord, RuleTaskSettlement,
	RuleTaskRow, RuleRowCost, RuleSettlementHold, RuleSettlementRow, RuleEntry}

// Violation is one broken rule: the account, and the entry, hold, task
// or row that breaks it.
type Violation struct {
	Rule      string `json:"rule"`
	AccountID string `json:"account_id,omitempty"`
	// Entry is the book entry's seq (0: none).
	Entry   uint64 `json:"entry,omitempty"`
	HoldID  string `json:"hold_id,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
	LogID   uint64 `json:"log_id,omitempty"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	s := v.Rule
	if v.AccountID != "" {
		s += " account " + v.AccountID
	}
	if v.Entry != 0 {
		s += fmt.Sprintf(" entry %d", v.Entry)
	}
	return s + ": " + v.Message
}

// Report is what an audit found.
type Report struct {
	// OK: every rule holds.
	OK bool `json:"ok"`
	// At is the moment of the snapshot audited; Took how long it took.
	At     time.Time `json:"at"`
	TookMS int64     `json:"took_ms"`
	// What was read.
	Accounts  int   `json:"accounts"`
	Entries   int64 `json:"entries"`
	Rows      int64 `json:"rows"`
	Tasks     int64 `json:"tasks"`
	OpenHolds int   `json:"open_holds"`
	// Count is how many violations there are, ByRule how many of each
	// rule (every rule listed), Violations the first Options.Max of them.
	Count      int            `json:"violation_count"`
	ByRule     map[string]int `json:"by_rule"`
	Violations []Violation    `json:"violations"`
}

// Options tune an audit.
type Options struct {
	// Max caps the violations a report lists (all are counted); 0 means
	// DefaultMax.
	Max int
	// Now is the clock a run is timed with; nil means time.Now.
	Now func() time.Time
}

// DefaultMax is Options.Max when unset.
const DefaultMax = 1000

// Run audits the books of b in one snapshot.
func Run(ctx context.Context, b store.Books, o Options) (Report, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	v, err := b.AuditView(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("audit: open a view of the books: %w", err)
	}
	defer v.Close()
	r, err := Check(ctx, v, o)
	r.TookMS = now().Sub(start).Milliseconds()
	return r, err
}

// Check audits one view of the books.
func Check(ctx context.Context, v store.BooksView, o Options) (Report, error) {
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	a := newAuditor(v, o)
	for _, pass := range []func(context.Context) error{a.entries, a.wallets, a.rows, a.tasks, a.holds} {
		if err := pass(ctx); err != nil {
			return a.report, fmt.Errorf("audit: %w", err)
		}
	}
	a.report.OK = a.report.Count == 0
	return a.report, nil
}
