package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// Exact costs. Every billed call's row must cost exactly what the usage
// its upstream reported costs at the model's prices, to the nano: the
// prices below are the tests' own statement of what each config says (a
// wrong price in a config fails the tests), and the usage is read from
// the upstream's own bytes, never from the gateway's row:
//
//   - calls to an in-test upstream (vendorsim over HTTP): startUpstream
//     records every answer it writes;
//   - calls the gateway did not translate: the answer the client got is
//     the upstream's own (the embedded sim plugin has no wire to record),
//     read from the recording client every raw call and SDK goes through;
//     a completions stream whose client did not ask for usage is replayed
//     through an in-process vendorsim, the sim engine the plugin runs.
//
// A row matches a report when the usage the gateway must bill from it
// (the report's, or for a stream cut before its final usage the estimate
// of pipeline/settle.go: input as reported else the pre-charge estimate of
// the client body, output the larger of the reported and ceil(characters
// emitted / 4), checked at every event of the stream) has the row's
// tokens; the row's cost must then be that usage at the model's prices,
// each part rounded half up to the nano as pipeline.TokenCost does.

// price is a model's token prices per million; zero cached or write
// prices fall back to input, as in config.
type price struct{ in, out, cached, write money.Nano }

func per(in, out, cached, write string) price {
	p := price{in: money.MustParse(in), out: money.MustParse(out)}
	if cached != "" {
		p.cached = money.MustParse(cached)
	}
	if write != "" {
		p.write = money.MustParse(write)
	}
	return p
}

// testPrices is every priced model of the tests' configs, written again
// here on purpose: the embedded default (core/config/default.go), then the
// test configs.
var testPrices = func() map[string]price {
	m := map[string]price{
		"sim-chat":                  per("0.10", "0.40", "0.025", ""),
		"claude-sonnet-4-5":         per("3", "15", "0.30", "3.75"),
		"claude-sonnet-5":           per("3", "15", "0.30", "3.75"),
		"claude-opus-4-8":           per("5", "25", "0.50", "6.25"),
		"claude-haiku-4-5-20251001": per("1", "5", "0.10", "1.25"),
		"gpt-5-codex":               per("1.25", "10", "0.125", ""),
		"gpt-4o-mini":               per("0.15", "0.60", "0.075", ""),
		"gemini-2.5-flash":          per("0.30", "2.50", "0.03", ""),
		// vendorsConfig
		"up-gpt":      per("1", "2", "", ""),
		"up-chatonly": per("1", "2", "", ""),
		"up-claude":   per("3", "15", "", ""),
		"up-gemini":   per("0.3", "2.5", "", ""),
		"up-chat":     per("0.5", "1.5", "", ""),
		// customstage_test.go
		"deny-chat": per("1", "2", "", ""),
		// orgagents_support_test.go: orgAgentsConfig.
		"org-chat":   per("3", "15", "", ""),
		"org-vision": per("3", "15", "", ""),
		"org-web":    per("3", "15", "", ""),
		"org-other":  per("3", "15", "", ""),
		"org-pin":    per("3", "15", "", ""),
		"org-cap":    per("0", "1", "", ""),
		// discovery_test.go, ratelimit_account_test.go
		"chat-only":  per("1", "2", "", ""),
		"limit-chat": per("1", "2", "", ""),
		// translation_matrix_test.go: the matrix models (matrixPrice).
		"m-chat":      matrixPrice,
		"m-responses": matrixPrice,
		"m-messages":  matrixPrice,
		"m-gemini":    matrixPrice,
		// cachedConfig (below): every price part distinct.
		"cache-claude": per("2", "8", "0.2", "2.5"),
		"cache-gpt":    per("2", "8", "0.5", ""),
		// errors_truth_test.go: one output token is a credit.
		"tt-dear": per("1", "1000000", "", ""),
	}
	// modelBlock and the faults tests' slow models: 1 and 2.
	for _, id := range []string{"solo", "gone", "disc", "solo-claude", "solo-gemini", "gone-claude", "gone-gemini",
		"slowpoke", "slowpoke-claude", "slowpoke-gemini", "fo-500", "fo-closed", "fo-429", "all-429", "all-500",
		"brk", "mixed", "idem-chat", "leaky", "pc-big", "pc-small", "bt", "bt-gone", "bt-claude", "bt-slow",
		"lk", "lk-claude", "lk-gemini",
		// hostile_test.go
		"h-chat", "h-claude", "h-resp", "h-gemini", "h-long",
		// translation_matrix_test.go: routing and model names.
		"mix", "prio", "failover", "my-gpt", "my-claude", "my-gemini",
		// errors_truth_test.go
		"tt-chat", "tt-slow", "tt-chat-only", "tt-orphan", "tt-gone-completions", "tt-gone-responses", "tt-gone-messages",
		"tt-gone-generate-content", "tt-tls", "tt-dns"} {
		m[id] = per("1", "2", "", "")
	}
	// agentsConfig and its extras: 3 and 15.
	for _, id := range []string{"ag-claude", "ag-gpt", "ag-gpt-plain", "ag-slow", "ag-slowch", "ag-chat", "ag-gemini",
		"ag-claude-up", "ag-gpt-up", "ag-gpt-web", "ag-gpt-narrow", "ag-longch", "ag-idle", "ag-idlech", "ag-chat-r"} {
		m[id] = per("3", "15", "", "")
	}
	return m
}()

