package console

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The billing page ({billing_url}, owners only): the wallet, the top-up
// form with its price in the processor's currency, the account's top-ups
// with their states and receipts, and the other credits (the sign-up
// credit, the operator's). A top-up is paid on the processor's page; only
// the processor's signed events credit it (core/billing).

type billingData struct {
	Wallet store.Wallet
	// TopUps is nil when the gateway takes no card payments.
	TopUps  *topUps
	Orders  []store.Order
	Ledger  []store.LedgerEntry
	Focus   string // the order the person came back from
	Entered string
}

type topUps struct {
	Currency, Minimum, Maximum, Rate string
	Presets                          []preset
	Processor                        string
}

type preset struct{ Credits, Price string }

var processorNames = map[string]string{"stripe": "Stripe"}

// Price is an order's price as the page shows it.
func (billingData) Price(o store.Order) string { return billing.FormatAmount(o.Amount, o.Currency) }

// Refund is what was refunded of an order, "" for nothing.
func (billingData) Refund(o store.Order) string {
	if o.Refunded == 0 {
		return ""
	}
	return billing.FormatAmount(o.Refunded, o.Currency)
}

func (c *Console) billingPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	return c.showBilling(w, r, v, http.StatusOK, "", "")
}

// showBilling renders the page, with a refused form's problem and entry.
func (c *Console) showBilling(w http.ResponseWriter, r *http.Request, v *visit, status int, problem, entered string) error {
	if err := needOwner(v); err != nil {
		return err
	}
	ctx := r.Context()
	wal, err := c.o.Store.GetWallet(ctx, v.User.AccountID)
	if err != nil {
		return err
	}
	led, err := c.o.Store.ListLedger(ctx, v.User.AccountID)
	if err != nil {
		return err
	}
	led = slices.DeleteFunc(led, func(e store.LedgerEntry) bool { return e.OrderID != "" })
	slices.Reverse(led)
	d := billingData{Wallet: wal, Ledger: led, Focus: r.URL.Query().Get("order"), Entered: entered}
	vw := view{Section: "billing", Title: "Billing", Problem: problem}
	if b := c.o.Billing; b != nil {
		if d.Orders, err = b.Orders(ctx, v.User.AccountID, 200); err != nil {
			return err
		}
		d.TopUps = c.topUps(b)
		// The top-up form posts here and is sent on to the processor's
		// page: the page's policy lets forms go there.
		w.Header().Set("Content-Security-Policy", strings.Replace(w.Header().Get("Content-Security-Policy"),
			"form-action 'self'", "form-action 'self' "+b.CheckoutOrigin(), 1))
		if o := d.Focus; o != "" && problem == "" {
			vw.Notice = c.returnNotice(d.Orders, o, r.URL.Query().Get("back"))
		}
	}
	vw.Data = d
	return c.render(w, v, status, "billing", "", vw)
}

func (c *Console) topUps(b *billing.Service) *topUps {
	cfg := b.Config()
	t := &topUps{Currency: strings.ToUpper(cfg.Currency), Minimum: cfg.Minimum.String(), Processor: processorNames[b.ProcessorName()]}
	if t.Processor == "" {
		t.Processor = "the payment processor"
	}
	if cfg.Maximum != 0 {
		t.Maximum = cfg.Maximum.String()
	}
	t.Rate = "1 " + t.Currency + " buys " + cfg.CreditsPerUnit.String() + " credits"
	for _, p := range cfg.Presets {
		if q, err := b.Price(p); err == nil {
			t.Presets = append(t.Presets, preset{Credits: p.String(), Price: billing.FormatAmount(q.Amount, q.Currency)})
		}
	}
	return t
}

// returnNotice says how the order the person came back from stands.
func (c *Console) returnNotice(orders []store.Order, id, back string) string {
	for _, o := range orders {
		if o.ID != id {
			continue
		}
		switch {
		case o.Status == store.OrderPaid:
			return "Paid: " + o.Credits.String() + " credits were added to your balance."
		case back == "cancelled":
			return "The payment was cancelled; nothing was charged."
		case o.Status == store.OrderPending && o.Awaiting:
			return "Your payment is on its way; the credits are added when the processor confirms it."
		case o.Status == store.OrderPending:
			return "Waiting for the processor to confirm your payment; this page shows the credits once it does."
		case o.Status == store.OrderFailed:
			return "The payment failed; nothing was charged."
		}
	}
	return ""
}

// startTopUp checks the amount (the minimum is the server's rule, whatever
// the form let through), makes the order and its payment page, and sends
// the person there.
func (c *Console) startTopUp(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	b := c.o.Billing
	if b == nil {
		return apierr.New(apierr.NotFound, "this gateway takes no card payments")
	}
	entered := strings.TrimSpace(r.PostFormValue("credits"))
	if p := r.PostFormValue("preset"); p != "" {
		entered = p
	}
	credits, err := money.Parse(entered)
	if err != nil || entered == "" {
		return c.showBilling(w, r, v, http.StatusBadRequest, "Write the credits to buy as a number, like 404.4.", entered)
	}
	base := v.consoleBase() + Prefix + "billing"
	o, err := b.Start(r.Context(), billing.TopUp{User: v.User, Credits: credits,
		SuccessURL: base + "?order={ORDER}&back=paid", CancelURL: base + "/cancel?order={ORDER}"})
	if err != nil {
		if e := apierr.As(err); e.Status < 500 || e.Status == http.StatusBadGateway {
			return c.showBilling(w, r, v, e.Status, sentence(e.Message), entered)
		}
		return err
	}
	http.Redirect(w, r, o.PaymentURL, http.StatusSeeOther)
	return nil
}

// priceFragment is the price of the credits typed so far (htmx).
func (c *Console) priceFragment(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	b := c.o.Billing
	if b == nil {
		return apierr.New(apierr.NotFound, "this gateway takes no card payments")
	}
	credits, err := money.Parse(strings.TrimSpace(r.URL.Query().Get("credits")))
	msg := ""
	switch q, perr := b.Price(credits); {
	case err != nil:
		msg = "Write a number of credits."
	case perr != nil:
		msg = sentence(apierr.As(perr).Message)
	default:
		msg = "You pay " + billing.FormatAmount(q.Amount, q.Currency) + "."
	}
	_, err = w.Write([]byte(html.EscapeString(msg)))
	return err
}

// cancelTopUp is where the processor's page sends a person who went back
// without paying: the page is closed at the processor, so it cannot be
// paid later, and its event expires the order.
func (c *Console) cancelTopUp(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	id := r.URL.Query().Get("order")
	if c.o.Billing != nil && id != "" {
		if _, err := c.o.Billing.Cancel(r.Context(), v.User.AccountID, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	http.Redirect(w, r, Prefix+"billing?"+url.Values{"order": {id}, "back": {"cancelled"}}.Encode(), http.StatusSeeOther)
	return nil
}

// receipt sends the person to a paid top-up's receipt at the processor.
func (c *Console) receipt(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	if c.o.Billing == nil {
		return store.ErrNotFound
	}
	u, err := c.o.Billing.Receipt(r.Context(), v.User.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
	return nil
}
