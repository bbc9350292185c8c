package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// signupCredit is what g.Account("") starts with (PRODUCT.md §7).
const signupCredit = "121.32"

// wallet is one account with one key: each case gets its own, so its money
// and rows are its alone (and the logs API's per-key rate is not shared).
type wallet struct {
	g    *testgw.Gateway
	acct string
	key  string
}

func newWallet(g *testgw.Gateway) wallet {
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	return wallet{g: g, acct: acct, key: key}
}

// rows waits until the key has n rows (the row of a stream is committed
// just after its last byte) and returns them, newest first.
func (w wallet) rows(t *testing.T, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows := logsOf(t, w.g, w.key)
		if len(rows) >= n {
			if len(rows) > n {
				t.Fatalf("want %d rows, have %d: %v", n, len(rows), rows)
			}
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d rows, have %d after 5s: %v", n, len(rows), rows)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// last waits for the n-th row and returns the newest.
func (w wallet) last(t *testing.T, n int) map[string]any { return w.rows(t, n)[0] }

// settled checks the money after all of the key's n calls: each row costs
// exactly what its upstream's reported usage costs at the model's prices
// (cost_test.go), no hold is left, and the balance went down by exactly
// the sum of those costs. It returns the sum.
func (w wallet) settled(t *testing.T, n int) money.Nano {
	t.Helper()
	rows := w.rows(t, n)
	var sum money.Nano
	for _, r := range rows {
		c := checkCost(t, r)
		var ok bool
		if sum, ok = money.Add(sum, c); !ok {
			t.Fatalf("the rows' costs add up past the range")
		}
	}
	// The hold is released in the same store step as the row is written.
	bal, held := w.g.Balance(w.acct)
	if held != "0" {
		t.Fatalf("held %s after the calls, want 0", held)
	}
	if want := (money.MustParse(signupCredit) - sum).String(); bal != want {
		t.Fatalf("balance %s, want %s (credit %s minus the rows' %s)", bal, want, signupCredit, sum)
	}
	return sum
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// rowWant is what a log row must say.
type rowWant struct {
	status   string
	code     string // error_code; "" = null
	attempts int    // attempts_count
	failed   int    // attempts listed (failed ones before the last)
	billed   bool   // cost > 0; else cost is 0
}

func checkRow(t *testing.T, row map[string]any, w rowWant) {
	t.Helper()
	if got := str(row["status"]); got != w.status {
		t.Errorf("row status %q, want %q: %v", got, w.status, row)
	}
	if got := str(row["error_code"]); got != w.code {
		t.Errorf("row error_code %q, want %q: %v", got, w.code, row)
	}
	if w.attempts > 0 {
		if got := num(row["attempts_count"]); got != w.attempts {
			t.Errorf("row attempts_count %v, want %d", row["attempts_count"], w.attempts)
		}
	}
	att, _ := row["attempts"].([]any)
	if len(att) != w.failed {
		t.Errorf("row attempts %v, want %d", row["attempts"], w.failed)
	}
	for _, a := range att {
		if m, _ := a.(map[string]any); str(m["error_code"]) == "" {
			t.Errorf("attempt without error_code: %v", a)
		}
	}
	cost := checkCost(t, row)
	if w.billed != (cost > 0) {
		t.Errorf("row cost %s, billed=%v wanted", row["cost"], w.billed)
	}
}

// rawStream posts a streaming request and reads its SSE events until the
// stream ends (cleanly or not). It returns the status, the headers and the
// events; for a non-200 status the body is in the one event's Data.
func rawStream(t *testing.T, url string, headers map[string]string, body string) (int, http.Header, []protocol.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, []protocol.Event{{Data: b}}, nil
	}
	var evs []protocol.Event
	r := sse.NewReader(resp.Body)
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return resp.StatusCode, resp.Header, evs, err
		}
		evs = append(evs, ev)
	}
}

