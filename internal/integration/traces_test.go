package integration

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// otlpReceiver is an OTLP/HTTP collector in the test: it decodes each
// export's protobuf and keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	srv   *httptest.Server
}

func startOTLP(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces of application/x-protobuf", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				rc.spans = append(rc.spans, ss.GetSpans()...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// trace waits for at least n spans of traceID and returns them.
func (rc *otlpReceiver) trace(t *testing.T, traceID string, n int) []*tracepb.Span {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rc.mu.Lock()
		var out []*tracepb.Span
		for _, s := range rc.spans {
			if hex.EncodeToString(s.GetTraceId()) == traceID {
				out = append(out, s)
			}
		}
		rc.mu.Unlock()
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans of trace %s after 20s, want %d", len(out), traceID, n)
		}
	}
}

// The spans of one call reach an OTLP collector: the request's span
// continues the client's traceparent, each stage is its child, the
// upstream attempt is the dispatch stage's child, and the upstream got the
// attempt's traceparent through the plugin.
func TestTracesOfOneCall(t *testing.T) {
	t.Parallel()
	rc := startOTLP(t)
	up := startUpstream(t, sim.Knobs{})
	cfg := vendorsConfig(up.URL) + `
telemetry {
  endpoint     = "` + rc.srv.URL + `"
  service_name = "tollgate-test"
}
`
	g := startGateway(t, testgw.Options{Config: cfg, Env: []string{"OTEL_BSP_SCHEDULE_DELAY=50"}})
	acct := g.Account("20")
	_, key := g.Key(acct, nil)

	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	h := bearer(key)
	h["traceparent"] = "00-" + traceID + "-" + clientSpan + "-01"
	if c := do(t, "POST", g.URL+"/v1/chat/completions", h, chatBody("up-gpt", "traced", "")); c.Status != 200 {
		t.Fatalf("chat: %d %s", c.Status, c.Body)
	}

	stages := []string{"auth", "agent", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}
	spans := rc.trace(t, traceID, 1+len(stages)+1)
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		if byName[s.GetName()] != nil {
			t.Errorf("two spans named %q", s.GetName())
		}
		byName[s.GetName()] = s
	}
	id := func(b []byte) string { return hex.EncodeToString(b) }
	root := byName["POST /v1/chat/completions"]
	if root == nil {
		t.Fatalf("no request span; spans: %v", names(spans))
	}
	if id(root.GetParentSpanId()) != clientSpan || root.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span: parent %s kind %v, want the client's %s, server", id(root.GetParentSpanId()), root.GetKind(), clientSpan)
	}
	for _, st := range stages {
		s := byName["stage "+st]
		if s == nil {
			t.Errorf("no span of stage %s; spans: %v", st, names(spans))
			continue
		}
		if id(s.GetParentSpanId()) != id(root.GetSpanId()) {
			t.Errorf("stage %s: parent %s, want the request's %s", st, id(s.GetParentSpanId()), id(root.GetSpanId()))
		}
	}
	attempt := byName["upstream openai"]
	if attempt == nil {
		t.Fatalf("no upstream attempt span; spans: %v", names(spans))
	}
	if d := byName["stage dispatch"]; d != nil && id(attempt.GetParentSpanId()) != id(d.GetSpanId()) {
		t.Errorf("upstream attempt: parent %s, want the dispatch stage's %s", id(attempt.GetParentSpanId()), id(d.GetSpanId()))
	}

	var seen string
	for _, r := range up.requests() {
		if strings.Contains(string(r.Body), "traced") {
			seen = r.Header.Get("Traceparent")
		}
	}
	if want := "00-" + traceID + "-" + id(attempt.GetSpanId()) + "-01"; seen != want {
		t.Errorf("the upstream saw traceparent %q, want %q", seen, want)
	}
}

func names(spans []*tracepb.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.GetName()
	}
	return out
}
