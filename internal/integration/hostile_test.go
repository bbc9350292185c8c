package integration

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// An upstream that misbehaves on purpose (internal/vendorsim.Hostile):
// it ignores max tokens, leaves usage out, answers what does not parse,
// compresses unasked, redirects elsewhere. The gateway must stop it,
// bill it right, and never pay for its faults.

// hostileUpstream serves a Hostile upstream, recorded like startUpstream's.
func hostileUpstream(t *testing.T, o vendorsim.HostileOptions) (*vendorsim.Hostile, string) {
	t.Helper()
	h := vendorsim.NewHostile(o)
	srv := httptest.NewServer(recordUpstream(h))
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// hostileConfig is one channel a protocol on url, and the server block.
func hostileConfig(url, server string) string {
	cfg := server
	for _, ch := range []struct{ name, vendor, proto string }{
		{"h-chat", "openai", "openai_chat"}, {"h-claude", "anthropic", "anthropic_messages"},
		{"h-resp", "openai", "openai_responses"}, {"h-gemini", "gemini", "gemini_native"},
	} {
		cfg += `
channel "` + ch.name + `" {
  vendor    = "` + ch.vendor + `"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["` + ch.proto + `"]
  models    = ["` + ch.name + `"]
}
model "` + ch.name + `" {
  translate_from = ["openai_chat", "anthropic_messages", "openai_responses", "gemini_native"]
  timeout        = "20s"
  price {
    input  = "1"
    output = "2"
  }
}
`
	}
	return cfg
}

// hostileCall is one client call in one protocol.
type hostileCall struct {
	p      protocol.ID
	model  string
	stream bool
	limit  int // max tokens; 0: none
	prompt string
}

func (c hostileCall) request(g *testgw.Gateway, key string) (url string, headers map[string]string, body string) {
	prompt := strconv.Quote(c.prompt)
	stream := ""
	if c.stream {
		stream = `,"stream":true`
	}
	lim := strconv.Itoa(c.limit)
	switch c.p {
	case protocol.AnthropicMessages:
		b := `{"model":"` + c.model + `","max_tokens":` + lim + stream + `,"messages":[{"role":"user","content":` + prompt + `}]}`
		return g.URL + "/v1/messages", msgHeaders(key), b
	case protocol.OpenAIResponses:
		b := `{"model":"` + c.model + `"` + stream + `,"input":` + prompt
		if c.limit > 0 {
			b += `,"max_output_tokens":` + lim
		}
		return g.URL + "/v1/responses", bearer(key), b + "}"
	case protocol.GeminiNative:
		method := ":generateContent"
		if c.stream {
			method = ":streamGenerateContent?alt=sse"
		}
		b := `{"contents":[{"role":"user","parts":[{"text":` + prompt + `}]}]`
		if c.limit > 0 {
			b += `,"generationConfig":{"maxOutputTokens":` + lim + `}`
		}
		return g.URL + "/v1beta/models/" + c.model + method, map[string]string{"x-goog-api-key": key}, b + "}"
	}
	b := `{"model":"` + c.model + `"` + stream + `,"messages":[{"role":"user","content":` + prompt + `}]`
	if c.limit > 0 {
		b += `,"max_tokens":` + lim
	}
	if c.stream && !strings.Contains(c.prompt, "silent") {
		b += `,"stream_options":{"include_usage":true}`
	}
	return g.URL + "/v1/chat/completions", bearer(key), b + "}"
}

// send makes the call with key, which must be answered 200: it returns
// the body of a whole answer, or the events of a stream.
func (c hostileCall) send(t *testing.T, g *testgw.Gateway, key string) ([]byte, []protocol.Event) {
	t.Helper()
	url, headers, body := c.request(g, key)
	if c.stream {
		status, _, evs, err := rawStream(t, url, headers, body)
		if status != 200 || err != nil {
			t.Fatalf("%d %v %q", status, err, evs)
		}
		return nil, evs
	}
	r := do(t, "POST", url, headers, body)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	return r.Body, nil
}

func (c hostileCall) name() string {
	mode := map[bool]string{false: "whole", true: "stream"}[c.stream]
	return string(c.p) + "→" + c.model + "/" + mode
}

// lengthStop reports whether a client's answer ended as its protocol ends
// a stop at max tokens, and the characters of output it carried.
func lengthStop(p protocol.ID, stream bool, body []byte, evs []protocol.Event) (bool, int64) {
	if !stream {
		b := gjson.ParseBytes(body)
		chars := answerState(p, b).chars
		switch p {
		case protocol.AnthropicMessages:
			return b.Get("stop_reason").Str == "max_tokens", chars
		case protocol.OpenAIResponses:
			return b.Get("status").Str == "incomplete" && b.Get("incomplete_details.reason").Str == "max_output_tokens", chars
		case protocol.GeminiNative:
			return b.Get("candidates.0.finishReason").Str == "MAX_TOKENS", chars
		}
		return b.Get("choices.0.finish_reason").Str == "length", chars
	}
	var st state
	for _, ev := range evs {
		st = streamEvent(p, st, ev)
	}
	if len(evs) == 0 {
		return false, 0
	}
	last := evs[len(evs)-1]
	switch p {
	case protocol.AnthropicMessages:
		for _, ev := range evs {
			if ev.Name == "message_delta" && gjson.GetBytes(ev.Data, "delta.stop_reason").Str == "max_tokens" {
				return last.Name == "message_stop", st.chars
			}
		}
		return false, st.chars
	case protocol.OpenAIResponses:
		return last.Name == "response.incomplete" && gjson.GetBytes(last.Data, "response.incomplete_details.reason").Str == "max_output_tokens", st.chars
	case protocol.GeminiNative:
		return gjson.GetBytes(last.Data, "candidates.0.finishReason").Str == "MAX_TOKENS", st.chars
	}
	for _, ev := range evs {
		if gjson.GetBytes(ev.Data, "choices.0.finish_reason").Str == "length" {
			return string(last.Data) == "[DONE]", st.chars
		}
	}
	return false, st.chars
}

// techView is a row's technical view.
func techView(t *testing.T, g *testgw.Gateway, key string, row map[string]any) string {
	t.Helper()
	c := do(t, "GET", g.URL+"/v1/logs/"+strconv.Itoa(num(row["id"])), bearer(key), "")
	if c.Status != 200 {
		t.Fatalf("technical view: %d %s", c.Status, c.Body)
	}
	return string(c.Body)
}

// charCap is what the gateway lets output of limit tokens hold before it
// counts the upstream as past the limit (pipeline/outlimit.go).
func charCap(limit int) int64 { return int64(limit)*8 + 64 }

// Item 2 of issue 22: an upstream that ignores max_tokens is stopped at the
// limit on every protocol and through translation, streamed or whole; the
// client's answer ends as its protocol ends a length stop; the row bills
// the limit and says the upstream ran past it; the upstream's stream is
// closed; a wallet with just enough for the call never goes below zero.
func TestHostileOutputLimit(t *testing.T) {
	t.Parallel()
	h, url := hostileUpstream(t, vendorsim.HostileOptions{AnswerWords: 3000})
	g := startGateway(t, testgw.Options{Config: hostileConfig(url, "")})
	const limit = 50
	var calls []hostileCall
	for _, c := range []struct {
		p     protocol.ID
		model string
	}{
		{protocol.OpenAIChat, "h-chat"}, {protocol.AnthropicMessages, "h-claude"},
		{protocol.OpenAIResponses, "h-resp"}, {protocol.GeminiNative, "h-gemini"},
		// Through translation.
		{protocol.OpenAIChat, "h-claude"}, {protocol.OpenAIChat, "h-gemini"},
		{protocol.AnthropicMessages, "h-chat"}, {protocol.GeminiNative, "h-resp"},
	} {
		for _, stream := range []bool{true, false} {
			for _, mode := range []string{"endless", "silent"} {
				calls = append(calls, hostileCall{p: c.p, model: c.model, stream: stream, limit: limit, prompt: "[hostile:" + mode + "] talk"})
			}
		}
	}
	// A running count on every chunk (generate-content) is stopped by it.
	calls = append(calls, hostileCall{p: protocol.GeminiNative, model: "h-gemini", stream: true, limit: limit, prompt: "[hostile:running] talk"})
	t.Run("calls", func(t *testing.T) {
		for _, c := range calls {
			hostileLimitCall(t, g, h, c, limit)
		}
	})
	if !closed(h) {
		t.Fatalf("%d endless upstream streams still open", h.OpenStreams())
	}
	// Unstopped, each stream would run to the upstream's cap of 100,000
	// events; stopped, it writes what was in flight when the gateway hung up.
	if n := h.EndlessEvents(); n > int64(len(calls))*5000 {
		t.Fatalf("the upstream wrote %d events for %d calls of %d tokens: it was not stopped at the limit", n, len(calls), limit)
	}
}

// closed waits until the hostile upstream writes no endless stream (its
// answers are recorded once written), up to 5 s.
func closed(h *vendorsim.Hostile) bool {
	deadline := time.Now().Add(5 * time.Second)
	for h.OpenStreams() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return h.OpenStreams() == 0
}

// hostileLimitCall makes one call whose upstream runs past limit.
func hostileLimitCall(t *testing.T, g *testgw.Gateway, h *vendorsim.Hostile, c hostileCall, limit int) {
	t.Run(c.name()+"/"+c.prompt[9:15], func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		resp, evs := c.send(t, g, w.key)
		stopped, chars := lengthStop(c.p, c.stream, resp, evs)
		if !stopped {
			t.Errorf("the answer did not end as a stop at max tokens: %s %q", resp, evs)
		}
		if chars == 0 || chars > charCap(limit) {
			t.Errorf("%d characters relayed for a limit of %d tokens (at most %d)", chars, limit, charCap(limit))
		}
		if !closed(h) {
			t.Fatalf("%d endless upstream streams still open", h.OpenStreams())
		}
		row := w.last(t, 1)
		checkRow(t, row, rowWant{status: "success", attempts: 1, billed: true})
		if num(row["output_tokens"]) != limit {
			t.Errorf("billed %v output tokens, want the limit %d", row["output_tokens"], limit)
		}
		if v := techView(t, g, w.key, row); !strings.Contains(v, `"k":"output_limit"`) || !strings.Contains(v, "ran past it") {
			t.Errorf("the technical view does not say the upstream ran past the limit: %s", v)
		}
		w.settled(t, 1)
	})
}

