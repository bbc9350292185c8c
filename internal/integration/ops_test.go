package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/metrics"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// Operations (issue 15): /metrics after a mix of calls, SIGHUP with a new
// price and with a broken config, SIGTERM during a stream, a store that
// fails. Every test here uses the real binary and its sim plugin.

// opsConfig serves sim-chat (priced as the embedded default, so the books
// audit knows it) with metrics on a port of the kernel's choosing.
const opsConfig = `
server {
  metrics_listen = "127.0.0.1:0"
  drain_timeout  = "20s"
}
channel "sim" {
  vendor    = "sim"
  protocols = ["openai_chat", "anthropic_messages", "openai_responses", "gemini_native"]
  models    = ["sim-chat"]
}
model "sim-chat" {
  price {
    input        = "0.10"
    output       = "0.40"
    cached_input = "0.025"
  }
}
`

// metricsURL is the /metrics address the banner printed.
func metricsURL(t *testing.T, g *testgw.Gateway) string {
	t.Helper()
	m := regexp.MustCompile(`metrics:\s+(http://\S+/metrics)`).FindStringSubmatch(g.Output())
	if m == nil {
		t.Fatalf("the banner names no metrics address:\n%s", g.Output())
	}
	return m[1]
}

// scrape reads /metrics and parses it.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	c := do(t, "GET", url, nil, "")
	if c.Status != 200 {
		t.Fatalf("GET /metrics: %d %s", c.Status, c.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(c.Body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, c.Body)
	}
	return fams, string(c.Body)
}

// series finds the metric of family name with exactly these labels.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if match {
			return m
		}
	}
	t.Fatalf("no %s%v in /metrics", name, labels)
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

