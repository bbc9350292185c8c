package integration

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// leakyKey is the operator's upstream key of the masking tests: it looks
// like no key (no sk- prefix, short, no long hex), so only the exact match
// of the configured secret can hide it.
const leakyKey = "opensesame-42"

// startLeakyUpstream serves vendorsim with Options.Leak: its errors name
// its base URL, its host:port and the key the gateway sent.
func startLeakyUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(recordUpstream(vendorsim.New(vendorsim.Options{APIKey: leakyKey, Leak: true}).Handler()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An upstream error's message reaches the client masked like the log row
// (PRODUCT.md §7), in every protocol's error shape, non-streaming, as a
// stream's error head, and inside a stream as the upstream's own error
// event; the structure and status stay as they are.
func TestUpstreamErrorsMasked(t *testing.T) {
	t.Parallel()
	up := startLeakyUpstream(t)
	hostPort := strings.TrimPrefix(up, "http://")
	cfg := `
channel "leaky-openai" {
  vendor    = "openai"
  base_url  = "` + up + `"
  api_key   = "` + leakyKey + `"
  protocols = ["openai_chat", "openai_responses"]
  models    = ["lk"]
}
channel "leaky-claude" {
  vendor    = "anthropic"
  base_url  = "` + up + `"
  api_key   = "` + leakyKey + `"
  protocols = ["anthropic_messages"]
  models    = ["lk-claude"]
}
channel "leaky-gemini" {
  vendor    = "gemini"
  base_url  = "` + up + `"
  api_key   = "` + leakyKey + `"
  protocols = ["gemini_native"]
  models    = ["lk-gemini"]
}
` + modelBlock("lk") + modelBlock("lk-claude") + modelBlock("lk-gemini")
	g := startGateway(t, testgw.Options{Config: cfg})

	// noLeak fails when b names the upstream's address or key.
	noLeak := func(t *testing.T, where string, b []byte) {
		t.Helper()
		for _, secret := range []string{leakyKey, hostPort, up, "127.0.0.1"} {
			if strings.Contains(string(b), secret) {
				t.Fatalf("%s leaks %q: %s", where, secret, b)
			}
		}
	}
	// masked checks that a message kept its text around the masks.
	masked := func(t *testing.T, msg string) {
		t.Helper()
		if !strings.Contains(msg, "simulated failure") || !strings.Contains(msg, "[redacted]") || !strings.Contains(msg, "[host]") {
			t.Fatalf("message not masked as expected: %q", msg)
		}
	}
	type proto struct {
		name, path, body string
		headers          func(key string) map[string]string
		stream           func(body string) (path, streamBody string)
		// shape checks the error body's structure for a 500 and returns
		// its message.
		shape func(t *testing.T, b gjson.Result) string
		// event finds the upstream's error event in a stream and returns
		// its message.
		event func(t *testing.T, name string, b gjson.Result) (string, bool)
	}
	openaiShape := func(t *testing.T, b gjson.Result) string {
		if b.Get("error.type").Str != "api_error" || b.Get("error.code").Str != "upstream_error" {
			t.Fatalf("completions-style shape: %s", b.Raw)
		}
		return b.Get("error.message").Str
	}
	protos := []proto{
		{name: "completions", path: "/v1/chat/completions", headers: bearer,
			body: `{"model":"lk","messages":[{"role":"user","content":"PROMPT"}]}`,
			stream: func(b string) (string, string) {
				return "/v1/chat/completions", strings.Replace(b, `{`, `{"stream":true,`, 1)
			},
			shape: openaiShape,
			event: func(t *testing.T, _ string, b gjson.Result) (string, bool) {
				if !b.Get("error").IsObject() {
					return "", false
				}
				if b.Get("error.type").Str != "server_error" {
					t.Fatalf("the upstream's error chunk changed: %s", b.Raw)
				}
				return b.Get("error.message").Str, true
			}},
		{name: "responses", path: "/v1/responses", headers: bearer,
			body: `{"model":"lk","input":[{"role":"user","content":"PROMPT"}]}`,
			stream: func(b string) (string, string) {
				return "/v1/responses", strings.Replace(b, `{`, `{"stream":true,`, 1)
			},
			shape: openaiShape,
			event: func(t *testing.T, name string, b gjson.Result) (string, bool) {
				if name != "error" {
					return "", false
				}
				if b.Get("type").Str != "error" || b.Get("code").Str != "server_error" || !b.Get("sequence_number").Exists() {
					t.Fatalf("the upstream's error event changed: %s", b.Raw)
				}
				return b.Get("message").Str, true
			}},
		{name: "messages", path: "/v1/messages", headers: msgHeaders,
			body: `{"model":"lk-claude","max_tokens":64,"messages":[{"role":"user","content":"PROMPT"}]}`,
			stream: func(b string) (string, string) {
				return "/v1/messages", strings.Replace(b, `{`, `{"stream":true,`, 1)
			},
			shape: func(t *testing.T, b gjson.Result) string {
				if b.Get("type").Str != "error" || b.Get("error.type").Str != "api_error" || b.Get("error.code").Exists() {
					t.Fatalf("messages-style shape: %s", b.Raw)
				}
				return b.Get("error.message").Str
			},
			event: func(t *testing.T, name string, b gjson.Result) (string, bool) {
				if name != "error" {
					return "", false
				}
				if b.Get("type").Str != "error" || b.Get("error.type").Str != "api_error" {
					t.Fatalf("the upstream's error event changed: %s", b.Raw)
				}
				return b.Get("error.message").Str, true
			}},
		{name: "generate-content", path: "/v1beta/models/lk-gemini:generateContent",
			headers: func(key string) map[string]string { return map[string]string{"x-goog-api-key": key} },
			body:    `{"contents":[{"role":"user","parts":[{"text":"PROMPT"}]}]}`,
			stream: func(b string) (string, string) {
				return "/v1beta/models/lk-gemini:streamGenerateContent?alt=sse", b
			},
			shape: func(t *testing.T, b gjson.Result) string {
				if b.Get("error.code").Int() != 500 || b.Get("error.status").Str != "INTERNAL" {
					t.Fatalf("generate-content shape: %s", b.Raw)
				}
				return b.Get("error.message").Str
			},
			event: func(t *testing.T, _ string, b gjson.Result) (string, bool) {
				if !b.Get("error").IsObject() {
					return "", false
				}
				if b.Get("error.code").Int() != 500 || b.Get("error.status").Str != "INTERNAL" {
					t.Fatalf("the upstream's error chunk changed: %s", b.Raw)
				}
				return b.Get("error.message").Str, true
			}},
	}
	for _, p := range protos {
		withPrompt := func(prompt string) string { return strings.Replace(p.body, "PROMPT", prompt, 1) }
		t.Run(p.name+"/non-streaming", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+p.path, p.headers(w.key), withPrompt("fail [sim:error=500]"))
			if r.Status != http.StatusInternalServerError {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			noLeak(t, "the error body", r.Body)
			masked(t, p.shape(t, gjson.ParseBytes(r.Body)))
			row := w.last(t, 1)
			checkRow(t, row, rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
			noLeak(t, "the log row", []byte(str(row["error_message"])))
			w.settled(t, 1)
		})
		t.Run(p.name+"/stream error status", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			path, body := p.stream(withPrompt("fail [sim:error=500]"))
			status, _, evs, _ := rawStream(t, g.URL+path, p.headers(w.key), body)
			if status != http.StatusInternalServerError || len(evs) != 1 {
				t.Fatalf("%d, %d events", status, len(evs))
			}
			noLeak(t, "the error body", evs[0].Data)
			masked(t, p.shape(t, gjson.ParseBytes(evs[0].Data)))
			w.settled(t, 1)
		})
		t.Run(p.name+"/error event in the stream", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			path, body := p.stream(withPrompt("a long story [sim:cut=3]"))
			status, _, evs, _ := rawStream(t, g.URL+path, p.headers(w.key), body)
			if status != http.StatusOK || len(evs) < 2 {
				t.Fatalf("%d, %d events", status, len(evs))
			}
			found := false
			for _, ev := range evs {
				noLeak(t, "event "+ev.Name, ev.Data)
				if msg, ok := p.event(t, ev.Name, gjson.ParseBytes(ev.Data)); ok {
					masked(t, msg)
					found = true
				}
			}
			if !found {
				t.Fatalf("the upstream's error event did not pass through: %d events", len(evs))
			}
			row := w.last(t, 1)
			checkRow(t, row, rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})
			w.settled(t, 1)
		})
	}
}
