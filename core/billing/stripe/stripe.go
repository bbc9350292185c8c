// Package stripe is the Stripe Checkout processor of top-ups, on the
// official client (github.com/stripe/stripe-go): a Checkout Session per
// order, in payment mode, carrying the order's id (client_reference_id,
// metadata, and the PaymentIntent's metadata); the webhook's events
// verified with stripe-go's webhook package on the raw body; sessions and
// PaymentIntents read back for reconciliation and receipts.
package stripe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	stripeapi "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/store"
)

// Options configure the processor.
type Options struct {
	// SecretKey is the API key; WebhookSecret the endpoint's signing
	// secret.
	SecretKey, WebhookSecret string
	// APIURL is the API's address; empty is Stripe's.
	APIURL string
	// Tolerance is how old a signature's timestamp may be (default 5m).
	Tolerance  time.Duration
	HTTPClient *http.Client
	Logger     hclog.Logger
}

// Processor is Stripe Checkout.
type Processor struct {
	c         *stripeapi.Client
	origin    string
	secret    string
	tolerance time.Duration
}

// New builds the processor on stripe-go's client, pointed at o.APIURL.
func New(o Options) *Processor {
	if o.Tolerance <= 0 {
		o.Tolerance = webhook.DefaultTolerance
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 80 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	cfg := &stripeapi.BackendConfig{
		HTTPClient: o.HTTPClient, MaxNetworkRetries: stripeapi.Int64(2),
		LeveledLogger: logger{o.Logger.Named("stripe")},
	}
	if o.APIURL != "" {
		cfg.URL = stripeapi.String(o.APIURL)
	}
	c := stripeapi.NewClient(o.SecretKey, stripeapi.WithBackends(stripeapi.NewBackendsWithConfig(cfg)))
	// Stripe's pages are on checkout.stripe.com; a test server's on its own
	// address.
	origin := "https://checkout.stripe.com"
	if u, err := url.Parse(o.APIURL); err == nil && o.APIURL != "" {
		origin = u.Scheme + "://" + u.Host
	}
	return &Processor{c: c, origin: origin, secret: o.WebhookSecret, tolerance: o.Tolerance}
}

// Name implements billing.Processor.
func (p *Processor) Name() string { return "stripe" }

// PageOrigin implements billing.Processor.
func (p *Processor) PageOrigin() string { return p.origin }

// Checkout implements billing.Processor: one Checkout Session per order,
// made with the order's id as the idempotency key, so a retried create
// returns the same session.
func (p *Processor) Checkout(ctx context.Context, r billing.CheckoutRequest) (billing.Checkout, error) {
	o := r.Order
	params := &stripeapi.CheckoutSessionCreateParams{
		Mode:              stripeapi.String(string(stripeapi.CheckoutSessionModePayment)),
		ClientReferenceID: stripeapi.String(o.ID),
		SuccessURL:        stripeapi.String(r.SuccessURL),
		CancelURL:         stripeapi.String(r.CancelURL),
		LineItems: []*stripeapi.CheckoutSessionCreateLineItemParams{{
			Quantity: stripeapi.Int64(1),
			PriceData: &stripeapi.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripeapi.String(o.Currency),
				UnitAmount:  stripeapi.Int64(o.Amount),
				ProductData: &stripeapi.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripeapi.String(r.Description)},
			},
		}},
		PaymentIntentData: &stripeapi.CheckoutSessionCreatePaymentIntentDataParams{
			Metadata: map[string]string{"order_id": o.ID, "account_id": o.AccountID},
		},
	}
	if r.Email != "" {
		params.CustomerEmail = stripeapi.String(r.Email)
	}
	params.AddMetadata("order_id", o.ID)
	params.AddMetadata("account_id", o.AccountID)
	params.SetIdempotencyKey("tollgate-checkout-" + o.ID)
	params.Context = ctx
	s, err := p.c.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return billing.Checkout{}, err
	}
	if s.URL == "" {
		return billing.Checkout{}, fmt.Errorf("stripe: checkout session %s has no url", s.ID)
	}
	return billing.Checkout{SessionID: s.ID, URL: s.URL, ExpiresAt: time.Unix(s.ExpiresAt, 0)}, nil
}

