package audit

import (
	"context"
	"iter"
	"strconv"

	"github.com/tollgate-gw/tollgate/core/english"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// auditor reads a view in five passes: the entries (each account's
// balance and held sum, the holds still open, the settlements of each
// task), the wallets, the rows beside the settlements (both in row
// order), the tasks, the hold records. It keeps per account, per open
// hold and per task settled or logged; rows and entries stream through.
type auditor struct {
	v      store.BooksView
	max    int
	report Report

	accounts map[string]*books
	open     map[string]openHold
	moves    map[string]*taskMoves
	// lapsed are the holds released by a sweep of lapsed leases, which
	// their instance may charge late once.
	lapsed map[string]lapse
	// cutoff is the last row written before the books began: rows up to
	// it have no settlement in them.
	cutoff     uint64
	unfinished map[string]bool
}

// books is one account as its entries tell it.
type books struct {
	balance, held money.Total
	wallet        bool
}

type openHold struct {
	seq                  uint64
	account, task, owner string
	amount               money.Nano
}

type lapse struct {
	seq, charged   uint64 // the release's entry; the late charge's, if any
	account, owner string
}

// taskMoves are a task's settlements and rows.
type taskMoves struct {
	settlements, rows []uint64 // entry seqs, row ids
	before            bool     // a row of it predates the books
}

func newAuditor(v store.BooksView, o Options) *auditor {
	return &auditor{
		v: v, max: o.Max, report: Report{At: v.At(), ByRule: map[string]int{}, Violations: []Violation{}},
		accounts: map[string]*books{}, open: map[string]openHold{}, moves: map[string]*taskMoves{},
		unfinished: map[string]bool{}, lapsed: map[string]lapse{},
	}
}

func (a *auditor) flag(x Violation) {
	a.report.Count++
	a.report.ByRule[x.Rule]++
	if len(a.report.Violations) < a.max {
		a.report.Violations = append(a.report.Violations, x)
	}
}

func (a *auditor) account(id string) *books {
	b := a.accounts[id]
	if b == nil {
		b = &books{}
		a.accounts[id] = b
	}
	return b
}

func (a *auditor) task(id string) *taskMoves {
	t := a.moves[id]
	if t == nil {
		t = &taskMoves{}
		a.moves[id] = t
	}
	return t
}

func neg(n money.Nano) money.Nano { return -n } // amounts are never money.Min

// entries replays the books.
func (a *auditor) entries(ctx context.Context) error {
	for e, err := range a.v.Entries(ctx) {
		if err != nil {
			return err
		}
		a.report.Entries++
		acct := a.account(e.AccountID)
		switch e.Kind {
		case store.EntryCarry:
			a.cutoff = max(a.cutoff, e.LogID)
			acct.balance.Add(e.Amount)
		case store.EntryCredit:
			acct.balance.Add(e.Amount)
		case store.EntryHold:
			if prev, dup := a.open[e.HoldID]; dup {
				a.flag(Violation{Rule: RuleEntry, AccountID: e.AccountID, Entry: e.Seq, HoldID: e.HoldID,
					Message: "places hold " + e.HoldID + " again while entry " + itoa(prev.seq) + " holds it open"})
				acct.held.Add(neg(prev.amount))
			}
			a.open[e.HoldID] = openHold{seq: e.Seq, account: e.AccountID, task: e.TaskID, owner: e.Owner, amount: e.Amount}
			acct.held.Add(e.Amount)
		case store.EntrySettle, store.EntryRefund, store.EntryRelease:
			a.settlement(&e, acct)
		case store.EntryLate:
			a.late(&e, acct)
		default:
			a.flag(Violation{Rule: RuleEntry, AccountID: e.AccountID, Entry: e.Seq, Message: "unknown kind " + quote(e.Kind)})
		}
	}
	return nil
}

// settlement books e against its hold; the move took e.Charge from the
// balance and e.Amount from the held sum, whatever it settled.
func (a *auditor) settlement(e *store.BookEntry, acct *books) {
	acct.balance.Add(neg(e.Charge))
	acct.held.Add(neg(e.Amount))
	if e.TaskID != "" {
		t := a.task(e.TaskID)
		t.settlements = append(t.settlements, e.Seq)
	}
	h, ok := a.open[e.HoldID]
	if !ok {
		a.flag(Violation{Rule: RuleSettlementHold, AccountID: e.AccountID, Entry: e.Seq, HoldID: e.HoldID, TaskID: e.TaskID,
			LogID: e.LogID, Message: "settles hold " + quote(e.HoldID) + ", which the books never placed or closed already"})
		return
	}
	delete(a.open, e.HoldID)
	if e.Kind == store.EntrySettle && e.Note == store.NoteLeaseLapsed {
		a.lapsed[e.HoldID] = lapse{seq: e.Seq, account: e.AccountID, owner: e.Owner}
	}
	if h.account != e.AccountID || h.amount != e.Amount {
		a.flag(Violation{Rule: RuleSettlementHold, AccountID: e.AccountID, Entry: e.Seq, HoldID: e.HoldID, TaskID: e.TaskID,
			LogID: e.LogID, Message: "releases " + e.Amount.String() + " of account " + e.AccountID + " but entry " + itoa(h.seq) +
				" held " + h.amount.String() + " of account " + h.account})
		// The hold's own account and amount go back as they were held.
		acct.held.Add(e.Amount)
		a.account(h.account).held.Add(neg(h.amount))
	}
}

// late books a late charge: it must follow the release of its hold by
// the sweep of its own instance's lapsed lease, once, and release
// nothing.
func (a *auditor) late(e *store.BookEntry, acct *books) {
	acct.balance.Add(neg(e.Charge))
	acct.held.Add(neg(e.Amount))
	l, ok := a.lapsed[e.HoldID]
	msg := ""
	switch {
	case !ok:
		msg = "charges hold " + quote(e.HoldID) + " late, but no sweep of a lapsed lease released it"
	case l.charged != 0:
		msg = "charges hold " + quote(e.HoldID) + " late a second time (entry " + itoa(l.charged) + " did)"
	case l.account != e.AccountID || l.owner != e.Owner:
		msg = "charges hold " + quote(e.HoldID) + " late to account " + e.AccountID + " by instance " + e.Owner +
			", but entry " + itoa(l.seq) + " released it for account " + l.account + " of instance " + l.owner
	case e.Amount != 0:
		msg = "charges hold " + quote(e.HoldID) + " late and releases " + e.Amount.String() + ", which its sweep released already"
	}
	if ok && l.charged == 0 {
		l.charged = e.Seq
		a.lapsed[e.HoldID] = l
	}
	if msg != "" {
		a.flag(Violation{Rule: RuleSettlementHold, AccountID: e.AccountID, Entry: e.Seq, HoldID: e.HoldID, LogID: e.LogID, Message: msg})
	}
}

// wallets compares each wallet with its account's entries.
func (a *auditor) wallets(ctx context.Context) error {
	for w, err := range a.v.Wallets(ctx) {
		if err != nil {
			return err
		}
		a.report.Accounts++
		b := a.account(w.AccountID)
		b.wallet = true
		if b.balance.Cmp(money.TotalOf(w.Balance)) != 0 {
			a.flag(Violation{Rule: RuleBalance, AccountID: w.AccountID,
				Message: "balance " + w.Balance.String() + ", but its credits less its settled charges come to " + b.balance.String()})
		}
		if b.held.Cmp(money.TotalOf(w.Held)) != 0 {
			a.flag(Violation{Rule: RuleHeld, AccountID: w.AccountID,
				Message: "held " + w.Held.String() + ", but its open holds come to " + b.held.String()})
		}
	}
	for id, b := range a.accounts {
		if !b.wallet {
			a.flag(Violation{Rule: RuleBalance, AccountID: id,
				Message: "the books move money of this account, which has no wallet (its credits less its charges come to " + b.balance.String() + ")"})
		}
	}
	return nil
}

// rows walks the rows and the settlements together, both by row id.
func (a *auditor) rows(ctx context.Context) error {
	next, stop := iter.Pull2(a.v.Settlements(ctx))
	defer stop()
	var s store.BookEntry
	var serr error
	var more bool
	var last uint64
	// advance moves to the next settlement in row order; one that names
	// an earlier row than the one before it is out of order (a book
	// written by something else) and is named, not matched.
	advance := func() {
		for s, serr, more = next(); more && serr == nil && s.LogID < last; s, serr, more = next() {
			a.flag(Violation{Rule: RuleEntry, AccountID: s.AccountID, Entry: s.Seq, HoldID: s.HoldID, LogID: s.LogID,
				Message: "settles row " + itoa(s.LogID) + " after a settlement of row " + itoa(last) + ": out of the order the store writes"})
		}
		if more && serr == nil {
			last = s.LogID
		}
	}
	advance()
	for r, err := range a.v.Rows(ctx) {
		if err != nil {
			return err
		}
		if serr != nil {
			return serr
		}
		a.report.Rows++
		for ; more && serr == nil && s.LogID < r.ID; advance() {
			a.missingRow(&s)
		}
		settled := false
		for ; more && serr == nil && s.LogID == r.ID; advance() {
			switch {
			case settled:
				a.flag(Violation{Rule: RuleRowCost, AccountID: s.AccountID, Entry: s.Seq, HoldID: s.HoldID, LogID: r.ID,
					Message: "a second settlement names row " + itoa(r.ID)})
			case s.Charge != r.Cost || s.AccountID != r.AccountID:
				a.flag(Violation{Rule: RuleRowCost, AccountID: r.AccountID, Entry: s.Seq, HoldID: s.HoldID, TaskID: r.TaskID, LogID: r.ID,
					Message: "row " + itoa(r.ID) + " costs " + r.Cost.String() + " to account " + r.AccountID +
						"; its settlement charged " + s.Charge.String() + " to account " + s.AccountID})
			}
			settled = true
		}
		if !settled && r.Cost != 0 && r.ID > a.cutoff {
			a.flag(Violation{Rule: RuleRowCost, AccountID: r.AccountID, TaskID: r.TaskID, LogID: r.ID,
				Message: "row " + itoa(r.ID) + " (request " + r.RequestID + ") costs " + r.Cost.String() + " but no settlement charged it"})
		}
		if r.TaskID != "" {
			t := a.task(r.TaskID)
			t.rows = append(t.rows, r.ID)
			t.before = t.before || r.ID <= a.cutoff
		}
	}
	for ; more && serr == nil; advance() {
		a.missingRow(&s)
	}
	return serr
}

func (a *auditor) missingRow(s *store.BookEntry) {
	a.flag(Violation{Rule: RuleSettlementRow, AccountID: s.AccountID, Entry: s.Seq, HoldID: s.HoldID, TaskID: s.TaskID, LogID: s.LogID,
		Message: "settles with row " + itoa(s.LogID) + ", which does not exist"})
}

// tasks checks each ended task's settlement and row, and notes the
// unfinished ones (which own their holds).
func (a *auditor) tasks(ctx context.Context) error {
	for t, err := range a.v.Tasks(ctx) {
		if err != nil {
			return err
		}
		a.report.Tasks++
		if !store.TaskTerminal(t.Status) {
			a.unfinished[t.ID] = true
			continue
		}
		m := a.moves[t.ID]
		if m == nil {
			m = &taskMoves{}
		}
		if m.before {
			continue // ended before the books began
		}
		if n := len(m.settlements); n != 1 {
			x := Violation{Rule: RuleTaskSettlement, AccountID: t.AccountID, TaskID: t.ID, HoldID: t.HoldID,
				Message: "task " + t.ID + " ended " + t.Status + " with " + count(n, "settlement")}
			if n > 1 {
				x.Entry = m.settlements[1]
			}
			a.flag(x)
		}
		if n := len(m.rows); n != 1 {
			x := Violation{Rule: RuleTaskRow, AccountID: t.AccountID, TaskID: t.ID, HoldID: t.HoldID,
				Message: "task " + t.ID + " ended " + t.Status + " with " + count(n, "log row")}
			if n > 1 {
				x.LogID = m.rows[1]
			}
			a.flag(x)
		}
	}
	return nil
}

// holds checks the holds the books leave open against the store's hold
// records, and each against a call in flight or an unfinished task.
func (a *auditor) holds(ctx context.Context) error {
	records := map[string]store.HoldRecord{}
	for h, err := range a.v.Holds(ctx) {
		if err != nil {
			return err
		}
		records[h.ID] = h
	}
	a.report.OpenHolds = len(a.open)
	for id, h := range a.open {
		rec, ok := records[id]
		delete(records, id)
		switch {
		case !ok:
			a.flag(Violation{Rule: RuleHoldRecord, AccountID: h.account, Entry: h.seq, HoldID: id, TaskID: h.task,
				Message: "hold " + id + " is open in the books, but the store keeps no record of it"})
		case rec.AccountID != h.account || rec.Amount != h.amount:
			a.flag(Violation{Rule: RuleHoldRecord, AccountID: h.account, Entry: h.seq, HoldID: id, TaskID: h.task,
				Message: "hold " + id + " holds " + h.amount.String() + " of account " + h.account + " in the books, but its record " +
					rec.Amount.String() + " of account " + rec.AccountID})
		}
		if !a.v.Live(h.owner) && (h.task == "" || !a.unfinished[h.task]) {
			msg := "hold " + id + " of " + h.amount.String() + " belongs to no call in flight"
			if h.task != "" {
				msg += " and to no unfinished task (task " + h.task + ")"
			}
			if h.owner != "" {
				msg += ": its instance " + h.owner + " is gone"
			}
			a.flag(Violation{Rule: RuleHoldNotLive, AccountID: h.account, Entry: h.seq, HoldID: id, TaskID: h.task,
				Message: msg + " (crash recovery releases it at the next start)"})
		}
	}
	for id, rec := range records {
		a.flag(Violation{Rule: RuleHoldRecord, AccountID: rec.AccountID, HoldID: id, TaskID: rec.TaskID,
			Message: "the store keeps a record of hold " + id + " (" + rec.Amount.String() + "), which the books never placed or closed already"})
	}
	return nil
}

func itoa(n uint64) string            { return strconv.FormatUint(n, 10) }
func quote(s string) string           { return strconv.Quote(s) }
func count(n int, what string) string { return english.Count(n, what) }