// usage is what a call is billed on; in counts cached and written tokens.
type usage struct{ in, cached, written, out int64 }

// cost is u at p, each part rounded half up to the nano.
func (p price) cost(t *testing.T, u usage) money.Nano {
	t.Helper()
	cached, write := p.cached, p.write
	if cached == 0 {
		cached = p.in
	}
	if write == 0 {
		write = p.in
	}
	var sum money.Nano
	for _, part := range []struct {
		n     int64
		price money.Nano
	}{{max(u.in-u.cached-u.written, 0), p.in}, {u.cached, cached}, {u.written, write}, {u.out, p.out}} {
		c, ok := money.MulPerMillion(part.n, part.price)
		if ok {
			sum, ok = money.Add(sum, c)
		}
		if !ok {
			t.Fatalf("a test cost out of range: %+v at %+v", u, p)
		}
	}
	return sum
}

// state is what an upstream had reported after one event of a stream (or
// of a whole answer).
type state struct {
	usage
	reported bool  // the final usage was seen
	chars    int64 // generated characters so far
	complete bool  // the answer ended normally
}

// billed is the usage the gateway bills for a call that ended at s;
// estimate is the pre-charge input estimate (-1: unknown).
func (s state) billed(estimate int64) (usage, bool) {
	if s.reported {
		return s.usage, true
	}
	u := s.usage
	if u.in == 0 {
		if estimate < 0 {
			return u, false
		}
		u.in = estimate
	}
	u.in = max(u.in, u.cached+u.written)
	u.out = max(u.out, (s.chars+3)/4)
	return u, true
}

// exchange is one recorded call: the request body and the answer's bytes.
type exchange struct {
	path, query string
	req         []byte
	key         string // the API key of a call that got no answer
	status      int
	translated  bool

	mu   sync.Mutex
	resp bytes.Buffer

	replayOnce sync.Once
	replay     []state
}

// replayed is the sim engine's answer to a call that got none, worked
// out once.
func (e *exchange) replayed() []state {
	e.replayOnce.Do(func() { e.replay = replaySim(e) })
	return e.replay
}

func (e *exchange) Write(p []byte) {
	e.mu.Lock()
	e.resp.Write(p)
	e.mu.Unlock()
}

func (e *exchange) body() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return bytes.Clone(e.resp.Bytes())
}

// protocolOf names the chat protocol of a path ("" for other paths).
func protocolOf(path string) protocol.ID {
	switch {
	case path == "/v1/chat/completions":
		return protocol.OpenAIChat
	case path == "/v1/messages":
		return protocol.AnthropicMessages
	case path == "/v1/responses":
		return protocol.OpenAIResponses
	case strings.HasSuffix(path, ":generateContent") || strings.HasSuffix(path, ":streamGenerateContent"):
		return protocol.GeminiNative
	}
	return ""
}

