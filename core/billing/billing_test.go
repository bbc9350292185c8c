package billing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/core/billing/stripe"
	"github.com/tollgate-gw/tollgate/core/billing/stripesim"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

const (
	secretKey  = "sk_test_billing"
	hookSecret = "whsec_billing"
)

// rig is the service on a Badger store, its stripe processor (stripe-go)
// pointed at the simulator, and the webhook served to the simulator.
type rig struct {
	t   *testing.T
	st  store.Store
	svc *billing.Service
	sim *stripesim.Server
}

func newRig(t *testing.T) *rig {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sim := stripesim.New(stripesim.Options{SecretKey: secretKey, WebhookSecret: hookSecret,
		Retry: []time.Duration{20 * time.Millisecond, 50 * time.Millisecond}, Attempts: 200})
	simSrv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); simSrv.Close() })
	sim.SetBaseURL(simSrv.URL)
	cfg := config.DefaultBilling()
	cfg.Enabled = true
	p := stripe.New(stripe.Options{SecretKey: secretKey, WebhookSecret: hookSecret, APIURL: simSrv.URL})
	svc := billing.New(billing.Options{Config: cfg, Store: st, Processor: p})
	hook := httptest.NewServer(http.HandlerFunc(svc.ServeWebhook))
	t.Cleanup(hook.Close)
	sim.SetWebhookURL(hook.URL)
	a := store.Account{ID: "acct", Name: "a", Status: store.AccountActive, CreatedAt: time.Now()}
	if err := st.CreateAccount(t.Context(), a, money.MustParse("121.32"), "sign-up"); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, st: st, svc: svc, sim: sim}
}

// start begins a top-up of credits and returns the order and its session.
func (r *rig) start(credits string) (store.Order, string) {
	r.t.Helper()
	o, err := r.svc.Start(r.t.Context(), billing.TopUp{
		User: store.User{ID: "u", AccountID: "acct", Email: "ada@example.com"}, Credits: money.MustParse(credits),
		SuccessURL: "http://console.example/ok?order={ORDER}", CancelURL: "http://console.example/back?order={ORDER}",
	})
	if err != nil {
		r.t.Fatalf("start %s: %v", credits, err)
	}
	sid := r.sim.SessionOf(o.ID)
	if sid == "" || sid != o.SessionID {
		r.t.Fatalf("the order's session %q is not the simulator's %q", o.SessionID, sid)
	}
	return o, sid
}

func (r *rig) balance() money.Nano {
	w, err := r.st.GetWallet(r.t.Context(), "acct")
	if err != nil {
		r.t.Fatal(err)
	}
	return w.Balance
}

// settled waits until every event was answered 2xx and the order is in
// status.
func (r *rig) settled(id, status string) store.Order {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, err := r.st.GetOrder(r.t.Context(), id)
		done := err == nil && o.Status == status
		for _, e := range r.sim.Events() {
			done = done && e.Delivered
		}
		if done {
			return o
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("order %s is %+v (%v), want %s with every event delivered: %+v", id, o, err, status, r.sim.Events())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var trial = money.MustParse("121.32")

func add(a, b money.Nano) money.Nano { n, _ := money.Add(a, b); return n }

func TestPayCreditsOnce(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		faults stripesim.Faults
	}{
		{"delivered once", stripesim.Faults{}},
		{"delivered twice at once", stripesim.Faults{Twice: true}},
		{"delivered late", stripesim.Faults{Delay: 200 * time.Millisecond}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := newRig(t)
			r.sim.SetFaults(tc.faults)
			o, sid := r.start("404.4")
			if o.Amount != 40440 || o.Currency != "usd" {
				t.Fatalf("price %d %s", o.Amount, o.Currency)
			}
			if err := r.sim.Pay(sid); err != nil {
				t.Fatal(err)
			}
			got := r.settled(o.ID, store.OrderPaid)
			if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
				t.Fatalf("balance %s", b)
			}
			if got.ReceiptURL == "" || got.PaymentID == "" {
				t.Fatalf("paid order without its receipt or payment: %+v", got)
			}
			// Every event sent again: nothing more.
			for _, e := range r.sim.Events() {
				r.sim.Resend(e.ID)
			}
			time.Sleep(100 * time.Millisecond)
			r.settled(o.ID, store.OrderPaid)
			if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
				t.Fatalf("balance %s after every event again", b)
			}
		})
	}
}

