package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// agentsConfig wires one vendorsim to the real vendor plugins the way the
// coding agents meet them: ag-claude on an anthropic channel (native
// messages), ag-gpt (caps reasoning) and ag-gpt-plain (no reasoning) on an
// openai channel speaking chat and responses, ag-chat on a chat-only channel
// with reverse translation, ag-gemini on a gemini channel, and two models
// whose calls time out after 1 s: ag-slow by the model's timeout, ag-slowch
// by its channel's. ag-chat also takes generate-content clients. For the
// checks of what the gateway may change: ag-claude-up and ag-gpt-up send
// another upstream id and have a max_output_tokens above their default;
// ag-gpt-web offers web_search (caps), ag-gpt-narrow offers it too but its
// channel narrows it away; ag-longch has a 1 s model timeout and a 3 s
// channel timeout, which wins.
func agentsConfig(url, extra string) string {
	ch := func(name, vendor, protocols, models, more string) string {
		return `
channel "` + name + `" {
  vendor    = "` + vendor + `"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = [` + protocols + `]
  models    = [` + models + `]
` + more + `}
`
	}
	model := func(id, more string) string {
		return `
model "` + id + `" {
  price {
    input  = "3"
    output = "15"
  }
` + more + `}
`
	}
	return ch("anthropic", "anthropic", `"anthropic_messages"`, `"ag-claude"`, "") +
		ch("openai", "openai", `"openai_chat", "openai_responses"`, `"ag-gpt", "ag-gpt-plain", "ag-slow"`, "") +
		ch("chatonly", "openai", `"openai_chat"`, `"ag-chat"`, "") +
		ch("gemini", "gemini", `"gemini_native"`, `"ag-gemini"`, "") +
		ch("slowch", "openai", `"openai_chat"`, `"ag-slowch"`, `  timeout = "1s"
`) +
		model("ag-claude", "  caps {\n    reasoning = true\n  }\n") +
		model("ag-gpt", "  caps {\n    reasoning = true\n  }\n") +
		model("ag-gpt-plain", "") +
		model("ag-slow", "  timeout = \"1s\"\n") +
		model("ag-slowch", "") +
		ch("anthropic-up", "anthropic", `"anthropic_messages"`, `"ag-claude-up=claude-upstream-1"`, "") +
		ch("openai-up", "openai", `"openai_chat", "openai_responses"`, `"ag-gpt-up=gpt-upstream-1", "ag-gpt-web"`, "") +
		ch("narrow", "openai", `"openai_responses"`, `"ag-gpt-narrow"`, `  tools = ["image_generation"]
`) +
		ch("longch", "openai", `"openai_chat", "openai_responses"`, `"ag-longch"`, `  timeout = "3s"
`) +
		model("ag-chat", `  translate_from = ["anthropic_messages", "openai_responses", "gemini_native"]
`) +
		model("ag-gemini", "") +
		model("ag-claude-up", "  default_max_tokens = 1024\n  max_output_tokens = 64000\n  caps {\n    reasoning = true\n  }\n") +
		model("ag-gpt-up", "  default_max_tokens = 2048\n  max_output_tokens = 100000\n  caps {\n    reasoning = true\n  }\n") +
		model("ag-gpt-web", "  caps {\n    tools = [\"web_search\"]\n  }\n") +
		model("ag-gpt-narrow", "  caps {\n    tools = [\"web_search\", \"image_generation\"]\n  }\n") +
		model("ag-longch", "  timeout = \"1s\"\n") + extra
}

// startAgents runs a gateway on agentsConfig against a fresh vendorsim.
func startAgents(t *testing.T, extra string) (*testgw.Gateway, *upstream) {
	t.Helper()
	up := startUpstream(t, sim.Knobs{})
	// @UP@ in extra stands for the upstream's URL.
	extra = strings.ReplaceAll(extra, "@UP@", up.URL)
	return startGateway(t, testgw.Options{Config: agentsConfig(up.URL, extra)}), up
}

// lastTo returns the newest upstream request on path (query ignored).
func lastTo(t *testing.T, up *upstream, path string) vendorsim.Request {
	t.Helper()
	reqs := up.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Path == path {
			return reqs[i]
		}
	}
	t.Fatalf("no upstream call on %s", path)
	return vendorsim.Request{}
}

// callsTo counts the upstream requests on path.
func callsTo(up *upstream, path string) int {
	n := 0
	for _, r := range up.requests() {
		if r.Path == path {
			n++
		}
	}
	return n
}