// openStream posts a streaming request and returns the open response for the
// caller to read part of and close.
func openStream(t *testing.T, ctx context.Context, url string, headers map[string]string, body string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	// Its own transport: closing the body must close the connection.
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: recording{tr}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	return resp, bufio.NewReader(resp.Body)
}

// closedURL is a loopback address nobody listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func msgHeaders(key string) map[string]string {
	return map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"}
}

// hasDone reports whether a completions stream ended with [DONE].
func hasDone(evs []protocol.Event) bool {
	return len(evs) > 0 && sse.IsDone(evs[len(evs)-1])
}

// upstream is a vendorsim server on loopback: the four vendors' HTTP APIs.
// It keeps what each call carried and counts the calls still being answered,
// so a test can see an upstream request end.
type upstream struct {
	URL string

	mu     sync.Mutex
	reqs   []vendorsim.Request
	active int
	ended  chan struct{}         // one send per call answered
	gates  map[string]*deltaGate // by the mark a gated call's body carries
}

// startUpstream serves vendorsim with the given default behaviour (a
// sim.Knobs; markers in prompts override it) and a required key.
func startUpstream(t *testing.T, knobs sim.Knobs) *upstream {
	t.Helper()
	u := &upstream{ended: make(chan struct{}, 1024)}
	vs := vendorsim.New(vendorsim.Options{APIKey: upstreamKey, Knobs: knobs, Record: func(r vendorsim.Request) {
		u.mu.Lock()
		u.reqs = append(u.reqs, r)
		u.mu.Unlock()
	}})
	h := recordUpstream(vs.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.active++
		u.mu.Unlock()
		defer func() {
			u.mu.Lock()
			u.active--
			u.mu.Unlock()
			select {
			case u.ended <- struct{}{}:
			default:
			}
		}()
		h.ServeHTTP(u.gated(w, r), r)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

// gateWait is how long a gated upstream waits for the client to read a
// text delta before it gives up on it (deltaGate): far more than a
// process stalled under load takes.
const gateWait = 10 * time.Second

// deltaGate paces one upstream stream by its client: the upstream writes
// text delta n+1 only once the client has read delta n. An event the
// gateway holds back instead of flushing it never reaches the client, so
// the upstream's wait runs out: the gate then records the delta the
// client was missing and lets the stream go on, for the test to fail on
// it rather than hang. No clock decides anything short of gateWait.
type deltaGate struct {
	mark string        // in the gated call's body
	read chan struct{} // one per text delta the client read

	mu      sync.Mutex
	sent    int   // text deltas the upstream wrote
	stalled []int // deltas the client had not read when the wait ran out
}

var gateMarks atomic.Int64

// gate registers a gate for the one call whose body will carry its mark.
func (u *upstream) gate(t *testing.T) *deltaGate {
	t.Helper()
	g := &deltaGate{mark: "gate-" + strconv.FormatInt(gateMarks.Add(1), 10) + "-", read: make(chan struct{}, 64)}
	u.mu.Lock()
	if u.gates == nil {
		u.gates = map[string]*deltaGate{}
	}
	u.gates[g.mark] = g
	u.mu.Unlock()
	t.Cleanup(func() {
		u.mu.Lock()
		delete(u.gates, g.mark)
		u.mu.Unlock()
	})
	return g
}

// clientRead is the client's word that it read one more text delta.
func (g *deltaGate) clientRead() { g.read <- struct{}{} }

// before runs ahead of each text delta the upstream writes.
func (g *deltaGate) before(ctx context.Context) {
	g.mu.Lock()
	n := g.sent
	g.sent++
	g.mu.Unlock()
	if n == 0 {
		return
	}
	wait := time.NewTimer(gateWait)
	defer wait.Stop()
	select {
	case <-g.read:
	case <-ctx.Done():
	case <-wait.C:
		g.mu.Lock()
		g.stalled = append(g.stalled, n-1)
		g.mu.Unlock()
	}
}

// outcome is how many text deltas the upstream wrote and which ones the
// client had not read when the next was due.
func (g *deltaGate) outcome() (sent int, stalled []int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent, slices.Clone(g.stalled)
}

// gated wraps w in its call's gate, if one is registered for it.
func (u *upstream) gated(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	u.mu.Lock()
	n := len(u.gates)
	u.mu.Unlock()
	if n == 0 {
		return w
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	u.mu.Lock()
	defer u.mu.Unlock()
	for mark, g := range u.gates {
		if bytes.Contains(body, []byte(mark)) {
			return &gatedWriter{ResponseWriter: w, g: g, ctx: r.Context()}
		}
	}
	return w
}

// gatedWriter is an upstream's response writer under a deltaGate; the
// upstream writes one event per Write.
type gatedWriter struct {
	http.ResponseWriter
	g   *deltaGate
	ctx context.Context
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if upstreamTextDelta(p) {
		w.g.before(w.ctx)
	}
	return w.ResponseWriter.Write(p)
}

func (w *gatedWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *gatedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// upstreamTextDelta reports whether ev, one SSE event of an upstream
// stream, carries a piece of text: a messages text_delta, a responses
// output_text delta, or a completions chunk with content.
func upstreamTextDelta(ev []byte) bool {
	_, data, ok := bytes.Cut(ev, []byte("data: "))
	if !ok {
		return false
	}
	data, _, _ = bytes.Cut(data, []byte("\n"))
	j := gjson.ParseBytes(data)
	switch j.Get("type").Str {
	case "content_block_delta":
		return j.Get("delta.type").Str == "text_delta"
	case "response.output_text.delta":
		return true
	}
	return j.Get("choices.0.delta.content").Str != ""
}

// upstreamKey is the key the channels send and vendorsim requires.
const upstreamKey = "sk-upstream-test"

func (u *upstream) requests() []vendorsim.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]vendorsim.Request(nil), u.reqs...)
}

func (u *upstream) inFlight() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.active
}