// states reads an answer's reports: one per event of a stream, one for a
// JSON answer; none for an error or another path.
func (e *exchange) states() []state {
	p := protocolOf(e.path)
	if p == "" || e.status != 200 {
		return nil
	}
	b := e.body()
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return []state{answerState(p, gjson.ParseBytes(trimmed))}
	}
	if len(trimmed) > 0 && trimmed[0] == '[' { // a generate-content stream as a JSON array
		var out []state
		var st state
		gjson.ParseBytes(trimmed).ForEach(func(_, v gjson.Result) bool {
			st = streamEvent(p, st, protocol.Event{Data: []byte(v.Raw)})
			out = append(out, st)
			return true
		})
		return out
	}
	var out []state
	var st state
	r := sse.NewReader(bytes.NewReader(b))
	for {
		ev, err := r.Next()
		if err != nil {
			return out
		}
		st = streamEvent(p, st, ev)
		out = append(out, st)
	}
}

// answerState is the report of a non-streaming answer.
func answerState(p protocol.ID, b gjson.Result) state {
	s := state{complete: true}
	switch p {
	case protocol.OpenAIChat:
		s.readChatUsage(b.Get("usage"))
		b.Get("choices").ForEach(func(_, c gjson.Result) bool {
			s.chars += chatChars(c.Get("message"))
			return true
		})
	case protocol.AnthropicMessages:
		s.readMessagesUsage(b.Get("usage"))
		s.reported = b.Get("usage").IsObject()
		b.Get("content").ForEach(func(_, c gjson.Result) bool {
			switch c.Get("type").String() {
			case "text":
				s.chars += runes(c.Get("text").String())
			case "thinking":
				s.chars += runes(c.Get("thinking").String())
			case "tool_use", "server_tool_use":
				s.chars += runes(c.Get("input").Raw)
			}
			return true
		})
	case protocol.OpenAIResponses:
		s.readResponsesUsage(b.Get("usage"))
		b.Get("output").ForEach(func(_, it gjson.Result) bool {
			switch it.Get("type").String() {
			case "message":
				it.Get("content").ForEach(func(_, c gjson.Result) bool {
					s.chars += runes(c.Get("text").String()) + runes(c.Get("refusal").String())
					return true
				})
			case "function_call":
				s.chars += runes(it.Get("arguments").String())
			case "custom_tool_call":
				s.chars += runes(it.Get("input").String())
			case "reasoning":
				for _, k := range []string{"summary", "content"} {
					it.Get(k).ForEach(func(_, c gjson.Result) bool {
						s.chars += runes(c.Get("text").String())
						return true
					})
				}
			}
			return true
		})
	case protocol.GeminiNative:
		s.readGeminiUsage(b.Get("usageMetadata"))
		s.chars += geminiChars(b.Get("candidates"))
	}
	return s
}

// streamEvent is s after one more event of a stream.
func streamEvent(p protocol.ID, s state, ev protocol.Event) state {
	if string(ev.Data) == "[DONE]" {
		s.complete = true
		return s
	}
	if !gjson.ValidBytes(ev.Data) {
		return s
	}
	d := gjson.ParseBytes(ev.Data)
	switch p {
	case protocol.OpenAIChat:
		d.Get("choices").ForEach(func(_, c gjson.Result) bool {
			s.chars += chatChars(c.Get("delta"))
			return true
		})
		if u := d.Get("usage"); u.IsObject() {
			s.readChatUsage(u)
		}
	case protocol.AnthropicMessages:
		typ := ev.Name
		if typ == "" {
			typ = d.Get("type").String()
		}
		switch typ {
		case "message_start":
			s.readMessagesUsage(d.Get("message.usage"))
		case "content_block_start":
			if b := d.Get("content_block"); b.Get("type").String() == "text" {
				s.chars += runes(b.Get("text").String())
			}
		case "content_block_delta":
			for _, k := range []string{"text", "partial_json", "thinking"} {
				s.chars += runes(d.Get("delta." + k).String())
			}
		case "message_delta":
			s.readMessagesUsage(d.Get("usage"))
			s.reported = true
		case "message_stop":
			s.complete = true
		}
	case protocol.OpenAIResponses:
		typ := ev.Name
		if typ == "" {
			typ = d.Get("type").String()
		}
		switch typ {
		case "response.output_text.delta", "response.function_call_arguments.delta",
			"response.reasoning_summary_text.delta", "response.reasoning_text.delta",
			"response.refusal.delta", "response.custom_tool_call_input.delta":
			s.chars += runes(d.Get("delta").String())
		case "response.completed", "response.incomplete", "response.failed":
			s.complete = true
			if u := d.Get("response.usage"); u.IsObject() {
				s.readResponsesUsage(u)
			}
		}
	case protocol.GeminiNative:
		s.chars += geminiChars(d.Get("candidates"))
		if u := d.Get("usageMetadata"); u.IsObject() {
			s.readGeminiUsage(u)
		}
		if d.Get("candidates.0.finishReason").String() != "" {
			s.complete = true
		}
	}
	return s
}

