package billing

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// Reconciliation asks the processor how each open order stands and applies
// what it says through Apply, as if the events had arrived: an order paid
// at the processor whose event was lost is credited, once; a refund missed
// is debited. Orders already settled either way (failed, expired, refunded
// in full) are not asked about.

// ReconcileQuery selects the orders to check.
type ReconcileQuery struct {
	// OrderID checks one order, whatever its age and status.
	OrderID string
	// Since checks the pending and paid orders made since (zero: a week).
	Since time.Time
}

// Reconciled is one order's check.
type Reconciled struct {
	OrderID   string    `json:"order_id"`
	AccountID string    `json:"account_id"`
	Before    string    `json:"before"`
	After     string    `json:"after"`
	Outcomes  []Outcome `json:"outcomes"`
	Error     string    `json:"error,omitempty"`
}

// DefaultReconcileWindow is how far back a reconciliation looks by
// default.
const DefaultReconcileWindow = 7 * 24 * time.Hour

// Reconcile checks the orders q selects against the processor.
func (s *Service) Reconcile(ctx context.Context, q ReconcileQuery) ([]Reconciled, error) {
	var orders []store.Order
	if q.OrderID != "" {
		o, err := s.st.GetOrder(ctx, q.OrderID)
		if err != nil {
			return nil, err
		}
		orders = []store.Order{o}
	} else {
		since := q.Since
		if since.IsZero() {
			since = s.now().Add(-DefaultReconcileWindow)
		}
		var err error
		orders, err = s.st.ListOrders(ctx, store.OrderQuery{Statuses: []string{store.OrderPending, store.OrderPaid}, Since: since})
		if err != nil {
			return nil, err
		}
	}
	out := make([]Reconciled, 0, len(orders))
	for _, o := range orders {
		rec := Reconciled{OrderID: o.ID, AccountID: o.AccountID, Before: o.Status, After: o.Status, Outcomes: []Outcome{}}
		if o.SessionID == "" {
			rec.Error = "the order has no payment page at the processor"
			out = append(out, rec)
			continue
		}
		evs, err := s.p.Lookup(ctx, o)
		for _, ev := range evs {
			if err != nil {
				break
			}
			var res Outcome
			res, err = s.Apply(ctx, ev, "reconcile")
			if errors.Is(err, ErrNotPaidYet) {
				err = nil
			}
			if err == nil {
				rec.Outcomes = append(rec.Outcomes, res)
			}
		}
		if err != nil {
			rec.Error = err.Error()
		}
		if now, gerr := s.st.GetOrder(ctx, o.ID); gerr == nil {
			rec.After = now.Status
		}
		out = append(out, rec)
	}
	return out, nil
}