// Event implements billing.Processor: the signature is verified on the
// raw body with the endpoint's secret and the tolerance (stripe-go's
// webhook package), then the event read into what top-ups need.
func (p *Processor) Event(body []byte, h http.Header) (billing.Event, error) {
	ev, err := webhook.ConstructEventWithOptions(body, h.Get("Stripe-Signature"), p.secret,
		webhook.ConstructEventOptions{Tolerance: p.tolerance})
	if err != nil {
		if strings.Contains(err.Error(), "API version") {
			return billing.Event{}, fmt.Errorf("stripe: %w (create the webhook endpoint with API version %s)", err, stripeapi.APIVersion)
		}
		if strings.HasPrefix(err.Error(), "Failed to parse") {
			return billing.Event{}, err
		}
		return billing.Event{}, fmt.Errorf("%w: %v", billing.ErrSignature, err)
	}
	out := billing.Event{ID: ev.ID, Type: string(ev.Type), Kind: billing.KindIgnored}
	if ev.Data == nil {
		return out, nil
	}
	switch ev.Type {
	case stripeapi.EventTypeCheckoutSessionCompleted, stripeapi.EventTypeCheckoutSessionAsyncPaymentSucceeded,
		stripeapi.EventTypeCheckoutSessionAsyncPaymentFailed, stripeapi.EventTypeCheckoutSessionExpired:
		var s stripeapi.CheckoutSession
		if err := json.Unmarshal(ev.Data.Raw, &s); err != nil {
			return out, fmt.Errorf("stripe: event %s: %w", ev.ID, err)
		}
		out = sessionEvent(&s, out)
		switch ev.Type {
		case stripeapi.EventTypeCheckoutSessionCompleted:
			// A completed session is paid, or its payment (a bank debit)
			// is on its way: its own events follow.
			if s.PaymentStatus != stripeapi.CheckoutSessionPaymentStatusPaid {
				out.Kind = billing.KindProcessing
			}
		case stripeapi.EventTypeCheckoutSessionAsyncPaymentSucceeded:
			out.Kind = billing.KindPaid
		case stripeapi.EventTypeCheckoutSessionAsyncPaymentFailed:
			out.Kind = billing.KindFailed
		case stripeapi.EventTypeCheckoutSessionExpired:
			out.Kind = billing.KindExpired
		}
	case stripeapi.EventTypeChargeRefunded:
		var c stripeapi.Charge
		if err := json.Unmarshal(ev.Data.Raw, &c); err != nil {
			return out, fmt.Errorf("stripe: event %s: %w", ev.ID, err)
		}
		out.Kind, out.Amount, out.Currency, out.Refunded = billing.KindRefunded, c.Amount, string(c.Currency), c.AmountRefunded
		out.OrderID = c.Metadata["order_id"]
		if c.PaymentIntent != nil {
			out.PaymentID = c.PaymentIntent.ID
		}
	}
	return out, nil
}

// sessionEvent reads a session into an event: paid when Stripe says so.
func sessionEvent(s *stripeapi.CheckoutSession, out billing.Event) billing.Event {
	out.Kind = billing.KindPaid
	out.OrderID = s.ClientReferenceID
	if id := s.Metadata["order_id"]; out.OrderID == "" {
		out.OrderID = id
	}
	out.SessionID, out.Amount, out.Currency = s.ID, s.AmountTotal, string(s.Currency)
	if s.PaymentIntent != nil {
		out.PaymentID = s.PaymentIntent.ID
	}
	return out
}

