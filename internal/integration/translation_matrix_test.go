package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// matrixPrice is every matrix model's price: uneven figures, so a cost
// that is off by a token or takes the wrong rate shows.
var matrixPrice = per("1.234567", "9.876543", "0.123457", "")

// matrixConfig serves one model per protocol, each by a channel that
// speaks only that protocol (through the real vendor plugin), and opens
// each to every client protocol. m-chat maps to another upstream id.
func matrixConfig(url string) string {
	ch := func(name, vendor, proto, model string) string {
		return `channel "` + name + `" {
  vendor    = "` + vendor + `"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["` + proto + `"]
  models    = ["` + model + `"]
}
`
	}
	cfg := ch("only-chat", "openai", "openai_chat", "m-chat=sim-upstream-chat") +
		ch("only-responses", "openai", "openai_responses", "m-responses") +
		ch("only-messages", "anthropic", "anthropic_messages", "m-messages") +
		ch("only-gemini", "gemini", "gemini_native", "m-gemini")
	for _, m := range []string{"m-chat", "m-responses", "m-messages", "m-gemini"} {
		cfg += `model "` + m + `" {
  translate_from = ["anthropic_messages", "openai_responses", "gemini_native"]
  price {
    input        = "` + matrixPrice.in.String() + `"
    output       = "` + matrixPrice.out.String() + `"
    cached_input = "` + matrixPrice.cached.String() + `"
  }
}
`
	}
	return cfg
}

// Every client protocol, through its official Go SDK, reaches a model of
// each other protocol: a plain turn, a tool call and the tool's result,
// streaming and not. The client's usage is the row's, and each row costs
// exactly the upstream's usage at the test's price (testPrices), cached
// tokens at the cached rate; the balance goes down by the rows' sum.
func TestTranslationMatrixSDKs(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: matrixConfig(up.URL)})
	models := map[string]string{
		"openai_chat": "m-chat", "openai_responses": "m-responses",
		"anthropic_messages": "m-messages", "gemini_native": "m-gemini",
	}
	for _, kind := range []string{"openai chat", "openai responses", "anthropic v1", "genai"} {
		for upstream, model := range models {
			if upstream == sdkProtocol(kind) {
				continue
			}
			header := sdkProtocol(kind) + "_to_" + upstream
			for _, stream := range []bool{false, true} {
				mode := "non-streaming"
				if stream {
					mode = "streaming"
				}
				t.Run(header+"/"+mode, func(t *testing.T) {
					t.Parallel()
					w := newWallet(g)
					ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
					defer cancel()
					c := newSDK(t, kind, g.URL, w.key, model)
					var turns []turn
					tr, err := c.ask(ctx, "Hello across protocols [sim:chunks=3 cached=4 reasoning=2]", false, stream)
					if err != nil {
						t.Fatal(err)
					}
					if tr.text == "" || tr.finish != textFinish[kind] {
						t.Fatalf("plain answer %+v", tr)
					}
					turns = append(turns, tr)
					tr, err = c.ask(ctx, "Use the get_weather tool for Paris.", true, stream)
					if err != nil {
						t.Fatal(err)
					}
					checkToolCall(t, tr)
					if tr.finish != toolFinish[kind] {
						t.Fatalf("tool call finish %q", tr.finish)
					}
					turns = append(turns, tr)
					tr, err = c.answer(ctx, `{"temp_c": 21}`, stream)
					if err != nil {
						t.Fatal(err)
					}
					if tr.text == "" || tr.toolName != "" || tr.finish != textFinish[kind] {
						t.Fatalf("after the tool result: %+v", tr)
					}
					turns = append(turns, tr)
					for _, tr := range turns {
						if got := tr.header.Get("X-Protocol-Translation"); got != header {
							t.Errorf("X-Protocol-Translation %q, want %q", got, header)
						}
						if got, ok := tr.header["X-Protocol-Warning"]; ok {
							t.Errorf("X-Protocol-Warning %q on a call that dropped nothing", got)
						}
					}
					if turns[0].usage.cached != 4 {
						t.Errorf("cached tokens %d, want 4", turns[0].usage.cached)
					}
					rows := w.rows(t, 3)
					for i, row := range rows {
						tr := turns[len(turns)-1-i] // rows come newest first
						checkRow(t, row, rowWant{status: "success", attempts: 1, billed: true})
						in, out, cached := int64(num(row["input_tokens"])), int64(num(row["output_tokens"])), int64(num(row["cached_tokens"]))
						if (sdkUsage{in, out, cached}) != tr.usage {
							t.Errorf("row %d tokens in %d out %d cached %d; the client saw %+v", i, in, out, cached, tr.usage)
						}
						checkCost(t, row) // the upstream's usage at the test's own price
						if str(row["model"]) != model {
							t.Errorf("row model %q", row["model"])
						}
					}
					w.settled(t, 3)
				})
			}
		}
	}
}