// Item 2: an account holding little more than one call's hold never goes
// below zero because its upstream ran on (0.0002 credit ended at
// -0.000612 before).
func TestHostileOutputLimitKeepsTheWallet(t *testing.T) {
	t.Parallel()
	_, url := hostileUpstream(t, vendorsim.HostileOptions{})
	g := startGateway(t, testgw.Options{Config: hostileConfig(url, "")})
	for _, c := range []hostileCall{
		{p: protocol.OpenAIChat, model: "h-chat", stream: true, limit: 50, prompt: "[hostile:silent] go"},
		{p: protocol.OpenAIChat, model: "h-chat", limit: 50, prompt: "[hostile:endless] go"},
	} {
		acct := g.Account("0.0002")
		_, key := g.Key(acct, nil)
		c.send(t, g, key)
		bal, held := g.Balance(acct)
		if held != "0" || money.MustParse(bal) < 0 {
			t.Fatalf("balance %s held %s after an upstream that ran past the limit", bal, held)
		}
	}
}

// Item 3: a whole answer without usage bills its output from its
// characters, as a stream does (2,000 words were billed no output).
func TestHostileAnswerWithoutUsage(t *testing.T) {
	t.Parallel()
	_, url := hostileUpstream(t, vendorsim.HostileOptions{AnswerWords: 2000})
	g := startGateway(t, testgw.Options{Config: hostileConfig(url, "")})
	for _, c := range []hostileCall{
		{p: protocol.OpenAIChat, model: "h-chat"}, {p: protocol.AnthropicMessages, model: "h-claude", limit: 4000},
		{p: protocol.OpenAIResponses, model: "h-resp"}, {p: protocol.GeminiNative, model: "h-gemini"},
		{p: protocol.OpenAIChat, model: "h-claude"},
	} {
		c.prompt = "[hostile:nousage] write"
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			c.send(t, g, w.key)
			row := w.last(t, 1)
			checkRow(t, row, rowWant{status: "success", attempts: 1, billed: true})
			want := (2000*len("word ") + 3) / 4
			if got := num(row["output_tokens"]); got != want {
				t.Errorf("billed %d output tokens for 2000 words without usage, want %d (characters / 4)", got, want)
			}
			if v := techView(t, g, w.key, row); !strings.Contains(v, `"k":"usage","v":"estimated"`) {
				t.Errorf("the technical view does not say the usage was estimated: %s", v)
			}
			w.settled(t, 1)
		})
	}
}

