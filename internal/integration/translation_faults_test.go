package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// Upstream failures on translated paths reach the client in the client's
// own protocol: an error status in its error shape, a cut stream without
// its terminator, a client that leaves ending the upstream call.
func TestTranslationFaults(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: vendorsConfig(up.URL)})

	// Alone, before the parallel cases: it watches the upstream go idle.
	t.Run("client disconnect mid-stream, messages client on a chat upstream", func(t *testing.T) {
		w := newWallet(g)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		resp, br := openStream(t, ctx, g.URL+"/v1/messages", msgHeaders(w.key),
			`{"model":"up-chat","max_tokens":400,"stream":true,"messages":[{"role":"user","content":"slowly [sim:slow=200ms] [sim:words=60]"}]}`)
		if resp.Header.Get("X-Protocol-Translation") != "anthropic_messages_to_openai_chat" {
			t.Fatalf("headers %v", resp.Header)
		}
		deltas := 0
		for deltas < 2 {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("after %d deltas: %v", deltas, err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, "text_delta") {
				deltas++
			}
		}
		if n := up.inFlight(); n != 1 {
			t.Fatalf("the upstream answers %d calls mid-stream, want 1", n)
		}
		if _, held := g.Balance(w.acct); held == "0" {
			t.Fatal("no hold while the stream runs")
		}
		resp.Body.Close()
		up.waitIdle(t, time.Second)
		checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "client_closed", attempts: 1, billed: true})
		w.settled(t, 1)
	})

	msg := func(model, prompt, extra string) string {
		return `{"model":"` + model + `","max_tokens":200,"messages":[{"role":"user","content":"` + prompt + `"}]` + extra + `}`
	}
	resp := func(prompt, extra string) string {
		return `{"model":"up-chat","instructions":"x","input":[{"role":"user","content":"` + prompt + `"}]` + extra + `}`
	}
	gem := func(prompt string) string {
		return `{"contents":[{"role":"user","parts":[{"text":"` + prompt + `"}]}]}`
	}
	bearerVersion := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "anthropic-version": "2023-06-01"}
	}

	errs := []struct {
		name, path, body string
		status           int
		code             string // the row's code (and the completions code)
		check            func(b gjson.Result) bool
	}{
		{"chat to messages upstream 429", "/v1/chat/completions", chatBody("up-claude", "x [sim:error=429]", ""), 429, "rate_limit_exceeded",
			func(b gjson.Result) bool {
				return b.Get("error.code").String() == "rate_limit_exceeded" && b.Get("error.type").String() == "rate_limit_error"
			}},
		{"chat to generate-content upstream 400", "/v1/chat/completions", chatBody("up-gemini", "x [sim:error=400]", ""), 400, "invalid_request",
			func(b gjson.Result) bool {
				return b.Get("error.code").String() == "invalid_request" && b.Get("error.type").String() == "invalid_request_error"
			}},
		{"messages to chat upstream 500", "/v1/messages", msg("up-chat", "x [sim:error=500]", ""), 500, "upstream_error",
			func(b gjson.Result) bool {
				return b.Get("type").String() == "error" && b.Get("error.type").String() == "api_error" && !b.Get("error.code").Exists()
			}},
		{"responses to chat upstream 429", "/v1/responses", resp("x [sim:error=429]", ""), 429, "rate_limit_exceeded",
			func(b gjson.Result) bool {
				return b.Get("error.code").String() == "rate_limit_exceeded" && b.Get("error.type").String() == "rate_limit_error"
			}},
		{"generate-content to chat upstream 401", "/v1beta/models/up-chat:generateContent", gem("x [sim:error=401]"), 401, "invalid_api_key",
			func(b gjson.Result) bool {
				return b.Get("error.code").Int() == 401 && b.Get("error.status").String() == "UNAUTHENTICATED"
			}},
	}
	for _, c := range errs {
		t.Run("error status/"+c.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+c.path, bearerVersion(w.key), c.body)
			if r.Status != c.status || !c.check(gjson.ParseBytes(r.Body)) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			row := w.last(t, 1)
			if str(row["status"]) != "error" || str(row["error_code"]) != c.code || str(row["cost"]) != "0" {
				t.Fatalf("row %v", row)
			}
			w.settled(t, 1)
		})
	}

	// After the 200 nothing is injected: the translated stream just stops
	// before the events that only a complete upstream answer releases.
	cuts := []struct {
		name, path, body string
		complete         func(ev protocol.Event) bool // an event a cut stream must not carry
	}{
		{"chat client, messages upstream", "/v1/chat/completions",
			chatBody("up-claude", "a long story [sim:cut=4]", `"stream":true,"stream_options":{"include_usage":true}`),
			func(ev protocol.Event) bool {
				fr := gjson.GetBytes(ev.Data, "choices.0.finish_reason")
				return strings.TrimSpace(string(ev.Data)) == "[DONE]" || fr.Exists() && fr.Type != gjson.Null
			}},
		{"chat client, generate-content upstream", "/v1/chat/completions",
			chatBody("up-gemini", "a long story [sim:cut=3]", `"stream":true`),
			func(ev protocol.Event) bool {
				fr := gjson.GetBytes(ev.Data, "choices.0.finish_reason")
				return strings.TrimSpace(string(ev.Data)) == "[DONE]" || fr.Exists() && fr.Type != gjson.Null
			}},
		{"messages client, chat upstream", "/v1/messages", msg("up-chat", "a long story [sim:cut=3]", `,"stream":true`),
			func(ev protocol.Event) bool { return ev.Name == "message_stop" || ev.Name == "message_delta" }},
		{"responses client, chat upstream", "/v1/responses", resp("a long story [sim:cut=3]", `,"stream":true`),
			func(ev protocol.Event) bool {
				return ev.Name == "response.completed" || ev.Name == "response.incomplete" || ev.Name == "response.failed"
			}},
		{"generate-content client, chat upstream", "/v1beta/models/up-chat:streamGenerateContent?alt=sse", gem("a long story [sim:cut=3]"),
			func(ev protocol.Event) bool {
				return gjson.GetBytes(ev.Data, "candidates.0.finishReason").Exists() || gjson.GetBytes(ev.Data, "usageMetadata").Exists()
			}},
	}
	for _, c := range cuts {
		t.Run("mid-stream cut/"+c.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			status, _, evs, _ := rawStream(t, g.URL+c.path, bearerVersion(w.key), c.body)
			if status != 200 || len(evs) == 0 {
				t.Fatalf("%d, %v", status, evs)
			}
			for _, ev := range evs {
				if c.complete(ev) {
					t.Fatalf("a cut stream carried %s %s", ev.Name, ev.Data)
				}
				if ev.Name == "error" || gjson.GetBytes(ev.Data, "error").Exists() {
					t.Fatalf("an injected error event: %s", ev.Data)
				}
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})

			// The control: the same call uncut carries the end events.
			whole := strings.NewReplacer("[sim:cut=3]", "", "[sim:cut=4]", "").Replace(c.body)
			status, _, evs, err := rawStream(t, g.URL+c.path, bearerVersion(w.key), whole)
			ended := false
			for _, ev := range evs {
				ended = ended || c.complete(ev)
			}
			if status != 200 || err != nil || !ended {
				t.Fatalf("the uncut control did not end properly: %d %v %v", status, err, evs)
			}
			w.settled(t, 2)
		})
	}
}