func TestBadSignatureIsRefusedUntilFixed(t *testing.T) {
	for _, f := range []stripesim.Faults{{BadSignature: true}, {Stale: true}} {
		r := newRig(t)
		r.sim.SetFaults(f)
		o, sid := r.start("500")
		if err := r.sim.Pay(sid); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(r.sim.Events()) == 0 || len(r.sim.Events()[0].Attempts) < 2 {
			if time.Now().After(deadline) {
				t.Fatal("no attempts")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if a := r.sim.Events()[0].Attempts[0]; a.Status != 400 {
			t.Fatalf("a delivery signed wrong got %d %s", a.Status, a.Body)
		}
		if b := r.balance(); b != trial {
			t.Fatalf("credited on a bad signature: %s", b)
		}
		r.sim.SetFaults(stripesim.Faults{})
		r.settled(o.ID, store.OrderPaid)
		if b := r.balance(); b != add(trial, money.Credits(500)) {
			t.Fatalf("balance %s", b)
		}
	}
}

func TestWrongAmountIsRefused(t *testing.T) {
	r := newRig(t)
	r.sim.SetFaults(stripesim.Faults{WrongAmount: true})
	o, sid := r.start("404.4")
	if err := r.sim.Pay(sid); err != nil {
		t.Fatal(err)
	}
	got := r.settled(o.ID, store.OrderPending)
	if got.Problem == "" {
		t.Fatalf("the refused event left no problem on the order: %+v", got)
	}
	if b := r.balance(); b != trial {
		t.Fatalf("a wrong amount was credited: %s", b)
	}
	// Reconciliation reads the session itself, whose amount is right.
	res, err := r.svc.Reconcile(t.Context(), billing.ReconcileQuery{})
	if err != nil || len(res) != 1 || res[0].After != store.OrderPaid {
		t.Fatalf("reconcile: %+v %v", res, err)
	}
	if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
		t.Fatalf("balance %s", b)
	}
}

// A payment on its way, its events held and released newest first: the
// success arrives before the checkout's completion, and credits once.
func TestAsyncOutOfOrder(t *testing.T) {
	r := newRig(t)
	r.sim.SetFaults(stripesim.Faults{Hold: true})
	o, sid := r.start("404.4")
	if err := r.sim.Later(sid); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Settle(sid, true); err != nil {
		t.Fatal(err)
	}
	r.sim.SetFaults(stripesim.Faults{})
	r.sim.Release()
	r.settled(o.ID, store.OrderPaid)
	if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
		t.Fatalf("balance %s", b)
	}

	// A failed one: nothing credited.
	o2, sid2 := r.start("404.4")
	if err := r.sim.Later(sid2); err != nil {
		t.Fatal(err)
	}
	if got := r.settled(o2.ID, store.OrderPending); !got.Awaiting {
		t.Fatalf("a payment on its way: %+v", got)
	}
	if err := r.sim.Settle(sid2, false); err != nil {
		t.Fatal(err)
	}
	r.settled(o2.ID, store.OrderFailed)
	if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
		t.Fatalf("balance %s after a failed debit", b)
	}
}

// Refunds debit in proportion, once, below zero when spent; a refund that
// comes before its payment's event waits for it.
func TestRefunds(t *testing.T) {
	r := newRig(t)
	r.sim.SetFaults(stripesim.Faults{Hold: true})
	o, sid := r.start("1000")
	if err := r.sim.Pay(sid); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Refund(sid, 25000); err != nil { // a quarter
		t.Fatal(err)
	}
	r.sim.SetFaults(stripesim.Faults{Twice: true})
	r.sim.Release() // the refund first: 409 until the payment is in
	got := r.settled(o.ID, store.OrderPaid)
	if got.Refunded != 25000 || got.Debited != money.Credits(250) {
		t.Fatalf("after a quarter refunded: %+v", got)
	}
	if b := r.balance(); b != add(trial, money.Credits(750)) {
		t.Fatalf("balance %s", b)
	}
	// Spend it all, then the rest is refunded: below zero.
	if _, err := r.st.Credit(t.Context(), "acct", -add(trial, money.Credits(750)), "spent"); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Refund(sid, 0); err != nil {
		t.Fatal(err)
	}
	got = r.settled(o.ID, store.OrderRefunded)
	if got.Debited != money.Credits(1000) {
		t.Fatalf("after the full refund: %+v", got)
	}
	if b := r.balance(); b != money.Credits(-750) {
		t.Fatalf("balance %s after the full refund, want -750", b)
	}
	led, _ := r.st.ListLedger(t.Context(), "acct")
	n := 0
	for _, e := range led {
		if e.OrderID == o.ID {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d ledger entries of the order, want 3 (the credit and two refunds): %+v", n, led)
	}
}

// A lost event: reconciliation finds the payment and credits it once, and
// the event arriving afterwards changes nothing.
func TestReconcileFindsALostEvent(t *testing.T) {
	r := newRig(t)
	r.sim.SetFaults(stripesim.Faults{Drop: true})
	o, sid := r.start("404.4")
	if err := r.sim.Pay(sid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if b := r.balance(); b != trial {
		t.Fatalf("balance %s before reconciling", b)
	}
	for range 2 {
		res, err := r.svc.Reconcile(t.Context(), billing.ReconcileQuery{})
		if err != nil || len(res) != 1 || res[0].After != store.OrderPaid {
			t.Fatalf("reconcile: %+v %v", res, err)
		}
	}
	if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
		t.Fatalf("balance %s", b)
	}
	r.sim.SetFaults(stripesim.Faults{})
	for _, e := range r.sim.Events() {
		r.sim.Resend(e.ID)
	}
	r.settled(o.ID, store.OrderPaid)
	if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
		t.Fatalf("balance %s after the late event", b)
	}
}