// Item 4: a whole answer that does not parse is 502 upstream_error at cost
// 0, on every protocol; a stream event that does not parse ends the stream
// early, without its terminator, billed for what was delivered; a gzip
// answer nobody asked for is decoded, another encoding refused.
func TestHostileInvalidAnswers(t *testing.T) {
	t.Parallel()
	_, url := hostileUpstream(t, vendorsim.HostileOptions{})
	g := startGateway(t, testgw.Options{Config: hostileConfig(url, "")})
	models := map[protocol.ID]string{protocol.OpenAIChat: "h-chat", protocol.AnthropicMessages: "h-claude",
		protocol.OpenAIResponses: "h-resp", protocol.GeminiNative: "h-gemini"}
	for _, p := range protocol.All {
		for _, mode := range []string{"badjson", "brotli"} {
			t.Run(string(p)+"/"+mode, func(t *testing.T) {
				t.Parallel()
				w := newWallet(g)
				url, headers, body := hostileCall{p: p, model: models[p], limit: 100, prompt: "[hostile:" + mode + "]"}.request(g, w.key)
				r := do(t, "POST", url, headers, body)
				if r.Status != 502 || strings.Contains(string(r.Body), "cut here") {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				if p == protocol.OpenAIChat || p == protocol.OpenAIResponses {
					if code, _, _ := r.errorOf(t); code != "upstream_error" {
						t.Fatalf("code %q: %s", code, r.Body)
					}
				}
				checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
				w.settled(t, 1)
			})
		}
		t.Run(string(p)+"/gzip", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			url, headers, body := hostileCall{p: p, model: models[p], limit: 100, prompt: "[hostile:gzip]"}.request(g, w.key)
			r := do(t, "POST", url, headers, body)
			if r.Status != 200 || !gjson.ValidBytes(r.Body) || answerState(p, gjson.ParseBytes(r.Body)).chars != int64(8*len("word ")) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
			w.settled(t, 1)
		})
		t.Run(string(p)+"/badevent", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			url, headers, body := hostileCall{p: p, model: models[p], stream: true, limit: 100, prompt: "[hostile:badevent]"}.request(g, w.key)
			status, _, evs, _ := rawStream(t, url, headers, body)
			if status != 200 {
				t.Fatalf("%d %q", status, evs)
			}
			var st state
			for _, ev := range evs {
				if !gjson.ValidBytes(ev.Data) && string(ev.Data) != "[DONE]" {
					t.Fatalf("an event that does not parse reached the client: %s", ev.Data)
				}
				st = streamEvent(p, st, ev)
			}
			if st.complete || st.chars != int64(len("word ")) {
				t.Fatalf("want the stream ended after its first word, without its end: %d chars, complete %v: %q", st.chars, st.complete, evs)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})
			w.settled(t, 1)
		})
	}
}