// The vendors' usage objects, read as their API references define them.

func (s *state) readChatUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	s.reported = true
	s.in, s.out = u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
	s.cached = u.Get("prompt_tokens_details.cached_tokens").Int()
	if s.cached == 0 {
		s.cached = u.Get("prompt_cache_hit_tokens").Int()
	}
}

// readMessagesUsage takes the fields present: message_delta may repeat
// only some of message_start's.
func (s *state) readMessagesUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	plain := s.in - s.cached - s.written
	if v := u.Get("input_tokens"); v.Exists() && v.Type != gjson.Null {
		plain = v.Int()
	}
	if v := u.Get("cache_read_input_tokens"); v.Exists() && v.Type != gjson.Null {
		s.cached = v.Int()
	}
	if v := u.Get("cache_creation_input_tokens"); v.Exists() && v.Type != gjson.Null {
		s.written = v.Int()
	}
	if v := u.Get("output_tokens"); v.Exists() && v.Type != gjson.Null {
		s.out = v.Int()
	}
	s.in = plain + s.cached + s.written
}

func (s *state) readResponsesUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	s.reported = true
	s.in, s.out = u.Get("input_tokens").Int(), u.Get("output_tokens").Int()
	s.cached = u.Get("input_tokens_details.cached_tokens").Int()
}

func (s *state) readGeminiUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	s.reported = true
	s.in = u.Get("promptTokenCount").Int() + u.Get("toolUsePromptTokenCount").Int()
	s.out = u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int()
	s.cached = u.Get("cachedContentTokenCount").Int()
}

func runes(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// chatChars counts a completions message's or delta's generated characters.
func chatChars(m gjson.Result) int64 {
	var n int64
	if c := m.Get("content"); c.IsArray() {
		c.ForEach(func(_, p gjson.Result) bool {
			n += runes(p.Get("text").String())
			return true
		})
	} else {
		n += runes(c.String())
	}
	for _, k := range []string{"reasoning_content", "reasoning", "refusal", "function_call.arguments"} {
		n += runes(m.Get(k).String())
	}
	m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		n += runes(tc.Get("function.arguments").String())
		return true
	})
	return n
}

func geminiChars(cands gjson.Result) int64 {
	var n int64
	cands.ForEach(func(_, c gjson.Result) bool {
		c.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
			n += runes(p.Get("text").String())
			if a := p.Get("functionCall.args"); a.IsObject() {
				n += runes(a.Raw)
			}
			return true
		})
		return true
	})
	return n
}

// outputLimit is the max tokens a client body sets (0: none).
func outputLimit(p protocol.ID, body []byte) int64 {
	switch p {
	case protocol.OpenAIChat:
		if v := gjson.GetBytes(body, "max_completion_tokens"); v.Exists() {
			return v.Int()
		}
		return gjson.GetBytes(body, "max_tokens").Int()
	case protocol.AnthropicMessages:
		return gjson.GetBytes(body, "max_tokens").Int()
	case protocol.OpenAIResponses:
		return gjson.GetBytes(body, "max_output_tokens").Int()
	case protocol.GeminiNative:
		return gjson.GetBytes(body, "generationConfig.maxOutputTokens").Int()
	}
	return 0
}

