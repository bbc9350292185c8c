package billing

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// Processor is a card payment processor: it makes an order's payment page,
// verifies and reads the events it sends, and answers what it knows of an
// order's payment (reconciliation). Stripe Checkout is one
// (core/billing/stripe); another processor is another implementation.
type Processor interface {
	// Name is the processor's name, recorded on each order.
	Name() string
	// PageOrigin is where its payment pages are (scheme://host): the
	// console's top-up form is sent on there.
	PageOrigin() string
	// Checkout makes the payment page of an order. Called again for the
	// same order it returns the same page (an idempotent create).
	Checkout(ctx context.Context, c CheckoutRequest) (Checkout, error)
	// Event verifies a delivery's signature over its raw body (with the
	// endpoint's secret and a timestamp tolerance) and reads the event:
	// ErrSignature when it cannot be verified.
	Event(body []byte, header http.Header) (Event, error)
	// Lookup reads an order's payment as the processor has it now, as the
	// events its state implies (reconciliation): none while it waits.
	Lookup(ctx context.Context, o store.Order) ([]Event, error)
	// OrderOf is the order id the processor keeps on a payment, "" when
	// the payment is not one of this gateway's.
	OrderOf(ctx context.Context, paymentID string) (string, error)
	// Expire closes an order's unpaid payment page, so it cannot be paid
	// any more (the person went back without paying).
	Expire(ctx context.Context, o store.Order) error
	// Receipt is the link to a paid order's receipt.
	Receipt(ctx context.Context, o store.Order) (string, error)
}

// ErrSignature refuses a delivery whose signature does not verify: a
// wrong secret, a body changed on the way, or a timestamp outside the
// tolerance.
var ErrSignature = errors.New("billing: the event's signature does not verify")

// CheckoutRequest asks for an order's payment page.
type CheckoutRequest struct {
	Order store.Order
	// Description names what is bought, as the page shows it.
	Description string
	// Email fills the page's email field.
	Email string
	// SuccessURL and CancelURL are where the page sends the person back.
	SuccessURL, CancelURL string
}

// Checkout is an order's payment page.
type Checkout struct {
	SessionID string
	URL       string
	ExpiresAt time.Time
}

// Kind is what an event says of an order's payment.
type Kind string

// The kinds of events.
const (
	// KindPaid: the payment succeeded.
	KindPaid Kind = "paid"
	// KindProcessing: the checkout is done and its payment on its way (a
	// bank debit): the order waits.
	KindProcessing Kind = "processing"
	// KindFailed: the payment failed.
	KindFailed Kind = "failed"
	// KindExpired: the payment page closed unpaid.
	KindExpired Kind = "expired"
	// KindRefunded: the payment was refunded, Refunded in all so far.
	KindRefunded Kind = "refunded"
	// KindIgnored: an event of no concern to top-ups.
	KindIgnored Kind = "ignored"
)

// Event is a processor's event, read into what top-ups need.
type Event struct {
	// ID and Type are the processor's (for the logs).
	ID, Type string
	Kind     Kind
	// OrderID is the order the processor carries on the payment ("" when
	// the event does not say: SessionID or PaymentID find it).
	OrderID   string
	SessionID string
	PaymentID string
	// Amount and Currency are what the processor charged (smallest unit).
	Amount   int64
	Currency string
	// Refunded is what was refunded in all, for KindRefunded.
	Refunded int64
}