// Channel order (PRODUCT.md §7): priority first; within a priority the
// client's own protocol before a translated one; a connection failure of
// the native channel fails over to the translated one.
func TestTranslationMatrixRouting(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	dead := closedURL(t)
	ch := func(name, vendor, url, proto, model string, priority int) string {
		return `channel "` + name + `" {
  vendor    = "` + vendor + `"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["` + proto + `"]
  models    = ["` + model + `"]
  priority  = ` + itoa(priority) + `
}
`
	}
	model := func(id string) string {
		return `model "` + id + `" {
  translate_from = ["anthropic_messages", "openai_responses", "gemini_native"]
  price {
    input  = "1"
    output = "2"
  }
}
`
	}
	cfg := ch("mix-messages", "anthropic", up.URL, "anthropic_messages", "mix", 0) +
		ch("mix-gemini", "gemini", up.URL, "gemini_native", "mix", 0) +
		ch("high-gemini", "gemini", up.URL, "gemini_native", "prio", 5) +
		ch("low-messages", "anthropic", up.URL, "anthropic_messages", "prio", 0) +
		ch("dead-messages", "anthropic", dead, "anthropic_messages", "failover", 0) +
		ch("live-responses", "openai", up.URL, "openai_responses", "failover", 0) +
		model("mix") + model("prio") + model("failover")
	g := startGateway(t, testgw.Options{Config: cfg})
	msg := func(model string) string {
		return `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	}

	t.Run("native first within a priority", func(t *testing.T) {
		w := newWallet(g)
		for i := 0; i < 4; i++ {
			r := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key), msg("mix"))
			if r.Status != 200 || r.Header.Get("X-Protocol-Translation") != "" {
				t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
			}
			// A generate-content client on the same model is native on the
			// other channel.
			r = do(t, "POST", g.URL+"/v1beta/models/mix:generateContent", map[string]string{"x-goog-api-key": w.key},
				`{"contents":[{"parts":[{"text":"hi"}]}]}`)
			if r.Status != 200 || r.Header.Get("X-Protocol-Translation") != "" {
				t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
			}
		}
		// A completions client is translated; either channel may serve.
		r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("mix", "hi", ""))
		if h := r.Header.Get("X-Protocol-Translation"); r.Status != 200 ||
			(h != "openai_chat_to_anthropic_messages" && h != "openai_chat_to_gemini_native") {
			t.Fatalf("%d %q %s", r.Status, h, r.Body)
		}
	})

	t.Run("priority before the client's own protocol", func(t *testing.T) {
		w := newWallet(g)
		r := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key), msg("prio"))
		if r.Status != 200 || r.Header.Get("X-Protocol-Translation") != "anthropic_messages_to_gemini_native" {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
		}
	})

	t.Run("a dead native channel fails over to a translated one", func(t *testing.T) {
		w := newWallet(g)
		r := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key), msg("failover"))
		if r.Status != 200 || r.Header.Get("X-Protocol-Translation") != "anthropic_messages_to_openai_responses" {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
		}
		if m := gjson.ParseBytes(r.Body); m.Get("type").String() != "message" || m.Get("model").String() != "failover" {
			t.Fatalf("answer %s", r.Body)
		}
		checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 2, failed: 1, billed: true})
		w.settled(t, 1)
	})
}

// Names the client sees are the gateway's (issue 17): behind
// "my-x=upstream-x", native answers, every stream chunk and event carry
// my-x, as translated answers and the log row do.
func TestGatewayModelNames(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	cfg := `
channel "openai" {
  vendor    = "openai"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat", "openai_responses"]
  models    = ["my-gpt=gpt-4o-mini"]
}
channel "anthropic" {
  vendor    = "anthropic"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["anthropic_messages"]
  models    = ["my-claude=claude-up"]
}
channel "gemini" {
  vendor    = "gemini"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["gemini_native"]
  models    = ["my-gemini=gemini-up"]
}
model "my-gpt" {
  price {
    input  = "1"
    output = "2"
  }
}
model "my-claude" {
  price {
    input  = "1"
    output = "2"
  }
}
model "my-gemini" {
  price {
    input  = "1"
    output = "2"
  }
}
`
	g := startGateway(t, testgw.Options{Config: cfg})
	w := newWallet(g)
	cases := []struct {
		name, path, body, model string
		headers                 map[string]string
		// where the model is in an answer (and in the stream events that carry one)
		field      string
		eventField func(ev string) string
	}{
		{"completions", "/v1/chat/completions", chatBody("my-gpt", "hi", `"stream":%s`), "my-gpt", bearer(w.key),
			"model", func(string) string { return "model" }},
		{"responses", "/v1/responses", `{"model":"my-gpt","input":"hi","stream":%s}`, "my-gpt", bearer(w.key),
			"model", func(ev string) string {
				switch ev {
				case "response.created", "response.in_progress", "response.completed", "response.incomplete":
					return "response.model"
				}
				return ""
			}},
		{"messages", "/v1/messages", `{"model":"my-claude","max_tokens":32,"messages":[{"role":"user","content":"hi"}],"stream":%s}`, "my-claude", msgHeaders(w.key),
			"model", func(ev string) string {
				if ev == "message_start" {
					return "message.model"
				}
				return ""
			}},
		{"generate-content", "/v1beta/models/my-gemini:%s", `{"contents":[{"parts":[{"text":"hi"}]}]}`, "my-gemini", map[string]string{"x-goog-api-key": w.key},
			"modelVersion", func(string) string { return "modelVersion" }},
	}
	n := 0
	for _, c := range cases {
		path, body := c.path, c.body
		if strings.Contains(path, "%s") {
			path = strings.Replace(path, "%s", "generateContent", 1)
		} else {
			body = strings.Replace(body, "%s", "false", 1)
		}
		r := do(t, "POST", g.URL+path, c.headers, body)
		if got := gjson.GetBytes(r.Body, c.field).String(); r.Status != 200 || got != c.model {
			t.Errorf("%s: %d, %s = %q, want %q: %s", c.name, r.Status, c.field, got, c.model, r.Body)
		}
		path, body = c.path, c.body
		if strings.Contains(path, "%s") {
			path = strings.Replace(path, "%s", "streamGenerateContent?alt=sse", 1)
		} else {
			body = strings.Replace(body, "%s", "true", 1)
		}
		status, _, evs, err := rawStream(t, g.URL+path, c.headers, body)
		if err != nil || status != 200 || len(evs) == 0 {
			t.Fatalf("%s stream: %d %v %v", c.name, status, err, evs)
		}
		seen := 0
		for _, ev := range evs {
			if sse.IsDone(ev) {
				continue
			}
			name := ev.Name
			if name == "" {
				name = gjson.GetBytes(ev.Data, "type").String()
			}
			if f := c.eventField(name); f != "" {
				if got := gjson.GetBytes(ev.Data, f); got.Exists() {
					seen++
					if got.String() != c.model {
						t.Errorf("%s stream event %s: %s = %q, want %q", c.name, name, f, got.String(), c.model)
					}
				}
			}
		}
		if seen == 0 {
			t.Errorf("%s stream: no event named the model", c.name)
		}
		n += 2
	}
	for _, row := range w.rows(t, n) {
		if m := str(row["model"]); m != "my-gpt" && m != "my-claude" && m != "my-gemini" {
			t.Errorf("row model %q", m)
		}
	}
}

// A translate_from that no channel can serve is refused at start, with
// the file and line (issue 17).
func TestTranslateFromRefusedAtStart(t *testing.T) {
	t.Parallel()
	bin := testgw.Build(t) + "/tollgate"
	out := runExpectFailure(t, bin, `
model "lonely" {
  translate_from = ["gemini_native"]
  price {
    input  = "1"
    output = "2"
  }
}
`)
	if !strings.Contains(out, `tollgate.hcl:3,`) || !strings.Contains(out, `translate_from: no chat channel serves this model`) {
		t.Fatalf("start output:\n%s", out)
	}
}