func TestCancelExpiresThePage(t *testing.T) {
	r := newRig(t)
	o, _ := r.start("404.4")
	if _, err := r.svc.Cancel(t.Context(), "acct", o.ID); err != nil {
		t.Fatal(err)
	}
	r.settled(o.ID, store.OrderExpired)
	if b := r.balance(); b != trial {
		t.Fatalf("balance %s", b)
	}
}

func TestPrice(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		credits string
		amount  int64
		err     bool
	}{
		{"404.4", 40440, false},
		{"404.39", 0, true},
		{"1000.001", 100001, false}, // rounded up to the cent
		{"999999.99", 99999999, false},
		{"1000000", 0, true},
	} {
		q, err := r.svc.Price(money.MustParse(tc.credits))
		if (err != nil) != tc.err || (!tc.err && q.Amount != tc.amount) {
			t.Errorf("price of %s = %+v, %v", tc.credits, q, err)
		}
	}
	if got := billing.FormatAmount(40440, "usd"); got != "404.40 USD" {
		t.Errorf("format %q", got)
	}
	if got := billing.FormatAmount(404, "jpy"); got != "404 JPY" {
		t.Errorf("format %q", got)
	}
}

// Many deliveries of one event at once, on one store: one credit.
func TestConcurrentDeliveries(t *testing.T) {
	r := newRig(t)
	r.sim.SetFaults(stripesim.Faults{Hold: true})
	o, sid := r.start("404.4")
	if err := r.sim.Pay(sid); err != nil {
		t.Fatal(err)
	}
	r.sim.SetFaults(stripesim.Faults{})
	ev := r.sim.Events()[0]
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); r.sim.Resend(ev.ID) }()
	}
	wg.Wait()
	r.settled(o.ID, store.OrderPaid)
	time.Sleep(100 * time.Millisecond)
	if b := r.balance(); b != add(trial, money.MustParse("404.4")) {
		t.Fatalf("balance %s", b)
	}
	if _, err := r.svc.Order(t.Context(), "other", o.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another account's order: %v", err)
	}
}

// noReceipt is a processor whose receipts cannot be had.
type noReceipt struct{ billing.Processor }

func (noReceipt) Receipt(context.Context, store.Order) (string, error) {
	return "", errors.New("processor unavailable")
}

// A paid event whose receipt the processor does not give still credits
// once, and says so in the log instead of dropping the error.
func TestReceiptRefusedIsLogged(t *testing.T) {
	r := newRig(t)
	var logs syncBuffer
	cfg := config.DefaultBilling()
	cfg.Enabled = true
	p := stripe.New(stripe.Options{SecretKey: secretKey, WebhookSecret: hookSecret, APIURL: r.sim.BaseURL()})
	r.svc = billing.New(billing.Options{Config: cfg, Store: r.st, Processor: noReceipt{p},
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	hook := httptest.NewServer(http.HandlerFunc(r.svc.ServeWebhook))
	t.Cleanup(hook.Close)
	r.sim.SetWebhookURL(hook.URL)
	before := r.balance()
	o, sid := r.start("404.4")
	if err := r.sim.Pay(sid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.balance() == before || !strings.Contains(logs.String(), "the processor gave no receipt") {
		if time.Now().After(deadline) {
			t.Fatalf("balance %s (was %s), log:\n%s", r.balance(), before, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.balance() - before; got != money.MustParse("404.4") {
		t.Fatalf("credited %s, want 404.4", got)
	}
	if !strings.Contains(logs.String(), o.ID) {
		t.Fatalf("the log line does not name the order %s:\n%s", o.ID, logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
