package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// Helpers of the fault tests (issue 22): a real tmpfs to fill, a load of
// callers that keeps what each call got, the plugin processes to kill.

// outcome is what one call of a load got.
type outcome struct {
	trace  string // x-gateway-trace: the row's request id
	status int
	stream bool
	whole  bool // the body arrived whole ([DONE] or message_stop for a stream)
	body   string
}

// begun reports whether the call had started streaming: a 200 stream,
// whole or cut.
func (o outcome) begun() bool { return o.stream && o.status == 200 }

// served reports whether the client got a complete answer.
func (o outcome) served() bool { return o.status == 200 && o.whole }

// load runs callers against g until stop is closed, half of them
// streaming (completions with usage, and messages), the other half whole
// answers, and returns every call's outcome.
type load struct {
	g       *testgw.Gateway
	key     string
	callers int
	prompt  string // added to every prompt (sim markers)

	inFlight atomic.Int64 // calls sent and not yet answered whole

	mu   sync.Mutex
	outs []outcome
	stop chan struct{}
	wg   sync.WaitGroup
}

func startLoad(g *testgw.Gateway, key string, callers int, prompt string) *load {
	l := &load{g: g, key: key, callers: callers, prompt: prompt, stop: make(chan struct{})}
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range callers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.inFlight.Add(1)
				o := l.one(client, w, i)
				l.inFlight.Add(-1)
				l.mu.Lock()
				l.outs = append(l.outs, o)
				l.mu.Unlock()
				if o.status == 0 || o.status >= 500 {
					time.Sleep(100 * time.Millisecond) // refused: do not spin
				}
			}
		}()
	}
	return l
}

// end stops the callers and returns what every call got.
func (l *load) end() []outcome {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outs
}

func (l *load) one(client *http.Client, w, i int) outcome {
	prompt := fmt.Sprintf("load %d/%d %s", w, i, l.prompt)
	url, headers := l.g.URL+"/v1/chat/completions", bearer(l.key)
	var body string
	stream := w%2 == 0
	switch {
	case stream && w%4 == 0:
		body = chatBody("sim-chat", prompt+" [sim:words=12]", `"stream":true,"stream_options":{"include_usage":true}`)
	case stream:
		url, headers = l.g.URL+"/v1/messages", msgHeaders(l.key)
		b, _ := jsonString(prompt)
		body = `{"model":"sim-chat","max_tokens":64,"stream":true,"messages":[{"role":"user","content":` + b + `}]}`
	default:
		body = chatBody("sim-chat", prompt, "")
	}
	o := outcome{stream: stream}
	req, err := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	if err != nil {
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return o
	}
	defer resp.Body.Close()
	o.status, o.trace = resp.StatusCode, resp.Header.Get("x-gateway-trace")
	b, err := io.ReadAll(resp.Body)
	o.body = string(b)
	switch {
	case err != nil:
	case !stream || o.status != 200:
		o.whole = true
	case strings.Contains(url, "/v1/messages"):
		o.whole = strings.Contains(o.body, "event: message_stop")
	default:
		o.whole = strings.Contains(o.body, "data: [DONE]")
	}
	return o
}

func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// pluginPids lists the gateway's plugin processes whose binary is
// tollgate-plugin-name.
func pluginPids(t *testing.T, g *testgw.Gateway, name string) []int {
	t.Helper()
	var out []int
	for _, pid := range childrenOf(t, g.Cmd.Process.Pid) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err == nil && filepath.Base(exe) == "tollgate-plugin-"+name {
			out = append(out, pid)
		}
	}
	return out
}

// stormWait bounds a crash storm's wait for its load before a kill. It is
// generous: on a loaded machine a plugin may take seconds to come back
// from the last kill, and its callers to reach it again.
const stormWait = 30 * time.Second

// waitStorm polls cond until it holds; past stormWait the test fails,
// saying what it waited for and what cond last saw. A wait is logged.
func waitStorm(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	var first string
	for deadline := start.Add(stormWait); ; time.Sleep(20 * time.Millisecond) {
		ok, seen := cond()
		if ok {
			if first != "" {
				t.Logf("%s: waited %v (%s)", what, time.Since(start).Round(time.Millisecond), first)
			}
			return
		}
		if first == "" {
			first = seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (%s)", what, stormWait, seen)
		}
	}
}

// rowsByRequest reads every row of the account and returns them by
// request id.
func rowsByRequest(t *testing.T, g *testgw.Gateway, acct string) map[string][]map[string]any {
	t.Helper()
	var reader string
	rows := map[string][]map[string]any{}
	query := q("scope", "account", "period", "all", "limit", "200")
	for page := 0; ; page++ {
		if page%50 == 0 { // the logs API takes 60 requests a minute per key
			_, reader = g.Key(acct, map[string]any{"name": "reader", "logs_account_scope": true})
		}
		p := getLogs(t, g, reader, query)
		for _, r := range p.Data {
			rows[str(r["request_id"])] = append(rows[str(r["request_id"])], r)
		}
		if !p.HasMore || p.NextCursor == nil {
			break
		}
		query = q("scope", "account", "period", "all", "limit", "200", "cursor", *p.NextCursor)
	}
	return rows
}