// decode parses JSON into generic values, failing the test on bad input.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %.300s", err, b)
	}
	return m
}

// sameExcept compares two JSON objects semantically, ignoring the named
// top-level fields, and reports each difference.
func sameExcept(t *testing.T, sent, got []byte, ignore ...string) {
	t.Helper()
	a, b := decode(t, sent), decode(t, got)
	for _, k := range ignore {
		delete(a, k)
		delete(b, k)
	}
	for k, v := range a {
		if !reflect.DeepEqual(v, b[k]) {
			t.Errorf("field %q changed upstream:\n sent %s\n got  %s", k, mustJSON(v), mustJSON(b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("field %q added upstream: %s", k, mustJSON(b[k]))
		}
	}
}

// warnings splits X-Protocol-Warning into its names.
func warnings(h map[string][]string) []string {
	var out []string
	for _, v := range h["X-Protocol-Warning"] {
		for _, w := range strings.Split(v, ";") {
			if w = strings.TrimSpace(w); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// warned reports whether the warning header names field.
func warned(h map[string][]string, field string) bool {
	for _, w := range warnings(h) {
		if w == field || strings.HasPrefix(w, field+" ") || strings.HasPrefix(w, field+":") || strings.HasPrefix(w, field+"(") {
			return true
		}
	}
	return false
}

// replay answers a recorded upstream request again with the sim engine, as
// vendorsim answered it (the engine is deterministic), so a test can compare
// what the client got with what the upstream sent.
func replay(t *testing.T, r vendorsim.Request, p protocol.ID) gjson.Result {
	t.Helper()
	model := ""
	if p == protocol.GeminiNative {
		rest := strings.TrimPrefix(strings.TrimPrefix(r.Path, "/v1beta/models/"), "/v1/models/")
		model, _, _ = strings.Cut(rest, ":")
	}
	resp, err := sim.NewEngine().Chat(t.Context(), &sim.Call{Protocol: string(p), Model: model, Body: r.Body})
	if err != nil || resp.Status != 200 {
		t.Fatalf("replaying the upstream call: %v %+v", err, resp)
	}
	return gjson.ParseBytes(resp.Body)
}

// wire records what an official SDK put on the wire, as a middleware of
// the openai and anthropic SDKs (both take this signature) or as the
// transport of genai's HTTP client.
type wire struct {
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func (w *wire) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	w.keep(req)
	return next(req)
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	w.keep(req)
	return http.DefaultTransport.RoundTrip(req)
}

func (w *wire) keep(req *http.Request) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	w.mu.Lock()
	w.header, w.body = req.Header.Clone(), b
	w.mu.Unlock()
}

func (w *wire) last() (http.Header, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.header, w.body
}

// keysOf lists an object's keys, sorted.
func keysOf(r gjson.Result) []string {
	var out []string
	r.ForEach(func(k, _ gjson.Result) bool {
		out = append(out, k.String())
		return true
	})
	sort.Strings(out)
	return out
}

// jsonEq compares two JSON texts semantically.
func jsonEq(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// wantJSON fails unless got is the JSON value want (semantically).
func wantJSON(t *testing.T, what string, got gjson.Result, want string) {
	t.Helper()
	if !jsonEq(got.Raw, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, got.Raw, want)
	}
}

// noClientHeaders checks that nothing of the client's own headers reached
// the upstream: its key, anthropic-version, the agents' session and
// telemetry headers.
func noClientHeaders(t *testing.T, r vendorsim.Request, clientKey string) {
	t.Helper()
	for name, vs := range r.Header {
		n := strings.ToLower(name)
		for _, bad := range []string{"x-claude-code-", "x-stainless-", "x-codex-", "session_id", "session-id", "thread-id", "originator", "x-app", "x-client-request-id"} {
			if strings.HasPrefix(n, bad) {
				t.Errorf("the client's %s reached the upstream: %v", name, vs)
			}
		}
		for _, v := range vs {
			if strings.Contains(v, clientKey) {
				t.Errorf("the client's key reached the upstream in %s", name)
			}
		}
	}
}

// msgStream is a messages-style stream put together by checkMessagesStream.
type msgStream struct {
	blocks []map[string]any // content blocks, text and tool inputs assembled
	stop   string           // message_delta's stop_reason
	usage  gjson.Result     // message_delta's usage
	start  gjson.Result     // message_start's message
}

// checkMessagesStream checks a messages-style stream as the SDKs read it:
// every event named (an `event:` line) after its type, message_start first,
// blocks opened in index order with deltas of their own type and closed
// before the next opens, then message_delta with stop reason and usage, and
// message_stop last. It returns the assembled answer.
func checkMessagesStream(t *testing.T, evs []protocol.Event) msgStream {
	t.Helper()
	var out msgStream
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Name)
	}
	if len(evs) < 4 || evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" || evs[len(evs)-2].Name != "message_delta" {
		t.Fatalf("events %v: want message_start ... message_delta, message_stop", names)
	}
	open := -1
	var partial []string
	for i, ev := range evs {
		d := gjson.ParseBytes(ev.Data)
		if ev.Name == "" || d.Get("type").String() != ev.Name {
			t.Fatalf("event %d has no event: line matching its type %q (name %q)", i, d.Get("type").String(), ev.Name)
		}
		switch ev.Name {
		case "message_start":
			if i != 0 {
				t.Fatalf("message_start at %d: %v", i, names)
			}
			out.start = d.Get("message")
		case "ping":
		case "content_block_start":
			if open >= 0 || int(d.Get("index").Int()) != len(out.blocks) {
				t.Fatalf("content_block_start index %d with block %d open, %d blocks before: %v", d.Get("index").Int(), open, len(out.blocks), names)
			}
			open = len(out.blocks)
			var b map[string]any
			_ = json.Unmarshal([]byte(d.Get("content_block").Raw), &b)
			out.blocks = append(out.blocks, b)
			partial = append(partial, "")
		case "content_block_delta":
			if int(d.Get("index").Int()) != open {
				t.Fatalf("a delta for block %d while %d is open: %v", d.Get("index").Int(), open, names)
			}
			b := out.blocks[open]
			switch typ := d.Get("delta.type").String(); {
			case typ == "text_delta" && b["type"] == "text":
				b["text"] = b["text"].(string) + d.Get("delta.text").String()
			case typ == "input_json_delta" && b["type"] == "tool_use":
				partial[open] += d.Get("delta.partial_json").String()
			case typ == "thinking_delta" && b["type"] == "thinking":
			case typ == "signature_delta" && b["type"] == "thinking":
			default:
				t.Fatalf("a %s delta in a %v block", typ, b["type"])
			}
		case "content_block_stop":
			if int(d.Get("index").Int()) != open {
				t.Fatalf("content_block_stop for %d while %d is open", d.Get("index").Int(), open)
			}
			if b := out.blocks[open]; b["type"] == "tool_use" {
				var in map[string]any
				if err := json.Unmarshal([]byte(partial[open]), &in); err != nil {
					t.Fatalf("tool input deltas %q are not a JSON object: %v", partial[open], err)
				}
				b["input"] = in
			}
			open = -1
		case "message_delta":
			if open >= 0 {
				t.Fatalf("message_delta with block %d open", open)
			}
			out.stop, out.usage = d.Get("delta.stop_reason").String(), d.Get("usage")
			if out.stop == "" || !out.usage.Get("output_tokens").Exists() {
				t.Fatalf("message_delta without stop_reason or usage: %s", ev.Data)
			}
		case "message_stop":
		default:
			t.Fatalf("unexpected event %q", ev.Name)
		}
	}
	if len(out.blocks) == 0 {
		t.Fatalf("no content block: %v", names)
	}
	return out
}

// checkResponsesStream checks the order rules of a responses-style stream
// that agents rely on, for text and function-call items alike:
// response.created first, strictly increasing sequence_number, each item's
// output_item.added before anything of it, content_part.added before its
// first text delta, output_item.done for every item, response.completed (or
// .incomplete) last. It returns the final response object.
func checkResponsesStream(t *testing.T, evs []protocol.Event) gjson.Result {
	t.Helper()
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Name)
	}
	if len(evs) < 3 || evs[0].Name != "response.created" {
		t.Fatalf("events %v: want response.created first", names)
	}
	last := evs[len(evs)-1].Name
	if last != "response.completed" && last != "response.incomplete" {
		t.Fatalf("events %v: want response.completed last", names)
	}
	seq := int64(-1)
	added, parts, done := map[int64]bool{}, map[int64]bool{}, map[int64]bool{}
	for i, ev := range evs {
		d := gjson.ParseBytes(ev.Data)
		if d.Get("type").String() != ev.Name {
			t.Fatalf("event %d: name %q, type %q", i, ev.Name, d.Get("type").String())
		}
		s := d.Get("sequence_number")
		if !s.Exists() || s.Int() <= seq {
			t.Fatalf("event %d %s: sequence_number %s after %d", i, ev.Name, s.Raw, seq)
		}
		seq = s.Int()
		idx := d.Get("output_index").Int()
		switch ev.Name {
		case "response.output_item.added":
			added[idx] = true
		case "response.content_part.added":
			if !added[idx] {
				t.Fatalf("content_part.added before its item: %v", names)
			}
			parts[idx] = true
		case "response.output_text.delta", "response.output_text.done":
			if !added[idx] || !parts[idx] {
				t.Fatalf("%s before output_item.added and content_part.added: %v", ev.Name, names)
			}
		case "response.function_call_arguments.delta", "response.function_call_arguments.done":
			if !added[idx] {
				t.Fatalf("%s before output_item.added: %v", ev.Name, names)
			}
		case "response.output_item.done":
			if !added[idx] {
				t.Fatalf("output_item.done before output_item.added: %v", names)
			}
			done[idx] = true
		}
	}
	if len(added) == 0 || len(done) != len(added) {
		t.Fatalf("items added %v, done %v: %v", added, done, names)
	}
	resp := gjson.ParseBytes(evs[len(evs)-1].Data).Get("response")
	if int(resp.Get("output.#").Int()) != len(added) {
		t.Fatalf("the final response has %d items, the stream added %d", resp.Get("output.#").Int(), len(added))
	}
	return resp
}