// Item 7: a vendor call never follows a redirect. A 307 to another port
// carried the POST body and the channel's key there, and its answer was
// served and billed; it is now a 502 upstream_error at cost 0, and the
// other server sees nothing.
func TestHostileRedirect(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var stolen []http.Header
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stolen = append(stolen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"stolen"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	t.Cleanup(thief.Close)
	_, url := hostileUpstream(t, vendorsim.HostileOptions{RedirectTo: thief.URL})
	g := startGateway(t, testgw.Options{Config: hostileConfig(url, "")})
	for _, c := range []hostileCall{
		{p: protocol.OpenAIChat, model: "h-chat"}, {p: protocol.OpenAIChat, model: "h-chat", stream: true},
		{p: protocol.AnthropicMessages, model: "h-claude", limit: 10}, {p: protocol.GeminiNative, model: "h-gemini"},
	} {
		c.prompt = "[hostile:redirect]"
		t.Run(c.name(), func(t *testing.T) {
			w := newWallet(g)
			url, headers, body := c.request(g, w.key)
			r := do(t, "POST", url, headers, body)
			if r.Status != 502 || strings.Contains(string(r.Body), "stolen") {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
			w.settled(t, 1)
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stolen) > 0 {
		t.Fatalf("the redirect was followed %d times, with %v", len(stolen), stolen[0])
	}
}

// pluginPeakKB is the peak resident memory (VmHWM) of the gateway's plugin
// process whose binary is named name.
func pluginPeakKB(t *testing.T, g *testgw.Gateway, name string) int {
	t.Helper()
	pid := pluginPID(t, g, name)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// pluginPID finds the gateway's child process running the plugin binary
// name (tollgate-plugin-openai).
func pluginPID(t *testing.T, g *testgw.Gateway, name string) int {
	t.Helper()
	for _, pid := range childrenOf(t, g.Cmd.Process.Pid) {
		if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(cmd), name) {
			return pid
		}
	}
	t.Fatalf("no %s process under the gateway (pid %d)", name, g.Cmd.Process.Pid)
	return 0
}

// Item 8 (its SSE part): one huge SSE data line grew a plugin to 2.3 GB. An
// event past server { max_event_size } (16 MB by default) ends the call as
// an upstream error: the plugin stops reading it, its memory does not grow
// with the event, and the call is billed for what was delivered before.
func TestHostileEventCap(t *testing.T) {
	t.Parallel()
	const big = 160 << 20
	h, url := hostileUpstream(t, vendorsim.HostileOptions{BigEvent: big})
	g := startGateway(t, testgw.Options{Config: hostileConfig(url, "")})
	w := newWallet(g)
	url2, headers, body := hostileCall{p: protocol.OpenAIChat, model: "h-chat", stream: true, limit: 100, prompt: "[hostile:bigevent]"}.request(g, w.key)
	status, _, evs, _ := rawStream(t, url2, headers, body)
	if status != 200 || hasDone(evs) {
		t.Fatalf("want a stream ended early: %d %q", status, evs)
	}
	checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})
	w.settled(t, 1)
	if sent := h.BigBytes(); sent >= big {
		t.Fatalf("the plugin read the whole %d-byte event", sent)
	}
	if kb := pluginPeakKB(t, g, "tollgate-plugin-openai"); kb > 120<<10 {
		t.Fatalf("the openai plugin peaked at %d MB for one %d MB event", kb>>10, big>>20)
	}
}

// The hostile-upstream table: every chat protocol, streamed and whole,
// against an upstream that never finishes, answers too much, answers what
// does not parse, compresses unasked or redirects. Each call ends within
// its bound (the model's 3 s timeout, plus slack), in the protocol's
// shape, with its row and nothing charged for the upstream's fault.
func TestHostileUpstreamsEveryProtocol(t *testing.T) {
	t.Parallel()
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a redirect was followed")
	}))
	t.Cleanup(thief.Close)
	h, url := hostileUpstream(t, vendorsim.HostileOptions{RedirectTo: thief.URL, MaxTime: 20 * time.Second})
	g := startGateway(t, testgw.Options{Config: strings.ReplaceAll(hostileConfig(url, ""), `timeout        = "20s"`, `timeout        = "3s"`)})
	models := map[protocol.ID]string{protocol.OpenAIChat: "h-chat", protocol.AnthropicMessages: "h-claude",
		protocol.OpenAIResponses: "h-resp", protocol.GeminiNative: "h-gemini"}
	const bound = 8 * time.Second
	for _, p := range protocol.All {
		for _, mode := range []string{"stall", "huge", "badjson", "brotli", "redirect"} {
			t.Run(string(p)+"/whole/"+mode, func(t *testing.T) {
				t.Parallel()
				w := newWallet(g)
				u, headers, body := hostileCall{p: p, model: models[p], limit: 100, prompt: "[hostile:" + mode + "]"}.request(g, w.key)
				start := time.Now()
				r := do(t, "POST", u, headers, body)
				if took := time.Since(start); took > bound {
					t.Errorf("answered after %s", took)
				}
				if r.Status != 502 && r.Status != 504 {
					t.Fatalf("%d %.300s", r.Status, r.Body)
				}
				errorShape(t, strings.TrimPrefix(u, g.URL), r.Status, r.Body)
				// A timeout is interrupted (upstream_timeout), the rest errors.
				row := w.last(t, 1)
				if s := str(row["status"]); s != "error" && s != "interrupted" || money.MustParse(str(row["cost"])) != 0 {
					t.Errorf("row %v", row)
				}
				w.settled(t, 1)
			})
		}
		t.Run(string(p)+"/stream/stall", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			u, headers, body := hostileCall{p: p, model: models[p], stream: true, limit: 100, prompt: "[hostile:stall]"}.request(g, w.key)
			start := time.Now()
			status, _, evs, _ := rawStream(t, u, headers, body)
			if took := time.Since(start); took > bound {
				t.Errorf("the stream ended after %s", took)
			}
			// Nothing had reached the client: the timeout is the answer, in
			// the protocol's shape; else the stream ends without its end.
			switch {
			case status == 504 && len(evs) == 1:
				errorShape(t, strings.TrimPrefix(u, g.URL), 504, evs[0].Data)
			case status != 200 || hasDone(evs):
				t.Fatalf("want a stream cut at the timeout: %d %q", status, evs)
			}
			row := w.last(t, 1)
			if s := str(row["status"]); s == "success" {
				t.Errorf("row %v", row)
			}
			w.settled(t, 1)
		})
	}
	if !closed(h) {
		t.Errorf("%d stalled upstream answers still open", h.OpenStreams())
	}
}
