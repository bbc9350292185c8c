package integration

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// The real gateway is SIGKILLed with dozens of calls in flight (streams
// and not, slow and quick, so some are settling at the kill) and restarted
// on the same data dir, several times at different points: after each
// restart the money adds up to the last nano (balance + charged =
// credited), no hold is left open, and every call that got an answer has
// exactly one row (a finished call its own, a cut one the recovery's). A
// call that got none may have a row too, billed: a non-streaming answer
// is held back until its row is committed, and the kill can fall between.
func TestSIGKILLWithCallsInFlight(t *testing.T) {
	began := time.Now()
	dir := t.TempDir()
	g := startGateway(t, testgw.Options{DataDir: dir})
	const credit = "1000"
	acct := g.Account(credit)
	_, key := g.Key(acct, nil)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	answered := map[string]bool{} // x-gateway-trace of every call that got an answer
	const rounds = 5
	for round := range rounds {
		killAt := time.Duration(150+rng.IntN(600)) * time.Millisecond
		traces, finished := loadAndKill(t, g, acct, key, killAt)
		for _, tr := range traces {
			answered[tr] = true
		}
		g = startGateway(t, testgw.Options{DataDir: dir})
		rows := checkBooks(t, g, acct, credit)
		for tr := range answered {
			if rows[tr] != 1 {
				t.Fatalf("round %d: the answered call %s has %d rows", round, tr, rows[tr])
			}
		}
		t.Logf("round %d: killed after %s with %d calls answered (%d finished); %d rows", round, killAt, len(traces), finished, len(rows))
	}
	t.Logf("%d rounds in %s", rounds, time.Since(began))
}

// loadAndKill runs 40 callers against g until it is SIGKILLed after
// killAt, fails t unless calls were in flight at the kill, and returns the trace ids of the calls that got an answer (a
// status and headers; a stream may be cut after) and how many finished.
func loadAndKill(t *testing.T, g *testgw.Gateway, acct, key string, killAt time.Duration) (traces []string, finished int) {
	t.Helper()
	var mu sync.Mutex
	var inFlight atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 20 * time.Second}
	for w := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				url, headers, body := crashCall(g, key, w, i)
				inFlight.Add(1)
				tr, done := callOnce(client, url, headers, body)
				inFlight.Add(-1)
				if tr == "" {
					continue // refused at connect (the kill), or no answer yet
				}
				mu.Lock()
				traces = append(traces, tr)
				if done {
					finished++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(killAt)
	// Calls are in flight at the kill: holds open at the gateway (a call
	// between its hold and its settlement) and calls sent and not yet
	// answered whole.
	_, held := g.Balance(acct)
	sent := inFlight.Load()
	g.Kill()
	if held == "0" || sent == 0 {
		t.Fatalf("no call in flight at the kill after %s: %s held, %d calls unanswered", killAt, held, sent)
	}
	t.Logf("killed with %s held and %d calls unanswered", held, sent)
	close(stop)
	wg.Wait()
	client.CloseIdleConnections()
	return traces, finished
}

// crashCall is the w-th caller's i-th call: a slow stream, a slow answer,
// or a quick one (most of them, so settlements are under way at the kill),
// in the completions and messages shapes.
func crashCall(g *testgw.Gateway, key string, w, i int) (url string, headers map[string]string, body string) {
	prompt := fmt.Sprintf("crash test %d/%d", w, i)
	switch (w + i) % 5 {
	case 0:
		return g.URL + "/v1/chat/completions", bearer(key),
			chatBody("sim-chat", prompt+" [sim:slow=25ms] [sim:words=12]", `"stream":true,"stream_options":{"include_usage":true}`)
	case 1:
		return g.URL + "/v1/messages", msgHeaders(key),
			`{"model":"sim-chat","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + prompt + ` [sim:slow=10ms]"}]}`
	case 2:
		return g.URL + "/v1/chat/completions", bearer(key),
			chatBody("sim-chat", prompt+fmt.Sprintf(" [sim:latency=%dms]", 20*(i%10)), "")
	default:
		return g.URL + "/v1/chat/completions", bearer(key), chatBody("sim-chat", prompt, "")
	}
}

// callOnce makes one call and returns its trace id when it got an answer,
// and whether the answer arrived whole.
func callOnce(client *http.Client, url string, headers map[string]string, body string) (trace string, whole bool) {
	req, err := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	if err != nil {
		return "", false
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	trace = resp.Header.Get("x-gateway-trace")
	_, err = io.Copy(io.Discard, resp.Body)
	return trace, err == nil
}

// checkBooks checks the account after a restart: no hold open, balance +
// the rows' costs = credited, to the nano, and no request with two rows.
// It returns the number of rows of each request id.
func checkBooks(t *testing.T, g *testgw.Gateway, acct, credited string) map[string]int {
	t.Helper()
	bal, held := g.Balance(acct)
	if held != "0" {
		t.Fatalf("held %s after the restart, want 0", held)
	}
	_, reader := g.Key(acct, map[string]any{"name": "reader", "logs_account_scope": true})
	rows := map[string]int{}
	sum := money.TotalOf(money.MustParse(bal)) // balance + the rows' costs
	query := q("scope", "account", "period", "all", "limit", "200")
	for {
		p := getLogs(t, g, reader, query)
		for _, r := range p.Data {
			rows[str(r["request_id"])]++
			sum.Add(money.MustParse(str(r["cost"])))
		}
		if !p.HasMore || p.NextCursor == nil {
			break
		}
		query = q("scope", "account", "period", "all", "limit", "200", "cursor", *p.NextCursor)
	}
	for id, n := range rows {
		if n != 1 {
			t.Fatalf("request %s has %d rows", id, n)
		}
	}
	if sum.Cmp(money.TotalOf(money.MustParse(credited))) != 0 {
		t.Fatalf("balance %s plus the rows' costs is %s, but %s was credited", bal, sum, credited)
	}
	return rows
}
