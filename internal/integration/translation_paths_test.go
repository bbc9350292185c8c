package integration

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// Every gateway-side translation path, driven by the client's official SDK
// through the real vendor plugin of the upstream protocol: the
// X-Protocol-Translation header, a plain answer and a tool round trip,
// streaming and not, each billed on one row.
func TestTranslationPaths(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: vendorsConfig(up.URL)})

	paths := []struct {
		sdk, model, header string
	}{
		{"openai chat", "up-claude", "openai_chat_to_anthropic_messages"},
		{"openai chat", "up-gemini", "openai_chat_to_gemini_native"},
		{"anthropic v1", "up-chat", "anthropic_messages_to_openai_chat"},
		{"anthropic v2", "up-chat", "anthropic_messages_to_openai_chat"},
		{"openai responses", "up-chat", "openai_responses_to_openai_chat"},
		{"genai", "up-chat", "gemini_native_to_openai_chat"},
	}
	t.Run("sdk", func(t *testing.T) {
		for _, p := range paths {
			for _, stream := range []bool{false, true} {
				mode := "non-streaming"
				if stream {
					mode = "streaming"
				}
				t.Run(p.header+"/"+p.sdk+"/"+mode, func(t *testing.T) {
					t.Parallel()
					w := newWallet(g)
					ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
					defer cancel()
					c := newSDK(t, p.sdk, g.URL, w.key, p.model)
					tr, err := c.ask(ctx, "Hello through a translator [sim:chunks=3]", false, stream)
					if err != nil {
						t.Fatal(err)
					}
					if tr.text == "" || tr.finish != textFinish[p.sdk] {
						t.Fatalf("answer %+v", tr)
					}
					if got := tr.header.Get("X-Protocol-Translation"); got != p.header {
						t.Fatalf("X-Protocol-Translation %q, want %q", got, p.header)
					}
					if got, ok := tr.header["X-Protocol-Warning"]; ok {
						t.Fatalf("X-Protocol-Warning %q on a call that dropped nothing", got)
					}

					tr, err = c.ask(ctx, "Use the get_weather tool for Paris.", true, stream)
					if err != nil {
						t.Fatal(err)
					}
					checkToolCall(t, tr)
					if tr.finish != toolFinish[p.sdk] || tr.header.Get("X-Protocol-Translation") != p.header {
						t.Fatalf("tool call finish %q, headers %v", tr.finish, tr.header)
					}
					tr, err = c.answer(ctx, `{"temp_c": 21}`, stream)
					if err != nil {
						t.Fatal(err)
					}
					if tr.text == "" || tr.toolName != "" || tr.finish != textFinish[p.sdk] {
						t.Fatalf("after the tool result: %+v", tr)
					}
					for _, row := range w.rows(t, 3) {
						checkRow(t, row, rowWant{status: "success", attempts: 1, billed: true})
					}
					w.settled(t, 3)
				})
			}
		}
	})

	// X-Protocol-Warning names the fields the upstream protocol cannot
	// carry, as the client sent them, in request order; it is absent when
	// nothing was dropped.
	msgBody := func(extra string) string {
		return `{"model":"up-chat","max_tokens":64,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	respBody := func(extra string) string {
		return `{"model":"up-chat","instructions":"terse","input":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	gemBody := func(extra string) string {
		return `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]` + extra + `}`
	}
	warnings := []struct {
		name, path, body, translation, warning string
		stream                                 bool
	}{
		{"chat to messages drops seed and logprobs", "/v1/chat/completions",
			chatBody("up-claude", "hi", `"seed":7,"logprobs":true`), "openai_chat_to_anthropic_messages", "seed; logprobs", false},
		{"chat to messages streaming drops seed", "/v1/chat/completions",
			chatBody("up-claude", "hi", `"stream":true,"seed":7`), "openai_chat_to_anthropic_messages", "seed", true},
		{"chat to messages drops nothing", "/v1/chat/completions",
			chatBody("up-claude", "hi", `"temperature":0.5`), "openai_chat_to_anthropic_messages", "", false},
		{"chat to generate-content drops logprobs", "/v1/chat/completions",
			chatBody("up-gemini", "hi", `"logprobs":true`), "openai_chat_to_gemini_native", "logprobs", false},
		{"chat to generate-content keeps seed", "/v1/chat/completions",
			chatBody("up-gemini", "hi", `"seed":7`), "openai_chat_to_gemini_native", "", false},
		{"messages to chat drops top_k", "/v1/messages",
			msgBody(`,"top_k":5`), "anthropic_messages_to_openai_chat", "top_k", false},
		{"messages to chat drops nothing", "/v1/messages",
			msgBody(``), "anthropic_messages_to_openai_chat", "", false},
		{"responses to chat drops store", "/v1/responses",
			respBody(`,"store":false`), "openai_responses_to_openai_chat", "store", false},
		{"generate-content to chat drops topK", "/v1beta/models/up-chat:generateContent",
			gemBody(`,"generationConfig":{"topK":4,"temperature":0.2}`), "gemini_native_to_openai_chat", "generationConfig.topK", false},
	}
	for _, c := range warnings {
		t.Run("warning/"+c.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			h := map[string]string{"Authorization": "Bearer " + w.key, "anthropic-version": "2023-06-01"}
			var status int
			var header map[string][]string
			if c.stream {
				st, hd, _, err := rawStream(t, g.URL+c.path, h, c.body)
				if err != nil {
					t.Fatal(err)
				}
				status, header = st, hd
			} else {
				r := do(t, "POST", g.URL+c.path, h, c.body)
				status, header = r.Status, r.Header
				if status != 200 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			hd := (map[string][]string)(header)
			if got := first(hd["X-Protocol-Translation"]); got != c.translation {
				t.Errorf("X-Protocol-Translation %q, want %q", got, c.translation)
			}
			got, present := hd["X-Protocol-Warning"]
			switch {
			case c.warning == "" && present:
				t.Errorf("X-Protocol-Warning %q, want none", got)
			case c.warning != "" && first(got) != c.warning:
				t.Errorf("X-Protocol-Warning %q, want %q", got, c.warning)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
			w.settled(t, 1)
		})
	}

	t.Run("responses client on a chat upstream: stream events in the spec's order", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		status, h, evs, err := rawStream(t, g.URL+"/v1/responses", bearer(w.key),
			`{"model":"up-chat","instructions":"x","stream":true,"input":[{"role":"user","content":"hi [sim:chunks=3]"}]}`)
		if err != nil || status != 200 || h.Get("X-Protocol-Translation") != "openai_responses_to_openai_chat" {
			t.Fatalf("%d %v %v %v", status, err, h, evs)
		}
		checkResponsesEvents(t, evs)
		checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
		w.settled(t, 1)
	})

	// Without translate_from a messages client cannot reach a chat-only
	// model: 503 no_channel_available in the messages shape, nothing billed.
	t.Run("messages client on a chat-only model without translate_from", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		r := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key),
			`{"model":"up-chatonly","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
		m := r.json(t)
		e, _ := m["error"].(map[string]any)
		if r.Status != 503 || m["type"] != "error" || e == nil || e["type"] != "overloaded_error" || e["message"] == "" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if _, ok := e["code"]; ok {
			t.Fatalf("a messages-style error has no string code: %s", r.Body)
		}
		if r.Header.Get("X-Protocol-Translation") != "" {
			t.Fatalf("translation header on a refused call: %v", r.Header)
		}
		checkRow(t, w.last(t, 1), rowWant{status: "rejected", code: "no_channel_available"})
		w.settled(t, 1)
	})
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
