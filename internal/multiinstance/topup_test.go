package multiinstance

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/billing/stripesim"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/testpg"
)

const topUpConfig = `
store "postgres" {
  url = env("DATABASE_URL")
}
console {}
accounts {
  signup = true
}
billing {
  processor      = "stripe"
  secret_key     = "sk_test_cluster"
  webhook_secret = "whsec_cluster"
  api_url        = "%s"
}
`

// Two instances on one database receive every event of the processor at
// the same moment (a fan-out in front of both, as two load-balanced
// instances behind a retrying sender may): each top-up is credited once,
// and a refund debited once.
func TestTopUpEventToTwoInstancesAtOnce(t *testing.T) {
	sim := stripesim.New(stripesim.Options{SecretKey: "sk_test_cluster", WebhookSecret: "whsec_cluster",
		Retry: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, Attempts: 200})
	simSrv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); simSrv.Close() })
	sim.SetBaseURL(simSrv.URL)
	dbURL := testpg.Database(t)
	gws := make([]*testgw.Gateway, 2)
	for i := range gws {
		gws[i] = testgw.Start(t, testgw.Options{Config: fmt.Sprintf(topUpConfig, simSrv.URL),
			Env: []string{"DATABASE_URL=" + dbURL, "TOLLGATE_MASTER_KEY=" + masterKey}})
	}
	// The fan-out: each delivery goes to both instances at once; its
	// answer is the first instance's.
	var mu sync.Mutex
	statuses := map[int]int{}
	fan := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		codes := make([]int, len(gws))
		var wg sync.WaitGroup
		for i, g := range gws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, g.URL+"/billing/webhook", bytes.NewReader(body))
				req.Header = r.Header.Clone()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		mu.Lock()
		for _, c := range codes {
			statuses[c]++
		}
		mu.Unlock()
		w.WriteHeader(codes[0])
	}))
	t.Cleanup(fan.Close)
	sim.SetWebhookURL(fan.URL)

	c := testgw.NewConsoleClient(gws[1].URL)
	if err := c.SignUp("pair@example.com", "correct horse battery", ""); err != nil {
		t.Fatal(err)
	}
	if st, _, err := c.Get("/console/billing"); err != nil || st != 200 {
		t.Fatalf("billing page: %d %v", st, err)
	}
	var accts struct{ Data []struct{ ID string } }
	gws[0].Admin("GET", "/accounts", nil, &accts)
	acct := accts.Data[len(accts.Data)-1].ID

	const n = 5
	sessions := []string{}
	for range n {
		st, body, h, err := c.Post("/console/billing/topup", url.Values{"credits": {"404.4"}})
		if err != nil || st != http.StatusSeeOther {
			t.Fatalf("top up: %d %v %.200s", st, err, body)
		}
		loc := h.Get("Location")
		sessions = append(sessions, loc[strings.LastIndex(loc, "/")+1:])
	}
	for _, s := range sessions {
		if err := sim.Pay(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.Refund(sessions[0], 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := len(sim.Events()) == n+1
		for _, e := range sim.Events() {
			done = done && e.Delivered
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events not delivered: %+v", sim.Events())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// 121.32 + 5 × 404.4 − 404.4 (the refund).
	for _, g := range gws {
		if bal, _ := g.Balance(acct); bal != "1738.92" {
			t.Fatalf("balance %s on %s, want 1738.92: each credit once", bal, g.URL)
		}
	}
	var ledger struct {
		Data []map[string]any
	}
	gws[0].Admin("GET", "/topups?account_id="+acct, nil, &ledger)
	paid, refunded := 0, 0
	for _, o := range ledger.Data {
		switch o["status"] {
		case "paid":
			paid++
		case "refunded":
			refunded++
		}
	}
	if paid != n-1 || refunded != 1 {
		t.Fatalf("%d paid and %d refunded: %v", paid, refunded, ledger.Data)
	}
	t.Logf("answers of the instances: %v", statuses)
}
