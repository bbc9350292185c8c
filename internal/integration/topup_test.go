package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/billing/stripesim"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// Card top-ups on the real binary: its Stripe processor (stripe-go)
// pointed at an in-test simulated Stripe, whose webhooks reach the
// gateway's endpoint signed as Stripe signs them. Every check is the
// wallet to the last nano.

const (
	paySecretKey  = "sk_test_integration"
	payHookSecret = "whsec_integration"
)

const topUpConfig = `
server {
  allow_private_urls = true
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["sim-chat"]
}
model "sim-chat" {
  owned_by = "sim"
  price {
    input        = "0.10"
    output       = "0.40"
    cached_input = "0.025"
  }
}
console {}
accounts {
  signup = true
}
billing {
  processor      = "stripe"
  secret_key     = "` + paySecretKey + `"
  webhook_secret = "` + payHookSecret + `"
  api_url        = "%s"
}
`

// payRig is a gateway taking top-ups through a simulated Stripe.
type payRig struct {
	t   *testing.T
	sim *stripesim.Server
	url string
	dir string
	g   *testgw.Gateway
}

func newPayRig(t *testing.T) *payRig {
	t.Helper()
	sim := stripesim.New(stripesim.Options{SecretKey: paySecretKey, WebhookSecret: payHookSecret,
		Retry: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}, Attempts: 300})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); srv.Close() })
	sim.SetBaseURL(srv.URL)
	r := &payRig{t: t, sim: sim, url: srv.URL, dir: t.TempDir()}
	r.start()
	return r
}

// start runs (or runs again) the gateway on the rig's data dir and points
// the events at it.
func (r *payRig) start() {
	r.g = startGateway(r.t, testgw.Options{DataDir: r.dir, Config: fmt.Sprintf(topUpConfig, r.url)})
	r.sim.SetWebhookURL(r.g.URL + "/billing/webhook")
}

// person signs a new person up and returns their console client and
// account.
func (r *payRig) person(email string) (*testgw.ConsoleClient, string) {
	r.t.Helper()
	c := testgw.NewConsoleClient(r.g.URL)
	if err := c.SignUp(email, "correct horse battery", ""); err != nil {
		r.t.Fatal(err)
	}
	if st, _, err := c.Get("/console/billing"); err != nil || st != 200 {
		r.t.Fatalf("billing page: %d %v", st, err)
	}
	var list struct{ Data []struct{ ID, Name string } }
	r.g.Admin("GET", "/accounts", nil, &list)
	return c, list.Data[len(list.Data)-1].ID
}

// topUp starts a top-up of credits and returns its order and session.
func (r *payRig) topUp(c *testgw.ConsoleClient, credits string) (order, session string) {
	r.t.Helper()
	st, body, h, err := c.Post("/console/billing/topup", url.Values{"credits": {credits}})
	if err != nil || st != http.StatusSeeOther {
		r.t.Fatalf("top up %s: %d %v %.300s", credits, st, err, body)
	}
	loc := h.Get("Location")
	session = loc[strings.LastIndex(loc, "/")+1:]
	if !strings.HasPrefix(loc, r.url+"/pay/cs_test_") {
		r.t.Fatalf("top up %s went to %s", credits, loc)
	}
	var ts struct {
		Data []struct {
			ID        string `json:"id"`
			SessionID string `json:"session_id"`
		}
	}
	r.g.Admin("GET", "/topups", nil, &ts)
	for _, o := range ts.Data {
		if o.SessionID == session {
			return o.ID, session
		}
	}
	r.t.Fatalf("no order of session %s", session)
	return "", ""
}

// order reads a top-up.
func (r *payRig) order(id string) map[string]any {
	r.t.Helper()
	var o map[string]any
	r.g.Admin("GET", "/topups/"+id, nil, &o)
	return o
}

// settled waits until the order is in status and every event so far got
// its 2xx, and returns the order read after those answers: the gateway
// answers 2xx once an event's changes are in the store, so the order
// holds them all (read before, it may miss what the last delivery wrote).
func (r *payRig) settled(id, status string) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		delivered := true
		for _, e := range r.sim.Events() {
			delivered = delivered && e.Delivered
		}
		o := r.order(id)
		if delivered && o["status"] == status {
			return o
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("order %s: %v, want %s with every event delivered: %+v", id, o, status, r.sim.Events())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *payRig) wantBalance(acct, want string) {
	r.t.Helper()
	if bal, _ := r.g.Balance(acct); bal != want {
		r.t.Fatalf("balance %s, want %s", bal, want)
	}
}