// Lookup implements billing.Processor: the session as it stands (paid,
// on its way, expired), then for a paid one its charge's refunds.
func (p *Processor) Lookup(ctx context.Context, o store.Order) ([]billing.Event, error) {
	params := &stripeapi.CheckoutSessionRetrieveParams{}
	params.Context = ctx
	s, err := p.c.V1CheckoutSessions.Retrieve(ctx, o.SessionID, params)
	if err != nil {
		return nil, err
	}
	ev := sessionEvent(s, billing.Event{ID: "reconcile:" + s.ID, Type: "checkout.session (read back)"})
	switch {
	case s.Status == stripeapi.CheckoutSessionStatusExpired:
		ev.Kind = billing.KindExpired
	case s.Status == stripeapi.CheckoutSessionStatusOpen:
		return nil, nil
	case s.PaymentStatus == stripeapi.CheckoutSessionPaymentStatusPaid:
	default:
		// Complete and unpaid: the payment is on its way, or it failed;
		// the PaymentIntent says which.
		ev.Kind = billing.KindProcessing
		if ev.PaymentID != "" {
			pi, err := p.paymentIntent(ctx, ev.PaymentID)
			if err != nil {
				return nil, err
			}
			if pi.Status == stripeapi.PaymentIntentStatusRequiresPaymentMethod || pi.Status == stripeapi.PaymentIntentStatusCanceled {
				ev.Kind = billing.KindFailed
			}
		}
	}
	evs := []billing.Event{ev}
	if ev.Kind == billing.KindPaid && ev.PaymentID != "" {
		pi, err := p.paymentIntent(ctx, ev.PaymentID)
		if err != nil {
			return nil, err
		}
		if c := pi.LatestCharge; c != nil && c.AmountRefunded > 0 {
			evs = append(evs, billing.Event{ID: "reconcile:" + c.ID, Type: "charge (read back)", Kind: billing.KindRefunded,
				OrderID: o.ID, PaymentID: pi.ID, Amount: c.Amount, Currency: string(c.Currency), Refunded: c.AmountRefunded})
		}
	}
	return evs, nil
}

func (p *Processor) paymentIntent(ctx context.Context, id string) (*stripeapi.PaymentIntent, error) {
	params := &stripeapi.PaymentIntentRetrieveParams{}
	params.Context = ctx
	params.AddExpand("latest_charge")
	return p.c.V1PaymentIntents.Retrieve(ctx, id, params)
}

// OrderOf implements billing.Processor: the order id on the PaymentIntent.
func (p *Processor) OrderOf(ctx context.Context, paymentID string) (string, error) {
	pi, err := p.paymentIntent(ctx, paymentID)
	if err != nil {
		if se, ok := err.(*stripeapi.Error); ok && se.HTTPStatusCode == http.StatusNotFound {
			return "", nil
		}
		return "", err
	}
	return pi.Metadata["order_id"], nil
}

// Expire implements billing.Processor.
func (p *Processor) Expire(ctx context.Context, o store.Order) error {
	params := &stripeapi.CheckoutSessionExpireParams{}
	params.Context = ctx
	_, err := p.c.V1CheckoutSessions.Expire(ctx, o.SessionID, params)
	return err
}

// Receipt implements billing.Processor: the receipt of the payment's
// charge.
func (p *Processor) Receipt(ctx context.Context, o store.Order) (string, error) {
	pi, err := p.paymentIntent(ctx, o.PaymentID)
	if err != nil {
		return "", err
	}
	if pi.LatestCharge == nil || pi.LatestCharge.ReceiptURL == "" {
		return "", fmt.Errorf("stripe: payment %s has no receipt", o.PaymentID)
	}
	return pi.LatestCharge.ReceiptURL, nil
}

// logger routes stripe-go's logging to hclog.
type logger struct{ l hclog.Logger }

func (l logger) Debugf(f string, v ...any) { l.l.Debug(fmt.Sprintf(f, v...)) }
func (l logger) Infof(f string, v ...any)  { l.l.Debug(fmt.Sprintf(f, v...)) }
func (l logger) Warnf(f string, v ...any)  { l.l.Warn(fmt.Sprintf(f, v...)) }
func (l logger) Errorf(f string, v ...any) { l.l.Warn(fmt.Sprintf(f, v...)) }

var _ billing.Processor = (*Processor)(nil)
