package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// topups are the gateway's top-ups, as the operator lists them.
func topups(t *testing.T, g *testgw.Gateway) []map[string]any {
	t.Helper()
	var out struct{ Data []map[string]any }
	g.Admin("GET", "/topups", nil, &out)
	return out.Data
}

// waitTopUp waits until the newest top-up is in status.
func waitTopUp(t *testing.T, g *testgw.Gateway, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ts := topups(t, g); len(ts) > 0 && ts[0]["status"] == status {
			return ts[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the newest top-up is not %s: %v", status, topups(t, g))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// balanceReads waits until the billing page shows the balance want.
func balanceReads(t *testing.T, ctx context.Context, base, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		step(t, ctx, "the billing page", chromedp.Navigate(base+"/console/billing"), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
		if got := strings.TrimSpace(text(t, ctx, `#balance`)); got == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the balance reads %s, want %s", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startTopUp types credits into the form and continues to the processor's
// page.
func startTopUp(t *testing.T, ctx context.Context, base, credits string) {
	t.Helper()
	step(t, ctx, "top up "+credits,
		chromedp.Navigate(base+"/console/billing"),
		chromedp.WaitVisible(chromedp.CSS(`#credits`)),
		chromedp.SendKeys(chromedp.CSS(`#credits`), credits),
	)
	waitText(t, ctx, `#price`, "You pay")
	step(t, ctx, "continue to payment", chromedp.Click(chromedp.CSS(`#topup-pay`)), chromedp.WaitVisible(chromedp.CSS(`#amount`)))
}

// A person tops up 404.4 on the embedded default's simulated processor and
// sees the balance change; below the minimum is refused by the page and by
// the server; Decline leaves the balance; a payment made later credits once
// it succeeds.
func TestBillingTopUp(t *testing.T) {
	ctx := Start(t)
	shots := NewScreenshots(t)
	g := testgw.Start(t, testgw.Options{})
	base := g.URL
	signUp(t, ctx, base+"/console/signup", "grace@example.com")

	step(t, ctx, "the billing page", chromedp.Navigate(base+"/console/billing"), chromedp.WaitVisible(chromedp.CSS(`#topup-form`)))
	if got := text(t, ctx, `#topup-presets`); !strings.Contains(got, "404.4 credits") || !strings.Contains(got, "404.40 USD") {
		t.Fatalf("the presets read %q", got)
	}
	shots.Take(ctx, "billing")

	// Below the minimum: the page will not send it...
	step(t, ctx, "type 404.39", chromedp.SendKeys(chromedp.CSS(`#credits`), "404.39"))
	waitText(t, ctx, `#price`, "smallest top-up is 404.4")
	if eval[bool](t, ctx, `document.querySelector("#credits").checkValidity()`) {
		t.Fatal("the form takes 404.39")
	}
	step(t, ctx, "submit 404.39", chromedp.Click(chromedp.CSS(`#topup-pay`)))
	time.Sleep(300 * time.Millisecond)
	if got := eval[string](t, ctx, `location.pathname`); got != "/console/billing" {
		t.Fatalf("the form below the minimum went to %s", got)
	}
	// ...and the server refuses it sent anyway.
	status, _, body, err := Fetch(ctx, base+"/console/billing/topup", `{method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
		body: "credits=404.39&_csrf=" + encodeURIComponent(document.querySelector("input[name=_csrf]").value), redirect: "manual"}`, "")
	if err != nil || status != 400 || !strings.Contains(body, "The smallest top-up is 404.4 credits") {
		t.Fatalf("the server took 404.39: %d %v %.300s", status, err, body)
	}
	if ts := topups(t, g); len(ts) != 0 {
		t.Fatalf("a refused amount made an order: %v", ts)
	}

	// 404.4, paid.
	startTopUp(t, ctx, base, "404.4")
	if got := text(t, ctx, `#amount`); got != "404.40 USD" {
		t.Fatalf("the processor's page asks %q", got)
	}
	shots.Take(ctx, "processor-page")
	step(t, ctx, "pay", chromedp.Click(chromedp.CSS(`#pay`)), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
	waitTopUp(t, g, "paid")
	balanceReads(t, ctx, base, "525.72")
	if got := text(t, ctx, `#topups tbody tr:first-child`); !strings.Contains(got, "paid") || !strings.Contains(got, "404.40 USD") {
		t.Fatalf("the history's row reads %q", got)
	}
	shots.Take(ctx, "billing-paid")
	step(t, ctx, "the receipt", chromedp.Click(chromedp.CSS(`#topups a.receipt`)), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	if got := text(t, ctx, `main`); !strings.Contains(got, "Receipt") || !strings.Contains(got, "404.40 USD") {
		t.Fatalf("the receipt reads %q", got)
	}

	// Declined: the card is refused, the person goes back; nothing changes.
	startTopUp(t, ctx, base, "1000")
	step(t, ctx, "decline", chromedp.Click(chromedp.CSS(`#decline`)), chromedp.WaitVisible(chromedp.CSS(`#declined`)))
	step(t, ctx, "back", chromedp.Click(chromedp.CSS(`#back`)), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
	waitText(t, ctx, `main`, "nothing was charged")
	waitTopUp(t, g, "expired")
	balanceReads(t, ctx, base, "525.72")

	// Paid later (a bank debit): pending until it succeeds, then credited.
	startTopUp(t, ctx, base, "500")
	step(t, ctx, "pay later", chromedp.Click(chromedp.CSS(`#later`)), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
	later := waitTopUp(t, g, "pending")
	// The order is pending from the start; the checkout's event (completed,
	// unpaid) may arrive after the page loaded, so read it again until then.
	for deadline := time.Now().Add(20 * time.Second); ; {
		step(t, ctx, "the billing page", chromedp.Navigate(base+"/console/billing"), chromedp.WaitVisible(chromedp.CSS(`#balance`)))
		got := text(t, ctx, `#topups tbody tr:first-child`)
		if strings.Contains(got, "payment on its way") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history's newest row reads %q, not payment on its way", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	balanceReads(t, ctx, base, "525.72")
	shots.Take(ctx, "billing-awaiting")
	step(t, ctx, "the debit succeeds",
		chromedp.Navigate(later["payment_url"].(string)),
		chromedp.WaitVisible(chromedp.CSS(`#settle-ok`)),
		chromedp.Click(chromedp.CSS(`#settle-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#state`)))
	waitTopUp(t, g, "paid")
	balanceReads(t, ctx, base, "1025.72")
}