// validArgs checks a tool call's arguments against its JSON schema: the
// subset agents' tools use (type, required, properties without extras
// when additionalProperties is false, enum, const, bounds, lengths, items,
// anyOf/oneOf, local $ref). It returns the first violation.
func validArgs(root, s, v any) string {
	sch, _ := s.(map[string]any)
	if sch == nil {
		return ""
	}
	if ref, ok := sch["$ref"].(string); ok {
		r := any(root)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := r.(map[string]any)
			r = m[part]
		}
		return validArgs(root, r, v)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := sch[k].([]any); ok {
			for _, a := range alts {
				if validArgs(root, a, v) == "" {
					return ""
				}
			}
			return fmt.Sprintf("%v fits no branch of %s", v, k)
		}
	}
	if e, ok := sch["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || reflect.DeepEqual(x, v)
		}
		if !found {
			return fmt.Sprintf("%v not in enum %v", v, e)
		}
	}
	if c, ok := sch["const"]; ok && !reflect.DeepEqual(c, v) {
		return fmt.Sprintf("%v is not the const %v", v, c)
	}
	typ, _ := sch["type"].(string)
	if ts, ok := sch["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	num := func(k string) (float64, bool) { f, ok := sch[k].(float64); return f, ok }
	switch strings.ToLower(typ) {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("%v is not an object", v)
		}
		props, _ := sch["properties"].(map[string]any)
		req, _ := sch["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Sprintf("required %q missing in %v", r, m)
			}
		}
		for k, x := range m {
			p, ok := props[k]
			if !ok {
				if sch["additionalProperties"] == false {
					return fmt.Sprintf("property %q not allowed", k)
				}
				continue
			}
			if why := validArgs(root, p, x); why != "" {
				return k + ": " + why
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%v is not an array", v)
		}
		if n, ok := num("minItems"); ok && float64(len(a)) < n {
			return fmt.Sprintf("%d items, minItems %v", len(a), n)
		}
		if n, ok := num("maxItems"); ok && float64(len(a)) > n {
			return fmt.Sprintf("%d items, maxItems %v", len(a), n)
		}
		for i, x := range a {
			if why := validArgs(root, sch["items"], x); why != "" {
				return fmt.Sprintf("[%d]: %s", i, why)
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%v is not a string", v)
		}
		if n, ok := num("minLength"); ok && float64(len([]rune(str))) < n {
			return fmt.Sprintf("%q shorter than %v", str, n)
		}
		if n, ok := num("maxLength"); ok && float64(len([]rune(str))) > n {
			return fmt.Sprintf("%q longer than %v", str, n)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok || strings.EqualFold(typ, "integer") && f != float64(int64(f)) {
			return fmt.Sprintf("%v is not an %s", v, typ)
		}
		if n, ok := num("minimum"); ok && f < n {
			return fmt.Sprintf("%v below minimum %v", f, n)
		}
		if n, ok := num("maximum"); ok && f > n {
			return fmt.Sprintf("%v above maximum %v", f, n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%v is not a boolean", v)
		}
	case "null":
		if v != nil {
			return fmt.Sprintf("%v is not null", v)
		}
	}
	return ""
}
