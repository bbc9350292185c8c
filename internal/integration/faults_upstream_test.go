package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// Upstream faults with one channel: error statuses passed through in each
// protocol's shape, a closed port, a hang past the model's timeout, a stream
// cut by the upstream and one dropped by the client. Every failure leaves one
// row, and the hold is released.
func TestFaultsUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	disc := startUpstream(t, sim.Knobs{})
	cfg := channelBlock("solo", up.URL, 0, "solo", "slowpoke") +
		channelBlock("gone", closedURL(t), 0, "gone") +
		channelBlock("disc", disc.URL, 0, "disc") + `
channel "solo-claude" {
  vendor    = "anthropic"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["anthropic_messages"]
  models    = ["solo-claude", "slowpoke-claude"]
}
channel "solo-gemini" {
  vendor    = "gemini"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["gemini_native"]
  models    = ["solo-gemini", "slowpoke-gemini"]
}
channel "gone-claude" {
  vendor    = "anthropic"
  base_url  = "` + closedURL(t) + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["anthropic_messages"]
  models    = ["gone-claude"]
}
channel "gone-gemini" {
  vendor    = "gemini"
  base_url  = "` + closedURL(t) + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["gemini_native"]
  models    = ["gone-gemini"]
}
`
	for _, m := range []string{"slowpoke", "slowpoke-claude", "slowpoke-gemini"} {
		cfg += `