func (r *payRig) resendAll() {
	for _, e := range r.sim.Events() {
		r.sim.Resend(e.ID)
	}
}

// Each delivery fault credits exactly once or not at all, to the nano.
func TestTopUpDeliveryFaults(t *testing.T) {
	r := newPayRig(t)
	c, acct := r.person("faults@example.com")
	balance := money.MustParse("121.32")
	credit := func(s string) string {
		balance, _ = money.Add(balance, money.MustParse(s))
		return balance.String()
	}
	pay := func(desc string, f stripesim.Faults, credits string) (string, string) {
		t.Helper()
		r.sim.SetFaults(f)
		o, s := r.topUp(c, credits)
		if err := r.sim.Pay(s); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		return o, s
	}

	o, _ := pay("twice at once", stripesim.Faults{Twice: true}, "404.4")
	r.settled(o, "paid")
	r.wantBalance(acct, credit("404.4"))

	o, _ = pay("late", stripesim.Faults{Delay: 700 * time.Millisecond}, "500")
	r.settled(o, "paid")
	r.wantBalance(acct, credit("500"))

	o, _ = pay("bad signature", stripesim.Faults{BadSignature: true}, "600")
	time.Sleep(300 * time.Millisecond)
	r.wantBalance(acct, balance.String())
	if ev := r.sim.Events(); ev[len(ev)-1].Attempts[0].Status != 400 {
		t.Fatalf("a bad signature was answered %+v", ev[len(ev)-1].Attempts[0])
	}
	r.sim.SetFaults(stripesim.Faults{})
	r.settled(o, "paid") // the retries, signed right
	r.wantBalance(acct, credit("600"))

	o, _ = pay("stale signature", stripesim.Faults{Stale: true}, "700")
	time.Sleep(300 * time.Millisecond)
	r.wantBalance(acct, balance.String())
	r.sim.SetFaults(stripesim.Faults{})
	r.settled(o, "paid")
	r.wantBalance(acct, credit("700"))

	o, _ = pay("wrong amount", stripesim.Faults{WrongAmount: true}, "800")
	// The order is pending from the start: wait for the refusal itself.
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := r.settled(o, "pending")
		if strings.Contains(fmt.Sprint(got["problem"]), "refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused event left no problem: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.wantBalance(acct, balance.String())
	r.sim.SetFaults(stripesim.Faults{})

	// Paid later, its events out of order (the success before the
	// checkout's completion), each twice.
	r.sim.SetFaults(stripesim.Faults{Hold: true})
	o, s := r.topUp(c, "900")
	if err := r.sim.Later(s); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Settle(s, true); err != nil {
		t.Fatal(err)
	}
	r.sim.SetFaults(stripesim.Faults{Twice: true})
	r.sim.Release()
	r.settled(o, "paid")
	r.wantBalance(acct, credit("900"))

	// Every event of the test again: nothing moves.
	r.sim.SetFaults(stripesim.Faults{})
	r.resendAll()
	time.Sleep(500 * time.Millisecond)
	r.settled(o, "paid")
	r.wantBalance(acct, balance.String())

	// The wrong amount's order is paid at the processor: reconciliation
	// (the operator's CLI) finds it and credits it, once.
	for range 2 {
		out := runCLI(t, r.g, "topups", "reconcile")
		if !strings.Contains(out, "credited") && !strings.Contains(out, "unchanged") {
			t.Fatalf("reconcile printed %q", out)
		}
	}
	r.wantBalance(acct, credit("800"))
	if out := runCLI(t, r.g, "topups", "list"); !strings.Contains(out, "paid") || !strings.Contains(out, "800.00 USD") {
		t.Fatalf("topups list printed %q", out)
	}
}

// runCLI runs `tollgate admin ARGS` against g.
func runCLI(t *testing.T, g *testgw.Gateway, args ...string) string {
	t.Helper()
	bin := filepath.Join(testgw.Build(t), "tollgate")
	cmd := exec.Command(bin, append([]string{"admin", "--url", g.URL, "--token", testgw.AdminToken}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tollgate admin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A lost event: reconciliation finds the payment and credits it once; the
// event arriving at last changes nothing.
func TestTopUpReconcileFindsALostEvent(t *testing.T) {
	r := newPayRig(t)
	c, acct := r.person("lost@example.com")
	r.sim.SetFaults(stripesim.Faults{Drop: true})
	o, s := r.topUp(c, "404.4")
	if err := r.sim.Pay(s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	r.wantBalance(acct, "121.32")
	var res struct {
		Data []struct{ OrderID, Before, After string }
	}
	r.g.Admin("POST", "/topups/reconcile", map[string]any{"order_id": o}, &res)
	if len(res.Data) != 1 || res.Data[0].After != "paid" {
		t.Fatalf("reconcile: %+v", res)
	}
	r.wantBalance(acct, "525.72")
	r.sim.SetFaults(stripesim.Faults{})
	r.resendAll()
	r.settled(o, "paid")
	r.wantBalance(acct, "525.72")
}

// The gateway is SIGKILLed after the event's credit is in the store and
// before it answers (the processor's API stalls the receipt asked between
// the two): the processor's retry, to the restarted gateway, credits
// nothing more.
func TestTopUpSIGKILLBetweenEventAndAnswer(t *testing.T) {
	r := newPayRig(t)
	c, acct := r.person("kill@example.com")
	o, s := r.topUp(c, "404.4")
	r.sim.SetFaults(stripesim.Faults{StallAPI: true})
	if err := r.sim.Pay(s); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if bal, _ := r.g.Balance(acct); bal == "525.72" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the credit never came")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ev := r.sim.Events(); len(ev[0].Attempts) != 0 {
		t.Fatalf("the event was answered before the kill: %+v", ev[0].Attempts)
	}
	r.g.Kill()
	r.sim.SetFaults(stripesim.Faults{})
	r.start()
	got := r.settled(o, "paid")
	r.wantBalance(acct, "525.72")
	if got["receipt_url"] == "" || got["receipt_url"] == nil {
		t.Fatalf("the retry did not record the receipt: %v", got)
	}
	ev := r.sim.Events()[0]
	if len(ev.Attempts) < 2 || ev.Attempts[0].Error == "" {
		t.Fatalf("attempts: %+v", ev.Attempts)
	}
}

// A refund debits the top-up's credits, below zero once they are spent;
// calls are then refused with 402 until a top-up brings the balance back.
func TestTopUpRefundBelowZero(t *testing.T) {
	r := newPayRig(t)
	c, acct := r.person("refund@example.com")
	o, s := r.topUp(c, "404.4")
	if err := r.sim.Pay(s); err != nil {
		t.Fatal(err)
	}
	r.settled(o, "paid")
	r.g.Admin("POST", "/accounts/"+acct+"/credits", map[string]any{"amount": "-500", "note": "spent"}, nil)
	// The audit at the end counts the operator's credits: add the sign-up
	// credit and the top-ups.
	bookCredit(acct, "121.32", "404.4")
	r.wantBalance(acct, "25.72")
	if err := r.sim.Refund(s, 0); err != nil {
		t.Fatal(err)
	}
	got := r.settled(o, "refunded")
	if got["debited"] != "404.4" {
		t.Fatalf("refunded order: %v", got)
	}
	r.wantBalance(acct, "-378.68")
	bookCredit(acct, "-404.4")
	_, key := r.g.Key(acct, nil)
	var calls atomic.Int32
	call := func() int {
		calls.Add(1)
		req, _ := http.NewRequest("POST", r.g.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := call(); st != http.StatusPaymentRequired {
		t.Fatalf("a call below zero got %d", st)
	}
	o2, s2 := r.topUp(c, "404.4")
	if err := r.sim.Pay(s2); err != nil {
		t.Fatal(err)
	}
	r.settled(o2, "paid")
	bookCredit(acct, "404.4")
	r.wantBalance(acct, "25.72")
	if st := call(); st != http.StatusOK {
		t.Fatalf("a call after the top-up got %d", st)
	}
}

// bookCredit tells the end-of-test audit about credits made without the
// operator's API (the sign-up credit, top-ups, refunds).
func bookCredit(acct string, amounts ...string) {
	ledgerBook.mu.Lock()
	defer ledgerBook.mu.Unlock()
	tot := ledgerBook.credited[acct]
	for _, a := range amounts {
		tot.Add(money.MustParse(a))
	}
	ledgerBook.credited[acct] = tot
}