// inputEstimate is the pre-charge estimate of a client body: ceil(bytes
// / 4) of the raw JSON values of the conversation (PRODUCT.md §7).
func inputEstimate(p protocol.ID, body []byte) int64 {
	var fields []string
	switch p {
	case protocol.OpenAIChat:
		fields = []string{"messages"}
	case protocol.AnthropicMessages:
		fields = []string{"messages", "system"}
	case protocol.OpenAIResponses:
		fields = []string{"input", "instructions"}
	case protocol.GeminiNative:
		fields = []string{"contents", "systemInstruction", "system_instruction"}
	}
	var n int64
	for _, f := range fields {
		if v := gjson.GetBytes(body, f); v.Exists() && v.Type != gjson.Null {
			n += int64(len(v.Raw))
		}
	}
	return (n + 3) / 4
}

// ledgerBook holds every answer the tests' calls got, by trace id, the
// chat calls that got none, and an index of every report the in-test
// upstreams wrote: the final usages by their tokens, the states of
// streams cut before it by (cached, output).
var ledgerBook = struct {
	mu         sync.Mutex
	clients    map[string]*exchange
	unanswered []*exchange
	claimed    map[string]*exchange // by row request id (claimUnanswered)
	claimedBy  map[*exchange]string
	final      map[[3]int64][]usage
	partial    map[[2]int64][]state
	credited   map[string]money.Total // by account, what the admin API credited
}{clients: map[string]*exchange{}, claimed: map[string]*exchange{}, claimedBy: map[*exchange]string{},
	final: map[[3]int64][]usage{}, partial: map[[2]int64][]state{}, credited: map[string]money.Total{}}

func indexUpstream(e *exchange) {
	sts := e.states()
	ledgerBook.mu.Lock()
	defer ledgerBook.mu.Unlock()
	for _, s := range sts {
		if s.reported {
			k := [3]int64{s.in, s.cached, s.out}
			ledgerBook.final[k] = append(ledgerBook.final[k], s.usage)
			continue
		}
		u, _ := s.billed(0)
		k := [2]int64{u.cached, u.out}
		ledgerBook.partial[k] = append(ledgerBook.partial[k], s)
	}
}

// recording wraps a transport so that every gateway answer is kept, by its
// trace id, with the request body.
type recording struct{ base http.RoundTripper }

// recorded returns a client whose calls are kept; base nil is
// http.DefaultTransport.
func recorded(base http.RoundTripper) *http.Client {
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: recording{base}}
}

func (r recording) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Method == http.MethodPost {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := r.base.RoundTrip(req)
	if req.Method != http.MethodPost {
		return resp, err
	}
	if err != nil {
		// A call refused at connect never reached the gateway.
		if protocolOf(req.URL.Path) != "" && !errors.Is(err, syscall.ECONNREFUSED) {
			ledgerBook.mu.Lock()
			ledgerBook.unanswered = append(ledgerBook.unanswered, &exchange{path: req.URL.Path, query: req.URL.RawQuery, req: body, key: keyOf(req)})
			ledgerBook.mu.Unlock()
		}
		return resp, err
	}
	if strings.HasPrefix(req.URL.Path, "/admin/v1/accounts") {
		return recordCredit(req, body, resp)
	}
	if protocolOf(req.URL.Path) == "" {
		return resp, nil
	}
	trace := resp.Header.Get("x-gateway-trace")
	if trace == "" {
		return resp, nil
	}
	e := &exchange{path: req.URL.Path, query: req.URL.RawQuery, req: body, status: resp.StatusCode,
		translated: resp.Header.Get("X-Protocol-Translation") != ""}
	ledgerBook.mu.Lock()
	ledgerBook.clients[trace] = e
	ledgerBook.mu.Unlock()
	resp.Body = teeBody{resp.Body, e}
	return resp, nil
}