func TestMetricsAfterAMixOfCalls(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{Config: opsConfig})
	acct := g.Account("50")
	_, key := g.Key(acct, nil)
	url := metricsURL(t, g)

	for i := range 3 {
		if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hello "+strconv.Itoa(i), "")); c.Status != 200 {
			t.Fatalf("chat: %d %s", c.Status, c.Body)
		}
	}
	status, _, evs, err := rawStream(t, g.URL+"/v1/messages", msgHeaders(key),
		`{"model":"sim-chat","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"a stream"}]}`)
	if err != nil || status != 200 || len(evs) == 0 {
		t.Fatalf("messages stream: %d %v, %d events", status, err, len(evs))
	}
	notFound := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("no-such-model", "x", ""))
	badKey := do(t, "POST", g.URL+"/v1/chat/completions", bearer("sk-tollgate-"+strings.Repeat("0", 64)), chatBody("sim-chat", "x", ""))
	failed := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "[sim:error=503]", ""))
	if notFound.Status != 400 || badKey.Status != 401 || failed.Status < 500 {
		t.Fatalf("refusals: %d %d %d", notFound.Status, badKey.Status, failed.Status)
	}

	// What the rows say was charged, the truth the metrics must match.
	var input, output float64
	charged := money.TotalOf(0)
	for _, r := range logsOf(t, g, key) {
		input += r["input_tokens"].(float64)
		output += r["output_tokens"].(float64)
		charged.Add(money.MustParse(r["cost"].(string)))
	}
	total, ok := charged.Nano()
	if !ok || total <= 0 || input == 0 || output == 0 {
		t.Fatalf("rows: input %v output %v cost %s", input, output, charged)
	}

	fams, text := scrape(t, url)
	chat := func(model, status string) map[string]string {
		return map[string]string{"route": "/v1/chat/completions", "protocol": "openai_chat", "model": model, "status": status}
	}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{chat("sim-chat", "200"), 3},
		{chat("sim-chat", strconv.Itoa(failed.Status)), 1},
		{chat("", "400"), 1},
		{chat("", "401"), 1},
		{map[string]string{"route": "/v1/messages", "protocol": "anthropic_messages", "model": "sim-chat", "status": "200"}, 1},
	} {
		if got := value(series(t, fams, "tollgate_requests_total", c.labels)); got != c.want {
			t.Errorf("tollgate_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	lat := map[string]string{"route": "/v1/chat/completions", "protocol": "openai_chat", "model": "sim-chat"}
	for name, want := range map[string]float64{
		"tollgate_request_duration_seconds":   4, // 3 served, 1 failed upstream
		"tollgate_time_to_first_byte_seconds": 4,
		"tollgate_upstream_duration_seconds":  4,
	} {
		if got := value(series(t, fams, name, lat)); got != want {
			t.Errorf("%s%v count = %v, want %v", name, lat, got, want)
		}
	}
	if got := value(series(t, fams, "tollgate_tokens_total", map[string]string{"model": "sim-chat", "type": "input"})); got != input {
		t.Errorf("input tokens = %v, the rows say %v", got, input)
	}
	if got := value(series(t, fams, "tollgate_tokens_total", map[string]string{"model": "sim-chat", "type": "output"})); got != output {
		t.Errorf("output tokens = %v, the rows say %v", got, output)
	}
	if got, want := value(series(t, fams, "tollgate_credits_charged_total", map[string]string{"model": "sim-chat"})), metrics.Credits(total); got != want {
		t.Errorf("credits charged = %v, the rows say %v (%s)", got, want, charged)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tollgate_holds_open", nil, 0},
		{"tollgate_store_up", nil, 1},
		{"tollgate_plugin_up", map[string]string{"plugin": "sim"}, 1},
		{"tollgate_plugin_restarts_total", map[string]string{"plugin": "sim"}, 0},
		{"tollgate_channel_breaker_state", map[string]string{"channel": "sim"}, 0},
	} {
		if got := value(series(t, fams, c.name, c.labels)); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	series(t, fams, "tollgate_store_journal_lag", nil)
	// No unbounded label: no key, account or request id anywhere.
	for _, secret := range []string{key, acct, "sk-tollgate-", "req_"} {
		if strings.Contains(text, secret) {
			t.Errorf("/metrics shows %q", secret)
		}
	}
	for name := range fams {
		if !strings.HasPrefix(name, "tollgate_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("unexpected family %s", name)
		}
	}
}

// TestProbes: /healthz and /readyz answer without a key.
func TestProbes(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{})
	if c := do(t, "GET", g.URL+"/healthz", nil, ""); c.Status != 200 || c.json(t)["status"] != "ok" {
		t.Errorf("healthz: %d %s", c.Status, c.Body)
	}
	if c := do(t, "GET", g.URL+"/readyz", nil, ""); c.Status != 200 || c.json(t)["status"] != "ready" {
		t.Errorf("readyz: %d %s", c.Status, c.Body)
	}
}

// reloadConfig is a gateway priced at input and output credits per
// million tokens, with a custom order of stages to break.
func reloadConfig(input, output string) string {
	return `
server {
  drain_timeout = "20s"
}
channel "sim" {
  vendor    = "sim"
  protocols = ["openai_chat"]
  models    = ["reload-chat"]
}
model "reload-chat" {
  price {
    input  = "` + input + `"
    output = "` + output + `"
  }
}
`
}

// rewrite replaces the gateway's config file and sends SIGHUP, then
// waits for the log line that says how the reload ended.
func rewrite(t *testing.T, g *testgw.Gateway, cfg, want string) {
	t.Helper()
	before := strings.Count(g.Output(), want)
	if err := os.WriteFile(filepath.Join(g.DataDir, "tollgate.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); strings.Count(g.Output(), want) == before; {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after SIGHUP:\n%s", want, g.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rowCost checks that the row of requestID costs the usage its upstream
// reported at the test's price p, exactly, and returns it.
func rowCost(t *testing.T, g *testgw.Gateway, key, requestID string, p price) money.Nano {
	t.Helper()
	for _, r := range logsOf(t, g, key) {
		if r["request_id"] != requestID {
			continue
		}
		want := costAt(t, r, p)
		got := money.MustParse(r["cost"].(string))
		if got != want || got == 0 {
			t.Fatalf("row %s (in %v out %v) costs %s, want %s exactly", requestID, r["input_tokens"], r["output_tokens"], got, want)
		}
		return got
	}
	t.Fatalf("no row %s", requestID)
	return 0
}

func TestSIGHUPReloadsPricesAndRefusesABrokenConfig(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{Config: reloadConfig("1", "2")})
	acct := g.Account("100")
	_, key := g.Key(acct, nil)
	oldPrice, newPrice := per("1", "2", "", ""), per("7", "11", "", "")

	first := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("reload-chat", "before", ""))
	if first.Status != 200 {
		t.Fatalf("chat: %d %s", first.Status, first.Body)
	}
	rowCost(t, g, key, first.Header.Get("x-request-id"), oldPrice)

	// A stream under way across the reload: it finishes on the config it
	// started on, on the same connection.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, rd := openStream(t, ctx, g.URL+"/v1/chat/completions", bearer(key),
		chatBody("reload-chat", "[sim:slow=150ms,chunks=8] across the reload", `"stream":true,"stream_options":{"include_usage":true}`))
	defer resp.Body.Close()
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	rewrite(t, g, reloadConfig("7", "11"), "config reloaded")
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.Contains(string(rest), "data: [DONE]") {
		t.Fatalf("the stream across the reload: %v\n%s", err, rest)
	}
	rowCost(t, g, key, resp.Header.Get("x-request-id"), oldPrice)

	second := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("reload-chat", "after", ""))
	if second.Status != 200 {
		t.Fatalf("chat after the reload: %d %s", second.Status, second.Body)
	}
	rowCost(t, g, key, second.Header.Get("x-request-id"), newPrice)

	// A broken file is refused, every problem logged by file:line, and
	// the last good config keeps serving.
	broken := reloadConfig("9", "9") + `
pipeline {
  stages = ["auth", "allowlist", "precharge", "translate", "dispatch", "settle", "log", "no-such-stage"]
}
channel "ghost" {
  vendor    = "no-such-vendor"
  protocols = ["openai_chat"]
  models    = ["reload-chat"]
}
`
	rewrite(t, g, broken, "reload refused")
	out := g.Output()
	for _, want := range []string{`no-such-stage`, `no-such-vendor`, `tollgate.hcl:`} {
		if !strings.Contains(out[strings.LastIndex(out, "config reloaded"):], want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out)
		}
	}
	third := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("reload-chat", "still", ""))
	if third.Status != 200 {
		t.Fatalf("chat after the refused reload: %d %s", third.Status, third.Body)
	}
	rowCost(t, g, key, third.Header.Get("x-request-id"), newPrice)
	if !g.Alive() {
		t.Fatal("the gateway died")
	}
	if _, held := g.Balance(acct); held != "0" {
		t.Errorf("held %s", held)
	}
}

