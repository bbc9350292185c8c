package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Applying an event: read the order, decide its next state and the money
// that moves, write both in one store step from the version read. A
// concurrent writer (the same event on another instance, or delivered
// twice at once) makes the write fail with store.ErrChanged; the event is
// then decided again against what that writer left, which is nothing to
// do for the same event. So each event changes the books at most once,
// whatever the order, the repeats or the concurrency of deliveries.

// Outcome is what an event did.
type Outcome struct {
	OrderID string `json:"order_id,omitempty"`
	// Result: "credited", "debited", "changed" (no money), "unchanged"
	// (already so: a repeat or a late event), "refused" (its amount or
	// currency is not the order's), "unknown" (no order of this gateway).
	Result string     `json:"result"`
	Status string     `json:"status,omitempty"`
	Moved  money.Nano `json:"moved,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// ErrNotPaidYet refuses a refund of an order not paid in the books yet:
// its payment's event has not arrived. The processor sends it again later.
var ErrNotPaidYet = errors.New("billing: the refunded order is not paid in the books yet; its payment's event comes first")

// maxRaces bounds how often an event is decided again after losing a race.
const maxRaces = 8

// Apply applies a processor's event to its order. source names where it
// came from (the webhook, a reconciliation) in the order's log line.
func (s *Service) Apply(ctx context.Context, ev Event, source string) (Outcome, error) {
	if ev.Kind == KindIgnored {
		return Outcome{Result: "unchanged", Reason: "not an event of top-ups"}, nil
	}
	for range maxRaces {
		o, err := s.find(ctx, ev)
		if errors.Is(err, store.ErrNotFound) {
			return Outcome{OrderID: ev.OrderID, Result: "unknown", Reason: "no order of this gateway"}, nil
		}
		if err != nil {
			return Outcome{}, err
		}
		next, credit, out, err := s.decide(o, ev)
		if err != nil {
			return out, err
		}
		if out.Result == "unchanged" {
			if ev.Kind == KindPaid && o.Status == store.OrderPaid && o.ReceiptURL == "" && o.PaymentID != "" {
				// A repeat of the payment's event whose first delivery
				// ended before its receipt was recorded.
				_, _ = s.recordReceipt(ctx, o)
			}
			return out, nil
		}
		note := ""
		if credit != 0 {
			note = fmt.Sprintf("card top-up %s (%s)", o.ID, FormatAmount(o.Amount, o.Currency))
			if credit < 0 {
				note = fmt.Sprintf("refund of card top-up %s (%s refunded)", o.ID, FormatAmount(next.Refunded, o.Currency))
			}
		}
		err = s.st.UpdateOrder(ctx, &next, credit, note)
		if errors.Is(err, store.ErrChanged) {
			continue
		}
		if err != nil {
			return Outcome{}, err
		}
		level := s.log.Info
		if out.Result == "refused" {
			level = s.log.Error
		}
		level("top-up event applied", "order_id", o.ID, "account_id", o.AccountID, "event_id", ev.ID, "event", ev.Type,
			"source", source, "result", out.Result, "status", next.Status, "moved", credit.String(), "reason", out.Reason)
		if credit > 0 && next.ReceiptURL == "" && next.PaymentID != "" {
			// The credit is durable; the receipt is for the history.
			_, _ = s.recordReceipt(ctx, next)
		}
		return out, nil
	}
	return Outcome{}, fmt.Errorf("billing: order of event %s changed %d times while it was applied", ev.ID, maxRaces)
}

// find is the event's order: by the id it carries, else its session, else
// its payment (a refund), else the id the processor keeps on the payment.
func (s *Service) find(ctx context.Context, ev Event) (store.Order, error) {
	if ev.OrderID != "" {
		return s.st.GetOrder(ctx, ev.OrderID)
	}
	for _, ref := range []string{ev.SessionID, ev.PaymentID} {
		if ref == "" {
			continue
		}
		o, err := s.st.OrderByRef(ctx, ref)
		if !errors.Is(err, store.ErrNotFound) {
			return o, err
		}
	}
	if ev.PaymentID != "" {
		id, err := s.p.OrderOf(ctx, ev.PaymentID)
		if err != nil {
			return store.Order{}, fmt.Errorf("billing: asking the processor whose payment %s is: %w", ev.PaymentID, err)
		}
		if id != "" {
			return s.st.GetOrder(ctx, id)
		}
	}
	return store.Order{}, store.ErrNotFound
}

// decide is the order after ev and the money it moves. It is a pure
// function of the two, so deciding again after a lost race is safe.
func (s *Service) decide(o store.Order, ev Event) (store.Order, money.Nano, Outcome, error) {
	next := o
	now := s.now().UTC()
	next.UpdatedAt = now
	out := Outcome{OrderID: o.ID, Result: "unchanged", Status: o.Status}
	if ev.Kind != KindExpired && ev.Kind != KindFailed && (ev.Amount != o.Amount || ev.Currency != o.Currency) {
		why := fmt.Sprintf("event %s (%s) says %s, but the order is %s: refused, nothing credited",
			ev.ID, ev.Type, FormatAmount(ev.Amount, ev.Currency), FormatAmount(o.Amount, o.Currency))
		out.Reason = why
		if o.Problem == why {
			return o, 0, out, nil
		}
		next.Problem = why
		out.Result = "refused"
		return next, 0, out, nil
	}
	if next.PaymentID == "" && ev.PaymentID != "" {
		next.PaymentID = ev.PaymentID
	}
	var credit money.Nano
	switch ev.Kind {
	case KindPaid:
		if o.Status == store.OrderPaid || o.Status == store.OrderRefunded {
			return o, 0, out, nil
		}
		// A failed or expired order that the processor says is paid was
		// paid: the money was taken, so the credits are owed.
		next.Status, next.Awaiting, next.PaidAt, credit = store.OrderPaid, false, &now, o.Credits
		out.Result, out.Moved = "credited", credit
	case KindProcessing:
		if o.Status != store.OrderPending || o.Awaiting {
			return o, 0, out, nil
		}
		next.Awaiting = true
		out.Result = "changed"
	case KindFailed, KindExpired:
		if o.Status != store.OrderPending {
			return o, 0, out, nil
		}
		next.Status, next.Awaiting = store.OrderFailed, false
		if ev.Kind == KindExpired {
			next.Status = store.OrderExpired
		}
		out.Result = "changed"
	case KindRefunded:
		if o.Status != store.OrderPaid && o.Status != store.OrderRefunded {
			return o, 0, out, ErrNotPaidYet
		}
		if ev.Refunded > o.Amount {
			out.Result, out.Reason = "refused", fmt.Sprintf("event %s refunds %s of a %s payment", ev.ID,
				FormatAmount(ev.Refunded, ev.Currency), FormatAmount(o.Amount, o.Currency))
			next.Problem = out.Reason
			return next, 0, out, nil
		}
		if ev.Refunded <= o.Refunded {
			return o, 0, out, nil
		}
		debit := debitFor(o.Credits, o.Amount, ev.Refunded)
		next.Refunded, next.Debited = ev.Refunded, debit
		if ev.Refunded == o.Amount {
			next.Status = store.OrderRefunded
		}
		credit, _ = money.Sub(o.Debited, debit)
		out.Result, out.Moved = "debited", credit
	default:
		return o, 0, Outcome{OrderID: o.ID, Result: "unchanged", Reason: "not an event of top-ups"}, nil
	}
	if next.PaymentID != o.PaymentID && out.Result == "unchanged" {
		out.Result = "changed"
	}
	out.Status = next.Status
	return next, credit, out, nil
}