// keyOf is the API key a chat call carries.
func keyOf(req *http.Request) string {
	if k, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
		return k
	}
	for _, h := range []string{"x-api-key", "x-goog-api-key"} {
		if k := req.Header.Get(h); k != "" {
			return k
		}
	}
	return req.URL.Query().Get("key")
}

// recordCredit notes what an admin call credited: an account's opening
// credit, or a top-up or correction.
func recordCredit(req *http.Request, body []byte, resp *http.Response) (*http.Response, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return resp, nil
	}
	var acct string
	var amount money.Nano
	switch {
	case req.URL.Path == "/admin/v1/accounts" && resp.StatusCode == http.StatusCreated:
		acct, amount = gjson.GetBytes(b, "id").String(), money.MustParse(gjson.GetBytes(b, "balance").String())
	case strings.HasSuffix(req.URL.Path, "/credits") && resp.StatusCode == http.StatusOK:
		acct, amount = gjson.GetBytes(b, "account_id").String(), money.MustParse(gjson.GetBytes(body, "amount").String())
	default:
		return resp, nil
	}
	ledgerBook.mu.Lock()
	tot := ledgerBook.credited[acct]
	tot.Add(amount)
	ledgerBook.credited[acct] = tot
	ledgerBook.mu.Unlock()
	return resp, nil
}

type teeBody struct {
	io.ReadCloser
	e *exchange
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.e.Write(p[:n])
	return n, err
}

// recordUpstream keeps what an in-test upstream answers.
func recordUpstream(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		e := &exchange{path: r.URL.Path, query: r.URL.RawQuery, req: body}
		rw := &teeWriter{ResponseWriter: w, e: e}
		defer func() {
			e.status = rw.status
			indexUpstream(e)
		}()
		h.ServeHTTP(rw, r)
	})
}

type teeWriter struct {
	http.ResponseWriter
	e      *exchange
	status int
}