func TestSIGTERMDrainsAStream(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{Config: reloadConfig("1", "2")})
	acct := g.Account("100")
	_, key := g.Key(acct, nil)
	price := per("1", "2", "", "")

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, rd := openStream(t, ctx, g.URL+"/v1/chat/completions", bearer(key),
		chatBody("reload-chat", "[sim:slow=150ms,chunks=10] drained", `"stream":true,"stream_options":{"include_usage":true}`))
	defer resp.Body.Close()
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := g.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// No new calls: the listener is closed.
	host := strings.TrimPrefix(g.URL, "http://")
	for deadline := time.Now().Add(5 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", host, time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the gateway still takes connections while draining")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rest, err := io.ReadAll(rd)
	if err != nil || !strings.Contains(string(rest), "data: [DONE]") {
		t.Fatalf("the stream under way at SIGTERM did not finish: %v\n%s", err, rest)
	}
	waitExit(t, g, 30*time.Second)
	if !strings.Contains(g.Output(), "drained") {
		t.Errorf("no drain in the log:\n%s", g.Output())
	}

	// The row and the charge are exact, as the restarted gateway reads them.
	g2 := testgw.Start(t, testgw.Options{Config: reloadConfig("1", "2"), DataDir: g.DataDir})
	cost := rowCost(t, g2, key, resp.Header.Get("x-request-id"), price)
	bal, held := g2.Balance(acct)
	if held != "0" || money.MustParse(bal) != money.MustParse("100")-cost {
		t.Errorf("balance %s held %s after a %s stream from 100", bal, held, cost)
	}
}