// waitIdle waits until no call is being answered.
func (u *upstream) waitIdle(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for u.inFlight() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream still answers %d calls after %s", u.inFlight(), within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkResponsesEvents checks a responses-style stream against the spec's
// Events part: response.created (usage null), response.in_progress, a
// message item added, text deltas, the text and item done, then
// response.completed with usage; sequence_number counts up from 0 and each
// event's type is its SSE event name.
func checkResponsesEvents(t *testing.T, evs []protocol.Event) {
	t.Helper()
	var names []string
	for i, ev := range evs {
		d := gjson.ParseBytes(ev.Data)
		if d.Get("sequence_number").Int() != int64(i) || !d.Get("sequence_number").Exists() {
			t.Fatalf("event %d %s: sequence_number %s", i, ev.Name, d.Get("sequence_number").Raw)
		}
		if d.Get("type").String() != ev.Name {
			t.Fatalf("event %d named %q has type %q", i, ev.Name, d.Get("type").String())
		}
		names = append(names, ev.Name)
	}
	if len(evs) < 5 {
		t.Fatalf("events %v", names)
	}
	first, last := gjson.ParseBytes(evs[0].Data), gjson.ParseBytes(evs[len(evs)-1].Data)
	if names[0] != "response.created" || first.Get("response.usage").Type != gjson.Null || names[1] != "response.in_progress" {
		t.Fatalf("stream opens with %v, usage %s", names[:2], first.Get("response.usage").Raw)
	}
	if names[len(names)-1] != "response.completed" || last.Get("response.usage.total_tokens").Int() == 0 {
		t.Fatalf("stream ends with %s: %s", names[len(names)-1], evs[len(evs)-1].Data)
	}
	order := []string{"response.output_item.added", "response.output_text.delta", "response.output_text.done", "response.output_item.done", "response.completed"}
	at := 0
	for _, n := range names {
		if at < len(order) && n == order[at] {
			at++
		}
	}
	if at != len(order) {
		t.Fatalf("events out of the spec's order %v: %v", order, names)
	}
}
