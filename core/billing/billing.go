// Package billing is card top-ups: a person buys credits at the console's
// billing page, pays on the processor's page, and the processor's signed
// event credits the wallet, exactly once. An order (store.Orders) is made
// before the payment page; only the processor's events (the webhook) or
// the operator's reconciliation against the processor change it, and each
// change is one store step with the money it moves, a compare-and-set on
// the order's version, so a repeated, late, out-of-order or concurrent
// event changes nothing twice. A top-up is not a call: it has no row in
// the usage log (PRODUCT.md §7).
package billing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Options are the service's dependencies.
type Options struct {
	Config    config.Billing
	Store     store.Store
	Processor Processor
	Logger    hclog.Logger
	Now       func() time.Time
}

// Service runs top-ups.
type Service struct {
	cfg config.Billing
	st  store.Store
	p   Processor
	log hclog.Logger
	now func() time.Time
}

// New returns the service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Service{cfg: o.Config, st: o.Store, p: o.Processor, log: o.Logger.Named("billing"), now: o.Now}
}

// Config is the billing block the service runs.
func (s *Service) Config() config.Billing { return s.cfg }

// CheckoutOrigin is where the processor's payment pages are.
func (s *Service) CheckoutOrigin() string { return s.p.PageOrigin() }

// ProcessorName is the processor's name.
func (s *Service) ProcessorName() string { return s.p.Name() }

func newOrderID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ord_" + hex.EncodeToString(b[:])
}

// TopUp is a top-up to start: who buys how many credits, and where the
// processor's page sends them back (absolute URLs; {ORDER} in them is
// replaced by the order's id).
type TopUp struct {
	User                  store.User
	Credits               money.Nano
	SuccessURL, CancelURL string
}

// Start makes a pending order for t and its payment page, and returns the
// order with the page's address. The price is checked here, whatever the
// form said.
func (s *Service) Start(ctx context.Context, t TopUp) (store.Order, error) {
	q, err := s.Price(t.Credits)
	if err != nil {
		return store.Order{}, err
	}
	now := s.now().UTC()
	o := store.Order{
		ID: newOrderID(), AccountID: t.User.AccountID, UserID: t.User.ID, Credits: q.Credits,
		Amount: q.Amount, Currency: q.Currency, Processor: s.p.Name(), Status: store.OrderPending,
		CreatedAt: now, UpdatedAt: now,
	}
	if err := s.st.CreateOrder(ctx, o); err != nil {
		return o, err
	}
	o.Version = 1
	co, err := s.p.Checkout(ctx, CheckoutRequest{
		Order: o, Description: fmt.Sprintf("%s credits", q.Credits), Email: t.User.Email,
		SuccessURL: withOrder(t.SuccessURL, o.ID), CancelURL: withOrder(t.CancelURL, o.ID),
	})
	if err != nil {
		s.log.Error("the processor refused a checkout", "order_id", o.ID, "error", err)
		o.Status, o.Problem, o.UpdatedAt = store.OrderFailed, "the processor did not make the payment page: "+err.Error(), s.now().UTC()
		if uerr := s.st.UpdateOrder(context.WithoutCancel(ctx), &o, 0, ""); uerr != nil {
			s.log.Error("recording a failed checkout", "order_id", o.ID, "error", uerr)
		}
		return o, &apierr.Error{Status: 502, Code: apierr.UpstreamError,
			Message: "the payment processor could not be reached; nothing was charged, try again in a moment"}
	}
	o.SessionID, o.PaymentURL, o.UpdatedAt = co.SessionID, co.URL, s.now().UTC()
	if err := s.st.UpdateOrder(ctx, &o, 0, ""); err != nil {
		return o, err
	}
	s.log.Info("top-up started", "order_id", o.ID, "account_id", o.AccountID, "credits", o.Credits.String(),
		"amount", FormatAmount(o.Amount, o.Currency), "session_id", o.SessionID)
	return o, nil
}

func withOrder(u, id string) string { return strings.ReplaceAll(u, "{ORDER}", id) }

// Orders are an account's orders, newest first.
func (s *Service) Orders(ctx context.Context, accountID string, limit int) ([]store.Order, error) {
	return s.st.ListOrders(ctx, store.OrderQuery{AccountID: accountID, Limit: limit})
}

// Order is one of an account's orders (ErrNotFound for another's).
func (s *Service) Order(ctx context.Context, accountID, id string) (store.Order, error) {
	o, err := s.st.GetOrder(ctx, id)
	if err == nil && o.AccountID != accountID {
		err = store.ErrNotFound
	}
	return o, err
}

// Cancel closes the payment page of an account's pending order: the person
// came back without paying. The order itself changes when the processor
// says the page expired.
func (s *Service) Cancel(ctx context.Context, accountID, id string) (store.Order, error) {
	o, err := s.Order(ctx, accountID, id)
	if err != nil || o.Status != store.OrderPending || o.Awaiting || o.SessionID == "" {
		return o, err
	}
	if err := s.p.Expire(ctx, o); err != nil {
		// The page stays open until it expires by itself; nothing is lost.
		s.log.Warn("closing a payment page", "order_id", o.ID, "error", err)
	}
	return o, nil
}

// Receipt is the receipt link of an account's paid order: the one
// recorded with it, else the processor's, then recorded.
func (s *Service) Receipt(ctx context.Context, accountID, id string) (string, error) {
	o, err := s.Order(ctx, accountID, id)
	if err != nil {
		return "", err
	}
	if o.ReceiptURL != "" {
		return o.ReceiptURL, nil
	}
	if o.PaymentID == "" || (o.Status != store.OrderPaid && o.Status != store.OrderRefunded) {
		return "", apierr.New(apierr.InvalidRequest, "this top-up has no receipt: it was not paid")
	}
	u, err := s.recordReceipt(ctx, o)
	if err != nil {
		return "", &apierr.Error{Status: 502, Code: apierr.UpstreamError, Message: "the payment processor did not give the receipt; try again in a moment"}
	}
	return u, nil
}

// recordReceipt asks the processor for a paid order's receipt and writes
// it on the order (no money moves; a lost race leaves the other's).
func (s *Service) recordReceipt(ctx context.Context, o store.Order) (string, error) {
	u, err := s.p.Receipt(ctx, o)
	if err != nil || u == "" {
		err = errors.Join(err, errors.New("no receipt"))
		// The credit stands; the receipt is asked again on a repeat of
		// the event or when the person opens it.
		s.log.Warn("the processor gave no receipt", "order_id", o.ID, "error", err)
		return "", err
	}
	for range 4 {
		o.ReceiptURL = u
		err = s.st.UpdateOrder(ctx, &o, 0, "")
		if !errors.Is(err, store.ErrChanged) {
			break
		}
		if o, err = s.st.GetOrder(ctx, o.ID); err != nil || o.ReceiptURL != "" {
			break
		}
	}
	if err != nil {
		s.log.Warn("recording a receipt", "order_id", o.ID, "error", err)
	}
	return u, nil
}