// waitExit waits for the process to end by itself.
func waitExit(t *testing.T, g *testgw.Gateway, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); g.Alive(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not end within %s of SIGTERM:\n%s", d, g.Output())
		}
	}
}

// A store whose data directory is removed fails calls closed with a 500,
// /readyz says so, and SIGTERM still ends the process (it used to hang
// on Badger's endless flush retries).
func TestFailingStoreFailsClosedAndStops(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{Config: reloadConfig("1", "2")})
	acct := g.Account("100")
	_, key := g.Key(acct, nil)
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("reload-chat", "fine", "")); c.Status != 200 {
		t.Fatalf("chat: %d %s", c.Status, c.Body)
	}
	if err := os.RemoveAll(filepath.Join(g.DataDir, "badger")); err != nil {
		t.Fatal(err)
	}
	// The periodic probe (every 2 s) finds the directory gone; /readyz
	// says what it found, naming no path.
	var r call
	var probe struct {
		Status   string
		Problems []string
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if r = do(t, "GET", g.URL+"/readyz", nil, ""); r.Status == 503 {
			break
		}
	}
	_ = json.Unmarshal(r.Body, &probe)
	if r.Status != 503 || len(probe.Problems) == 0 || !strings.Contains(probe.Problems[0], "store") || strings.Contains(string(r.Body), g.DataDir) {
		t.Errorf("readyz on a failing store: %d %s", r.Status, r.Body)
	}
	c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("reload-chat", "refused", ""))
	if code, _, msg := c.errorOf(t); c.Status != 500 || code != "internal_error" || !strings.Contains(msg, "store is failing") {
		t.Errorf("chat on a failing store: %d %s", c.Status, c.Body)
	}
	if err := g.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, g, 40*time.Second)
}

// TestGatewayRunsWithItsMemoryLimit: server.memory_limit is the soft memory
// limit the gateway's Go runtime runs with, beside Go's GOGC of 100;
// GOMEMLIMIT and GOGC in the environment win.
func TestGatewayRunsWithItsMemoryLimit(t *testing.T) {
	t.Parallel()
	unset := []string{"GOMEMLIMIT=", "GOGC="}
	for _, tc := range []struct {
		name, config string
		env          []string
		limit, gogc  float64
	}{
		{"default", "", unset, config.DefaultMemoryLimit, 100},
		{"configured", "server {\n  memory_limit = \"40MB\"\n}\n", unset, 40 << 20, 100},
		{"environment", "server {\n  memory_limit = \"40MB\"\n}\n", []string{"GOMEMLIMIT=100MiB", "GOGC=80"}, 100 << 20, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := testgw.Start(t, testgw.Options{Config: tc.config, Env: tc.env, Args: []string{"--metrics-listen", "127.0.0.1:0"}})
			fams, _ := scrape(t, metricsURL(t, g))
			if got := value(series(t, fams, "go_gc_gomemlimit_bytes", nil)); got != tc.limit {
				t.Errorf("memory limit %v bytes, want %v", got, tc.limit)
			}
			if got := value(series(t, fams, "go_gc_gogc_percent", nil)); got != tc.gogc {
				t.Errorf("GOGC %v, want %v", got, tc.gogc)
			}
		})
	}
}
