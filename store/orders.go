package store

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Order statuses: a card top-up's life.
const (
	// OrderPending: made, its payment page open, or its payment on its way.
	OrderPending = "pending"
	// OrderPaid: the processor took the money and the credits are in the
	// wallet (a partial refund leaves it paid, with Refunded set).
	OrderPaid = "paid"
	// OrderFailed: the payment failed (a delayed payment refused).
	OrderFailed = "failed"
	// OrderExpired: the payment page closed unpaid.
	OrderExpired = "expired"
	// OrderRefunded: refunded in full; its credits were taken back.
	OrderRefunded = "refunded"
)

// OrderStatuses are the statuses, in the order of an order's life.
var OrderStatuses = []string{OrderPending, OrderPaid, OrderFailed, OrderExpired, OrderRefunded}

// ErrChanged refuses a write made from a record another write has changed
// since it was read (UpdateOrder's compare-and-set). Nothing changes.
var ErrChanged = errors.New("store: the record changed since it was read")

// Order is a card top-up: the credits an account buys, the price the
// processor charges for them, and what the processor said of its payment.
// It is not a call: it never has a row in the usage log.
type Order struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	// UserID is the console user who started it.
	UserID string `json:"user_id,omitempty"`
	// Credits are what a paid order adds to the wallet.
	Credits money.Nano `json:"credits"`
	// Amount is the price in the currency's smallest unit (cents), as
	// the processor counts it; Currency its lower-case ISO 4217 code.
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Processor string `json:"processor"`
	Status    string `json:"status"`
	// SessionID is the processor's checkout (Stripe: cs_...), PaymentID
	// its payment (Stripe: pi_...); OrderByRef finds an order by either.
	SessionID string `json:"session_id,omitempty"`
	PaymentID string `json:"payment_id,omitempty"`
	// PaymentURL is the processor's page where the order is paid.
	PaymentURL string `json:"payment_url,omitempty"`
	// ReceiptURL is the processor's receipt of a paid order.
	ReceiptURL string `json:"receipt_url,omitempty"`
	// Awaiting: the checkout is done and its payment is on its way (a
	// bank debit); the order is still pending.
	Awaiting bool `json:"awaiting,omitempty"`
	// Refunded is what the processor refunded so far (smallest unit), and
	// Debited the credits those refunds took back from the wallet.
	Refunded int64      `json:"refunded,omitempty"`
	Debited  money.Nano `json:"debited,omitempty"`
	// Problem is the last event refused for this order (an amount or a
	// currency that is not the order's), for the operator.
	Problem   string     `json:"problem,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	PaidAt    *time.Time `json:"paid_at,omitempty"`
	// Version counts the order's writes: UpdateOrder's compare-and-set.
	Version int64 `json:"version"`
}

// OrderQuery selects orders for ListOrders.
type OrderQuery struct {
	// AccountID limits the list to one account; "" lists every account's.
	AccountID string
	// Statuses keeps the orders in one of them; none keeps all.
	Statuses []string
	// Since keeps the orders created at or after it (zero: all).
	Since time.Time
	// Limit caps the list (0 or above OrderListLimit: OrderListLimit).
	Limit int
}

// Orders is the role of card top-ups. An order's change and the money it
// moves are one step: UpdateOrder writes both or neither, and its
// compare-and-set on Version makes a repeated or concurrent change (two
// instances handling one processor event) happen once.
type Orders interface {
	// CreateOrder stores a new order with Version 1: ErrExists for a taken
	// id, ErrNotFound for an unknown account.
	CreateOrder(ctx context.Context, o Order) error
	GetOrder(ctx context.Context, id string) (Order, error)
	// OrderByRef finds the order whose SessionID or PaymentID is ref.
	OrderByRef(ctx context.Context, ref string) (Order, error)
	// ListOrders lists orders newest first.
	ListOrders(ctx context.Context, q OrderQuery) ([]Order, error)
	// UpdateOrder replaces the order next.ID, read at next.Version, and
	// adds credit (negative for a refund's debit; the balance may go below
	// zero) to its account's wallet through the wallet's credit path: a
	// ledger entry with note naming the order. Both happen in one step, or
	// nothing does: ErrChanged when the stored order is no longer at
	// next.Version, ErrNotFound for an unknown order, ErrOutOfRange as
	// Credit. On success next.Version is the new version. The order's
	// account never changes.
	UpdateOrder(ctx context.Context, next *Order, credit money.Nano, note string) error
}

// OrderListLimit caps ListOrders when the query sets no limit.
const OrderListLimit = 10000
