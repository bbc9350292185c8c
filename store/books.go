package store

import (
	"context"
	"iter"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// The books are an append-only journal of every money move, kept by the
// store in the same write as the move itself: a credit with its ledger
// entry, a hold with its wallet's update, a settlement with its row. An
// entry is never edited. An audit (core/audit) proves each account's
// wallet, its open holds and its log rows from the entries alone.

// Entry kinds.
const (
	// EntryCredit adds Amount to the balance (negative: takes it): an
	// operator's credit or correction, an opening credit, a top-up or a
	// top-up's refund.
	EntryCredit = "credit"
	// EntryHold reserves Amount for the call or task HoldID names.
	EntryHold = "hold"
	// EntrySettle closes the hold HoldID: Charge leaves the balance and
	// Amount, the hold, is released; LogID is the row written with it.
	EntrySettle = "settle"
	// EntryRefund is the settlement that ends a task charging nothing:
	// its hold released in full.
	EntryRefund = "refund"
	// EntryRelease closes the hold HoldID with nothing charged and no
	// row: a hold whose placing committed while the store lost the
	// database's answer, so its call was refused (and wrote its own row,
	// a refusal without a hold). Amount is the hold released.
	EntryRelease = "release"
	// EntryLate charges Charge for the call HoldID names after the sweep
	// of its instance's lapsed lease released its hold (an entry of kind
	// settle with NoteLeaseLapsed) while the call was being served: the
	// database was out of that instance's reach for longer than its
	// lease. Nothing is released (Amount 0); LogID is the call's row. At
	// most one per hold, and only by the instance that placed it.
	EntryLate = "late"
	// EntryCarry is an account's balance when its store began keeping
	// the books (a store written by an older tollgate): it counts as a
	// credit. LogID is the last row written before, so rows up to it
	// have no settlement in the books.
	EntryCarry = "carry"
)

// NoteLeaseLapsed is the note of the settlement entry of a hold released
// by the sweep of its instance's lapsed lease: that call may still be
// charged once, late (EntryLate).
const NoteLeaseLapsed = "lease lapsed"

// BookEntry is one money move.
type BookEntry struct {
	// Seq orders the entries of a store; numbers may skip, never repeat.
	Seq       uint64     `json:"seq"`
	Kind      string     `json:"kind"`
	AccountID string     `json:"account_id"`
	Amount    money.Nano `json:"amount"`
	Charge    money.Nano `json:"charge,omitempty"`
	// The cause: the hold (a call's request id), the request whose row
	// a settlement writes, the task that owns the hold, the top-up
	// order, the admin token (its id, never its value) or console user
	// behind a credit, and the ledger entry a credit made.
	HoldID     string `json:"hold_id,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	OrderID    string `json:"order_id,omitempty"`
	AdminToken string `json:"admin_token,omitempty"`
	UserID     string `json:"user_id,omitempty"`
	LedgerID   uint64 `json:"ledger_id,omitempty"`
	LogID      uint64 `json:"log_id,omitempty"`
	// Owner is the instance that placed a hold: the hold belongs to a
	// live call while the owner's lease runs (BooksView.Live).
	Owner string `json:"owner,omitempty"`
	Note  string `json:"note,omitempty"`
	// At is when the move was made (a hold's submit, a row's creation).
	At time.Time `json:"at"`
}

// Settles reports whether the entry settles a call with its row: a
// settlement, a task's refund, a late charge.
func (e *BookEntry) Settles() bool {
	return e.Kind == EntrySettle || e.Kind == EntryRefund || e.Kind == EntryLate
}

// Cause is who or what asked for a credit: the admin token's id, the
// console user. It rides in the context of the call that moves the money
// (WithCause) and is written into the credit's ledger entry and book
// entry.
type Cause struct {
	AdminToken string
	UserID     string
}

type causeKey struct{}

// WithCause returns ctx carrying c, for the credits made under it.
func WithCause(ctx context.Context, c Cause) context.Context {
	return context.WithValue(ctx, causeKey{}, c)
}

// CauseOf is the cause ctx carries (zero when none).
func CauseOf(ctx context.Context) Cause {
	c, _ := ctx.Value(causeKey{}).(Cause)
	return c
}

// HoldRecord is an open hold as the store keeps it for recovery.
type HoldRecord struct {
	ID, AccountID, TaskID string
	Amount                money.Nano
}

// TaskBrief is what an audit reads of a task.
type TaskBrief struct {
	ID, AccountID, Status, HoldID string
	CompletedAt                   time.Time
}

// RowBrief is what an audit reads of a log row.
type RowBrief struct {
	ID                           uint64
	AccountID, RequestID, TaskID string
	Cost                         money.Nano
}

// Books is the role of the books: a consistent view of them for an audit.
type Books interface {
	// AuditView opens a read-only view of the books, the wallets, the
	// open holds, the tasks and the rows, all as of one moment, without
	// pausing any write. Close it when done.
	AuditView(ctx context.Context) (BooksView, error)
}

// BooksView is one consistent snapshot of what an audit reads. Each
// sequence yields its records in the order it states, then stops at the
// first error (yielded with a zero record).
type BooksView interface {
	// Entries yields every book entry by Seq.
	Entries(ctx context.Context) iter.Seq2[BookEntry, error]
	// Settlements yields the settle and refund entries by LogID, with at
	// least the fields a row is matched on (Seq, Kind, AccountID,
	// Charge, HoldID, TaskID, LogID).
	Settlements(ctx context.Context) iter.Seq2[BookEntry, error]
	// Wallets yields every wallet by account id.
	Wallets(ctx context.Context) iter.Seq2[Wallet, error]
	// Holds yields the records of the open holds, in no set order.
	Holds(ctx context.Context) iter.Seq2[HoldRecord, error]
	// Tasks yields every task, in no set order.
	Tasks(ctx context.Context) iter.Seq2[TaskBrief, error]
	// Rows yields every log row by id.
	Rows(ctx context.Context) iter.Seq2[RowBrief, error]
	// Live reports whether an owner's lease ran at the snapshot: its
	// holds belong to calls still in flight.
	Live(owner string) bool
	// At is the moment of the snapshot.
	At() time.Time
	Close() error
}