model "` + m + `" {
  timeout = "2s"
  price {
    input  = "1"
    output = "2"
  }
}
`
	}
	for _, m := range []string{"solo", "gone", "disc", "solo-claude", "solo-gemini", "gone-claude", "gone-gemini"} {
		cfg += modelBlock(m)
	}
	g := startGateway(t, testgw.Options{Config: cfg})

	// Errors rule 4: the upstream status passes through, with the mapped
	// completions code and type; the other shapes carry their own names.
	statuses := []struct {
		status       int
		code, typ    string // completions (and messages type)
		messagesType string
		geminiStatus string
		retried      int // attempts listed: only a 5xx or 429 is one another channel could have served
	}{
		{400, "invalid_request", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT", 0},
		{401, "invalid_api_key", "authentication_error", "authentication_error", "UNAUTHENTICATED", 0},
		{403, "permission_denied", "permission_error", "permission_error", "PERMISSION_DENIED", 0},
		{404, "not_found", "invalid_request_error", "not_found_error", "NOT_FOUND", 0},
		{422, "invalid_request", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT", 0},
		{503, "upstream_error", "api_error", "overloaded_error", "UNAVAILABLE", 1},
		{429, "rate_limit_exceeded", "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED", 1},
		{500, "upstream_error", "api_error", "api_error", "INTERNAL", 1},
	}
	for _, s := range statuses {
		prompt := "fail [sim:error=" + itoa(s.status) + "]"
		t.Run("upstream "+itoa(s.status)+"/completions", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("solo", prompt, ""))
			code, typ, msg := r.errorOf(t)
			if r.Status != s.status || code != s.code || typ != s.typ || msg == "" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if strings.Contains(string(r.Body), "request_id") {
				t.Errorf("an upstream request_id leaked: %s", r.Body)
			}
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
					t.Errorf("upstream %d leaked %s", s.status, k)
				}
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: s.code, attempts: 1, failed: s.retried})
			w.settled(t, 1)
		})
		t.Run("upstream "+itoa(s.status)+"/messages", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key),
				`{"model":"solo-claude","max_tokens":32,"messages":[{"role":"user","content":"`+prompt+`"}]}`)
			b := gjson.ParseBytes(r.Body)
			if r.Status != s.status || b.Get("type").String() != "error" || b.Get("error.type").String() != s.messagesType ||
				b.Get("error.message").String() == "" || b.Get("error.code").Exists() {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: s.code, attempts: 1, failed: s.retried})
			w.settled(t, 1)
		})
		t.Run("upstream "+itoa(s.status)+"/generate-content", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1beta/models/solo-gemini:generateContent", map[string]string{"x-goog-api-key": w.key},
				`{"contents":[{"role":"user","parts":[{"text":"`+prompt+`"}]}]}`)
			b := gjson.ParseBytes(r.Body)
			if r.Status != s.status || b.Get("error.code").Int() != int64(s.status) || b.Get("error.status").String() != s.geminiStatus ||
				b.Get("error.message").String() == "" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: s.code, attempts: 1, failed: s.retried})
			w.settled(t, 1)
		})
	}

	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "non-streaming", true: "streaming"}[stream]
		extra := map[bool]string{false: "", true: `"stream":true`}[stream]

		t.Run("connection refused is 502 upstream_unreachable/"+mode, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("gone", "anyone there?", extra))
			if code, typ, _ := r.errorOf(t); r.Status != 502 || code != "upstream_unreachable" || typ != "api_error" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_unreachable", attempts: 1, failed: 1})
			w.settled(t, 1)
		})

		t.Run("hang past the model timeout is 504 upstream_timeout/"+mode, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			start := time.Now()
			r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("slowpoke", "wait [sim:hang]", extra))
			took := time.Since(start)
			if code, typ, _ := r.errorOf(t); r.Status != 504 || code != "upstream_timeout" || typ != "api_error" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if took < 2*time.Second || took > 6*time.Second {
				t.Errorf("answered after %s, want about the model's 2s", took)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "upstream_timeout", attempts: 1})
			w.settled(t, 1)
		})
	}

	// A closed port and a hang in the messages and generate-content shapes.
	for _, tc := range []struct {
		name, model, prompt, status, typ string
		code                             int
		rowStatus, rowCode               string
		failed                           int
	}{
		{"connection refused", "gone", "anyone there?", "UNAVAILABLE", "api_error", 502, "error", "upstream_unreachable", 1},
		{"hang past the model timeout", "slowpoke", "wait [sim:hang]", "DEADLINE_EXCEEDED", "api_error", 504, "interrupted", "upstream_timeout", 0},
	} {
		t.Run(tc.name+"/messages", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key),
				`{"model":"`+tc.model+`-claude","max_tokens":32,"messages":[{"role":"user","content":"`+tc.prompt+`"}]}`)
			b := gjson.ParseBytes(r.Body)
			if r.Status != tc.code || b.Get("type").String() != "error" || b.Get("error.type").String() != tc.typ ||
				b.Get("error.message").String() == "" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: tc.rowStatus, code: tc.rowCode, attempts: 1, failed: tc.failed})
			w.settled(t, 1)
		})
		t.Run(tc.name+"/generate-content", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1beta/models/"+tc.model+"-gemini:generateContent", map[string]string{"x-goog-api-key": w.key},
				`{"contents":[{"role":"user","parts":[{"text":"`+tc.prompt+`"}]}]}`)
			b := gjson.ParseBytes(r.Body)
			if r.Status != tc.code || b.Get("error.code").Int() != int64(tc.code) || b.Get("error.status").String() != tc.status ||
				b.Get("error.message").String() == "" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: tc.rowStatus, code: tc.rowCode, attempts: 1, failed: tc.failed})
			w.settled(t, 1)
		})
	}

	// The model's timeout bounds the whole stream: past it the stream just
	// ends, and the row is interrupted and billed for what was sent.
	t.Run("timeout mid-stream", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		start := time.Now()
		status, _, evs, _ := rawStream(t, g.URL+"/v1/chat/completions", bearer(w.key),
			chatBody("slowpoke", "slowly [sim:slow=400ms] [sim:words=40]", `"stream":true`))
		took := time.Since(start)
		if status != 200 || len(evs) < 2 || hasDone(evs) {
			t.Fatalf("%d, %d events, done %v", status, len(evs), hasDone(evs))
		}
		if took < 2*time.Second || took > 6*time.Second {
			t.Errorf("the stream ended after %s, want about the model's 2s", took)
		}
		checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "upstream_timeout", attempts: 1, billed: true})
		w.settled(t, 1)
	})

	// Mid-stream failures: after the 200 the gateway injects nothing; the
	// stream just ends without its terminator. Billed on what was sent.
	t.Run("mid-stream cut/completions", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := chatBody("solo", "tell me a long story [sim:cut=3]", `"stream":true,"stream_options":{"include_usage":true}`)
		status, _, evs, _ := rawStream(t, g.URL+"/v1/chat/completions", bearer(w.key), body)
		if status != 200 || len(evs) == 0 {
			t.Fatalf("%d, %d events", status, len(evs))
		}
		for _, ev := range evs {
			if strings.TrimSpace(string(ev.Data)) == "[DONE]" {
				t.Fatal("[DONE] after an upstream cut")
			}
			if fr := gjson.GetBytes(ev.Data, "choices.0.finish_reason"); fr.Exists() && fr.Type != gjson.Null {
				t.Fatalf("finish_reason %s after an upstream cut", fr)
			}
			if gjson.GetBytes(ev.Data, "error").Exists() {
				t.Fatalf("an injected error frame: %s", ev.Data)
			}
		}
		// No usage came: input is the pre-charge estimate, ceil(bytes/4) of
		// the messages as sent; output ceil(characters sent / 4); at 1 and
		// 2 per million (1000 and 2000 nano a token).
		var chars int64
		for _, ev := range evs {
			chars += runes(gjson.GetBytes(ev.Data, "choices.0.delta.content").String())
		}
		in, out := (int64(len(gjson.Get(body, "messages").Raw))+3)/4, (chars+3)/4
		row := w.last(t, 1)
		checkRow(t, row, rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})
		if got, want := checkCost(t, row), money.Nano(in*1000+out*2000); got != want || num(row["input_tokens"]) != int(in) {
			t.Fatalf("cost %s, want %s (input %d, output %d): %v", got, want, in, out, row)
		}
		w.settled(t, 1)
	})
	t.Run("mid-stream cut/messages", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		status, _, evs, _ := rawStream(t, g.URL+"/v1/messages", msgHeaders(w.key),
			`{"model":"solo-claude","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"a long story [sim:cut=4]"}]}`)
		if status != 200 || len(evs) == 0 {
			t.Fatalf("%d, %d events", status, len(evs))
		}
		var chars int64
		for _, ev := range evs {
			if ev.Name == "message_stop" || ev.Name == "message_delta" || ev.Name == "error" {
				t.Fatalf("%s event after an upstream cut", ev.Name)
			}
			chars += runes(gjson.GetBytes(ev.Data, "delta.text").String())
		}
		// message_start reported the input (and 1 output token); the
		// output is estimated from the characters sent.
		start := gjson.GetBytes(evs[0].Data, "message.usage")
		in, out := start.Get("input_tokens").Int(), max(start.Get("output_tokens").Int(), (chars+3)/4)
		row := w.last(t, 1)
		checkRow(t, row, rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})
		if got, want := checkCost(t, row), money.Nano(in*1000+out*2000); got != want {
			t.Fatalf("cost %s, want %s (input %d, output %d): %v", got, want, in, out, row)
		}
		w.settled(t, 1)
	})

	// The client goes away mid-stream: the row is interrupted and billed for
	// what was produced, and the upstream request is ended too.
	t.Run("client disconnect mid-stream", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		resp, br := openStream(t, ctx, g.URL+"/v1/chat/completions", bearer(w.key),
			chatBody("disc", "slowly now [sim:slow=200ms] [sim:words=60]", `"stream":true`))
		events := 0
		for events < 2 {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("after %d events: %v", events, err)
			}
			if strings.HasPrefix(line, "data: ") {
				events++
			}
		}
		if disc.inFlight() != 1 {
			t.Fatalf("the upstream answers %d calls mid-stream, want 1", disc.inFlight())
		}
		if _, held := g.Balance(w.acct); held == "0" {
			t.Fatal("no hold while the stream runs")
		}
		resp.Body.Close()
		closed := time.Now()
		disc.waitIdle(t, time.Second)
		t.Logf("the upstream call ended %s after the client left", time.Since(closed))
		checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "client_closed", attempts: 1, billed: true})
		w.settled(t, 1)
	})
}