func (w *teeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.e.Write(p[:n])
	return n, err
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// replaySim answers a client request with the sim engine in process, as
// the embedded sim plugin did, asking for a completions stream's usage.
func replaySim(e *exchange) []state {
	body := e.req
	if protocolOf(e.path) == protocol.OpenAIChat && gjson.GetBytes(body, "stream").Bool() &&
		!gjson.GetBytes(body, "stream_options.include_usage").Bool() {
		if gjson.GetBytes(body, "stream_options").Exists() {
			return nil
		}
		i := bytes.IndexByte(body, '{')
		if i < 0 {
			return nil
		}
		body = append(append(append([]byte(nil), body[:i+1]...), `"stream_options":{"include_usage":true},`...), body[i+1:]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, e.path+"?"+e.query, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer replay")
	req.Header.Set("x-api-key", "replay")
	req.Header.Set("x-goog-api-key", "replay")
	rec := httptest.NewRecorder()
	func() {
		defer func() { _ = recover() }() // a [sim:cut] answer aborts its handler; what it wrote is kept
		vendorsim.New(vendorsim.Options{}).Handler().ServeHTTP(rec, req)
	}()
	r := &exchange{path: e.path, status: rec.Code}
	r.Write(rec.Body.Bytes())
	return r.states()
}

// expectedCost is what row must cost: 0 for a call no upstream served (no
// usage), else the matching report's usage at the model's prices. It
// fails the test when the row matches no report.
func expectedCost(t *testing.T, row map[string]any) money.Nano {
	t.Helper()
	if row["unit_type"] != nil {
		return unitCost(t, row)
	}
	if rowUsage(row) == (usage{}) {
		return 0 // no upstream served it
	}
	p, ok := testPrices[str(row["model"])]
	if !ok {
		t.Fatalf("no test price for model %q: add it to testPrices", str(row["model"]))
	}
	return costAt(t, row, p)
}

// rowUsage is the usage a row says it billed.
func rowUsage(row map[string]any) usage {
	return usage{in: int64(num(row["input_tokens"])), cached: int64(num(row["cached_tokens"])), out: int64(num(row["output_tokens"]))}
}

// costAt is what a token-billed row must cost at p: 0 for a call no
// upstream served, else the matching report's usage at p.
func costAt(t *testing.T, row map[string]any, p price) money.Nano {
	t.Helper()
	got := rowUsage(row)
	if got == (usage{}) {
		return 0
	}
	model, rid := str(row["model"]), str(row["request_id"])
	ledgerBook.mu.Lock()
	client := ledgerBook.clients[rid]
	finals := ledgerBook.final[[3]int64{got.in, got.cached, got.out}]
	partials := ledgerBook.partial[[2]int64{got.cached, got.out}]
	ledgerBook.mu.Unlock()
	estimate, limit := int64(-1), int64(0)
	if client != nil {
		estimate = inputEstimate(protocolOf(client.path), client.req)
		limit = outputLimit(protocolOf(client.path), client.req)
	}
	first := func(sts []state) (usage, bool) { return billedAs(sts, estimate, limit, got) }
	native := client != nil && !client.translated
	if native {
		if u, ok := first(client.states()); ok {
			return p.cost(t, u)
		}
	}
	if len(finals) > 0 {
		return p.cost(t, finals[0])
	}
	if u, ok := first(partials); ok {
		return p.cost(t, u)
	}
	if limit > 0 && got.out == limit {
		// An upstream that ran past the limit: its report is past it too.
		ledgerBook.mu.Lock()
		var past []state
		for _, us := range ledgerBook.final {
			for _, u := range us {
				past = append(past, state{usage: u, reported: true})
			}
		}
		for _, sts := range ledgerBook.partial {
			past = append(past, sts...)
		}
		ledgerBook.mu.Unlock()
		if u, ok := first(past); ok {
			return p.cost(t, u)
		}
	}
	// The embedded sim plugin has no wire to record: a completions stream
	// whose client did not ask for the usage, or an answer the client did
	// not read whole, is answered again by the same engine.
	if native && client.status == 200 {
		if u, ok := first(replaySim(client)); ok {
			return p.cost(t, u)
		}
		// A stream cut after its status and before any event (its
		// plugin killed): nothing delivered, the input estimated.
		if len(client.states()) == 0 {
			if u, ok := first([]state{{}}); ok {
				return p.cost(t, u)
			}
		}
	}
	// A non-streaming answer is held back until its row is committed: a
	// gateway killed in between leaves a billed row whose client got no
	// answer at all, so no trace id to find its record by. It must be the
	// answer of one call that got none, each such call making one row.
	if client == nil {
		if u, ok := claimUnanswered(rid, str(row["key_prefix"]), got); ok {
			return p.cost(t, u)
		}
	}
	t.Fatalf("row %s (%s): input %d, cached %d, output %d match no usage an upstream reported (client record %v, estimate %d)",
		rid, model, got.in, got.cached, got.out, client != nil, estimate)
	return 0
}

// billedAs is the usage billed for a call that ended at one of sts (the
// first that fits) when it is got; estimate is the call's pre-charge
// input estimate (-1: unknown), limit the output limit it set (0: none).
func billedAs(sts []state, estimate, limit int64, got usage) (usage, bool) {
	for _, s := range sts {
		u, ok := s.billed(estimate)
		if !ok {
			continue
		}
		// Output past the limit the client set is never billed (PRODUCT.md
		// §7): an upstream that ran past it is billed at it.
		if limit > 0 && u.out > limit {
			u.out = limit
		}
		if u.in == got.in && u.cached == got.cached && u.out == got.out {
			return u, true
		}
	}
	return usage{}, false
}

// claimUnanswered finds, for the row rid that no client record explains,
// a chat call that got no answer, made with a key of the row's prefix,
// whose answer by the sim engine is billed got, and takes it for rid: a
// call claimed by one row explains no other.
func claimUnanswered(rid, keyPrefix string, got usage) (usage, bool) {
	if keyPrefix == "" {
		return usage{}, false
	}
	ledgerBook.mu.Lock()
	var pool []*exchange
	if e, ok := ledgerBook.claimed[rid]; ok {
		pool = []*exchange{e} // a row audited again (two gateways on one store)
	} else {
		for _, e := range ledgerBook.unanswered {
			if strings.HasPrefix(e.key, keyPrefix) {
				pool = append(pool, e)
			}
		}
	}
	ledgerBook.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range pool {
		wg.Go(func() { e.replayed() }) // the sim's delays run side by side
	}
	wg.Wait()
	ledgerBook.mu.Lock()
	defer ledgerBook.mu.Unlock()
	for _, e := range pool {
		if owner, ok := ledgerBook.claimedBy[e]; ok && owner != rid {
			continue
		}
		p := protocolOf(e.path)
		if u, ok := billedAs(e.replayed(), inputEstimate(p, e.req), outputLimit(p, e.req), got); ok {
			ledgerBook.claimed[rid], ledgerBook.claimedBy[e] = e, rid
			return u, true
		}
	}
	return usage{}, false
}

// unitCost is what a row billed per unit (a media call) costs: its
// units at its model's price in mediaPrices (untiered models only: a row
// does not say its tier).
func unitCost(t *testing.T, row map[string]any) money.Nano {
	t.Helper()
	n := int64(num(row["unit_count"]))
	if n == 0 {
		return 0
	}
	p, ok := mediaPrices[str(row["model"])]
	if !ok {
		t.Fatalf("no test price for the media model %q: add it to mediaPrices", str(row["model"]))
	}
	return money.Times(n, money.MustParse(p))
}

// checkCost checks one row's cost and returns it.
func checkCost(t *testing.T, row map[string]any) money.Nano {
	t.Helper()
	want := expectedCost(t, row)
	got, err := money.Parse(str(row["cost"]))
	if err != nil || got != want {
		t.Fatalf("row %s (%s, %s, in %v cached %v out %v) costs %s, want %s exactly",
			row["request_id"], row["model"], row["status"], row["input_tokens"], row["cached_tokens"], row["output_tokens"], row["cost"], want)
	}
	return got
}

// startGateway runs the gateway and, when the test ends, audits its books.
func startGateway(t *testing.T, o testgw.Options) *testgw.Gateway {
	t.Helper()
	g := testgw.Start(t, o)
	t.Cleanup(func() { auditBooks(t, g) })
	return g
}

// auditBooks checks every account of a gateway still running at the end
// of its test: every row costs exactly what its upstream's usage costs, no
// hold is left, and the balance plus the rows' costs is what the admin API
// credited (for the accounts the tests created). So every billed call of
// every test has its cost asserted, whatever else the test checks.
func auditBooks(t *testing.T, g *testgw.Gateway) {
	t.Helper()
	if !g.Alive() || t.Failed() {
		return
	}
	var list struct {
		Data []struct{ ID, Status, Balance, Held string }
	}
	g.Admin("GET", "/accounts", nil, &list)
	for _, a := range list.Data {
		if a.Status != "active" {
			continue // its keys cannot read the logs
		}
		bal, held := a.Balance, a.Held
		for deadline := time.Now().Add(5 * time.Second); held != "0" && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			bal, held = g.Balance(a.ID)
		}
		if held != "0" {
			t.Errorf("audit: account %s holds %s at the end of the test", a.ID, held)
			continue
		}
		_, reader := g.Key(a.ID, map[string]any{"name": "audit", "logs_account_scope": true})
		sum := money.TotalOf(money.MustParse(bal))
		query := q("scope", "account", "period", "all", "limit", "200")
		for {
			p := getLogs(t, g, reader, query)
			for _, r := range p.Data {
				sum.Add(checkCost(t, r))
			}
			if !p.HasMore || p.NextCursor == nil {
				break
			}
			query = q("scope", "account", "period", "all", "limit", "200", "cursor", *p.NextCursor)
		}
		ledgerBook.mu.Lock()
		credited, known := ledgerBook.credited[a.ID]
		ledgerBook.mu.Unlock()
		if known && sum.Cmp(credited) != 0 {
			t.Errorf("audit: account %s: balance %s plus its rows' costs is %s, but %s was credited", a.ID, bal, sum, credited)
		}
	}
}
