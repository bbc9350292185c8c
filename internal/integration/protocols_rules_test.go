package integration

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// Spec rules of the chat endpoints, on the embedded default.
func TestProtocolsSpecRules(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{})
	webSearch := `"tools":[{"type":"web_search"}]`

	refusals := []struct {
		name, path string
		headers    func(key string) map[string]string
		body       string
		status     int
		code       string
		shape      string // completions, messages
	}{
		{"completions: web_search without stream", "/v1/chat/completions", bearer,
			chatBody("sim-chat", "search the web", webSearch), 400, "invalid_request", "completions"},
		{"completions: web_search without stream is checked before support", "/v1/chat/completions", bearer,
			chatBody("claude-sonnet-4-5", "search the web", webSearch), 400, "invalid_request", "completions"},
		{"completions: web_search on a model without the cap", "/v1/chat/completions", bearer,
			chatBody("claude-sonnet-4-5", "search the web", `"stream":true,`+webSearch), 400, "tool_not_supported", "completions"},
		{"completions: image_generation on a model without the cap", "/v1/chat/completions", bearer,
			chatBody("gpt-4o-mini", "draw", `"stream":true,"tools":[{"type":"image_generation"}]`), 400, "tool_not_supported", "completions"},
		{"messages: raw call without anthropic-version", "/v1/messages",
			func(key string) map[string]string { return map[string]string{"x-api-key": key} },
			`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request", "messages"},
		{"messages: an anthropic-version that is not a date", "/v1/messages",
			func(key string) map[string]string {
				return map[string]string{"x-api-key": key, "anthropic-version": "banana"}
			},
			`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request", "messages"},
		{"messages: an anthropic-version before 2023-06-01", "/v1/messages",
			func(key string) map[string]string {
				return map[string]string{"x-api-key": key, "anthropic-version": "2023-01-01"}
			},
			`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request", "messages"},
		{"responses: previous_response_id", "/v1/responses", bearer,
			`{"model":"gpt-5-codex","instructions":"x","input":[{"role":"user","content":"again"}],"previous_response_id":"resp_123"}`,
			400, "invalid_request", "completions"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+c.path, c.headers(w.key), c.body)
			if r.Status != c.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			b := gjson.ParseBytes(r.Body)
			switch c.shape {
			case "completions":
				if code, typ, msg := r.errorOf(t); code != c.code || typ != "invalid_request_error" || msg == "" {
					t.Fatalf("%s", r.Body)
				}
			case "messages":
				if b.Get("type").String() != "error" || b.Get("error.type").String() != "invalid_request_error" || b.Get("error.message").String() == "" {
					t.Fatalf("%s", r.Body)
				}
			}
			if r.Header.Get("x-gateway-trace") == "" {
				t.Error("no x-gateway-trace")
			}
			// PRODUCT.md §7: every request whose key is known gets a row.
			t.Run("logged as rejected, nothing billed", func(t *testing.T) {
				rows := logsOf(t, g, w.key)
				if len(rows) != 1 {
					t.Fatalf("rows %v", rows)
				}
				checkRow(t, rows[0], rowWant{status: "rejected", code: c.code})
				if str(rows[0]["request_id"]) != r.Header.Get("x-gateway-trace") {
					t.Errorf("row request_id %v, trace %s", rows[0]["request_id"], r.Header.Get("x-gateway-trace"))
				}
				w.settled(t, 1)
			})
		})
	}

	accepted := []struct {
		name, path string
		headers    func(key string) map[string]string
		body       string
	}{
		{"completions: web_search with stream on a model with the cap", "/v1/chat/completions", bearer,
			chatBody("sim-chat", "search the web", `"stream":true,`+webSearch)},
		{"messages: raw call with anthropic-version 2023-06-01", "/v1/messages", msgHeaders,
			`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
		{"messages: a later anthropic-version", "/v1/messages",
			func(key string) map[string]string {
				return map[string]string{"x-api-key": key, "anthropic-version": "2024-10-22"}
			},
			`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
		{"messages: Bearer and anthropic-version", "/v1/messages",
			func(key string) map[string]string {
				return map[string]string{"Authorization": "Bearer " + key, "anthropic-version": "2023-06-01"}
			},
			`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses: the full history instead of previous_response_id", "/v1/responses", bearer,
			`{"model":"gpt-5-codex","instructions":"x","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"again"}]}`},
		{"generate-content: key in x-goog-api-key", "/v1beta/models/gemini-2.5-flash:generateContent",
			func(key string) map[string]string { return map[string]string{"x-goog-api-key": key} },
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
	}
	for _, c := range accepted {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+c.path, c.headers(w.key), c.body)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
			w.settled(t, 1)
		})
	}

	t.Run("responses: stream events in the spec's order", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		status, _, evs, err := rawStream(t, g.URL+"/v1/responses", bearer(w.key),
			`{"model":"gpt-5-codex","instructions":"x","stream":true,"input":[{"role":"user","content":"hi [sim:chunks=3]"}]}`)
		if err != nil || status != 200 {
			t.Fatalf("%d %v %v", status, err, evs)
		}
		checkResponsesEvents(t, evs)
		checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
		w.settled(t, 1)
	})

	// The official Gemini client streams with ?alt=sse and sends its key in
	// x-goog-api-key: plain SSE, one GenerateContentResponse per data line,
	// the last one with finishReason and usageMetadata.
	t.Run("generate-content: alt=sse stream with x-goog-api-key", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		status, header, evs, err := rawStream(t, g.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			map[string]string{"x-goog-api-key": w.key}, `{"contents":[{"role":"user","parts":[{"text":"stream it [sim:chunks=4]"}]}]}`)
		if err != nil || status != 200 {
			t.Fatalf("%d %v %v", status, err, evs)
		}
		if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("Content-Type %q", ct)
		}
		if len(evs) < 2 {
			t.Fatalf("%d events", len(evs))
		}
		text := ""
		for i, ev := range evs {
			d := gjson.ParseBytes(ev.Data)
			if !d.Get("candidates.0.content").Exists() && i < len(evs)-1 {
				t.Fatalf("event %d: %s", i, ev.Data)
			}
			text += d.Get("candidates.0.content.parts.0.text").String()
		}
		last := gjson.ParseBytes(evs[len(evs)-1].Data)
		if text == "" || last.Get("candidates.0.finishReason").String() != "STOP" ||
			last.Get("usageMetadata.candidatesTokenCount").Int() == 0 {
			t.Fatalf("text %q, last %s", text, last.Raw)
		}
		checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
		w.settled(t, 1)
	})
}
