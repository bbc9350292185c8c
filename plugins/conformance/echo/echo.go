// Package echo is a reference vendor that calls no upstream: it answers
// each of the four protocols with a trivial body, and obeys the fault
// markers of the conformance suite. Tests of the plugin machinery run it
// in-process and as a plugin process (internal/testcrash).
//
// Markers, anywhere in the request body:
//
//	[sim:error=500], [sim:error=429]  that status with the protocol's error body
//	[sim:cut=N]                       N events, then a broken stream
//	[sim:hang]                        no answer until the timeout or the context
//	[echo:events=N]                   a stream of N events in all, its end included
//	[env]                             the answer's text is {"pid":..,"env":[..],"memlimit":..}
//	[crash]                           the process exits (status 3) mid-call
package echo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Name is what Describe calls this vendor.
const Name = "echo"

// Protocols are the protocol ids it serves.
var Protocols = []string{
	string(protocol.OpenAIChat), string(protocol.AnthropicMessages),
	string(protocol.OpenAIResponses), string(protocol.GeminiNative),
}

// Vendor is the echo vendor.
type Vendor struct {
	mu       sync.RWMutex
	channels map[string]bool
	// Exit ends the process on [crash]; os.Exit unless a test replaces it.
	Exit func(code int)
}

// New returns an unconfigured echo vendor.
func New() *Vendor { return &Vendor{Exit: os.Exit} }

// Describe names the vendor and its four protocols.
func (v *Vendor) Describe(context.Context) (vendor.Description, error) {
	return vendor.Description{Name: Name, Protocols: Protocols, Families: []string{"echo"}, Version: "1"}, nil
}

// Configure replaces the known channels.
func (v *Vendor) Configure(_ context.Context, cfg vendor.Config) error {
	m := make(map[string]bool, len(cfg.Channels))
	for _, ch := range cfg.Channels {
		m[ch.Name] = true
	}
	v.mu.Lock()
	v.channels = m
	v.mu.Unlock()
	return nil
}

func (v *Vendor) check(req *vendor.ChatRequest) error {
	v.mu.RLock()
	ok := v.channels[req.Channel]
	v.mu.RUnlock()
	if !ok {
		return &vendor.Failure{Kind: vendor.FailureConfig, Message: "echo: unknown channel " + strconv.Quote(req.Channel)}
	}
	for _, p := range Protocols {
		if p == req.Protocol {
			return nil
		}
	}
	return &vendor.Failure{Kind: vendor.FailureConfig, Message: "echo: protocol " + strconv.Quote(req.Protocol) + " not served"}
}

// withTimeout applies the request's whole-call timeout.
func withTimeout(ctx context.Context, req *vendor.ChatRequest) (context.Context, context.CancelFunc) {
	if req.Timeout > 0 {
		return context.WithTimeout(ctx, req.Timeout)
	}
	return context.WithCancel(ctx)
}

// ended is the failure of a call whose context ended first.
func ended(ctx context.Context) error {
	if ctx.Err() == context.DeadlineExceeded {
		return &vendor.Failure{Kind: vendor.FailureTimeout, Message: "echo: timed out"}
	}
	return &vendor.Failure{Kind: vendor.FailureCanceled, Message: "echo: canceled"}
}

// Chat answers one non-streaming call.
func (v *Vendor) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	if err := v.check(req); err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx, req)
	defer cancel()
	b := req.Body
	switch {
	case has(b, "[crash]"):
		v.Exit(3)
	case has(b, "[sim:hang]"):
		<-ctx.Done()
		return nil, ended(ctx)
	case has(b, "[sim:cut="):
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "echo: connection cut"}
	}
	if st := errorStatus(b); st != 0 {
		return &vendor.ChatResponse{Status: st, Body: errorBody(req.Protocol, st), Headers: errorHeaders(st)}, nil
	}
	text := "echo"
	if has(b, "[env]") {
		text = envReport()
	}
	return &vendor.ChatResponse{Status: 200, Body: answer(req.Protocol, req.Model, text),
		Headers: map[string]string{"content-type": "application/json"}}, nil
}

// ChatStream answers one streaming call.
func (v *Vendor) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	if err := v.check(req); err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, req)
	defer cancel()
	b := req.Body
	if has(b, "[sim:hang]") {
		<-ctx.Done()
		return ended(ctx)
	}
	if st := errorStatus(b); st != 0 {
		return sink.Head(vendor.Head{Status: st, Body: errorBody(req.Protocol, st), Headers: errorHeaders(st)})
	}
	if err := sink.Head(vendor.Head{Status: 200, Headers: map[string]string{"content-type": "text/event-stream"}}); err != nil {
		return err
	}
	n := 6
	if k, ok := number(b, "[echo:events="); ok {
		n = k
	}
	cut, isCut := number(b, "[sim:cut=")
	crash := has(b, "[crash]")
	evs := events(req.Protocol, req.Model, n, has(b, `"include_usage":true`))
	for i, e := range evs {
		if isCut && i == cut {
			return &vendor.Failure{Kind: vendor.FailureBroken, Message: "echo: connection cut"}
		}
		if crash && i == 1 {
			// Let the frames sent so far leave the process first.
			time.Sleep(100 * time.Millisecond)
			v.Exit(3)
		}
		if ctx.Err() != nil {
			return ended(ctx)
		}
		if err := sink.Event(e); err != nil {
			return err
		}
	}
	return nil
}

func has(b []byte, marker string) bool { return bytes.Contains(b, []byte(marker)) }

// number reads the N of a "[prefix=N]" marker.
func number(b []byte, prefix string) (int, bool) {
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(prefix):]
	j := bytes.IndexByte(rest, ']')
	if j < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest[:j]))
	return n, err == nil && n >= 0
}

func errorStatus(b []byte) int {
	if n, ok := number(b, "[sim:error="); ok && n >= 400 && n <= 599 {
		return n
	}
	return 0
}

func errorHeaders(status int) map[string]string {
	h := map[string]string{"content-type": "application/json"}
	if status == 429 {
		h["retry-after"] = "1"
	}
	return h
}

// errorBody is the protocol's own error shape.
func errorBody(proto string, status int) []byte {
	msg := "echo: simulated error " + strconv.Itoa(status)
	switch protocol.ID(proto) {
	case protocol.AnthropicMessages:
		typ := "api_error"
		if status == 429 {
			typ = "rate_limit_error"
		}
		return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	case protocol.GeminiNative:
		st := "INTERNAL"
		if status == 429 {
			st = "RESOURCE_EXHAUSTED"
		}
		return mustJSON(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
	default:
		typ := "server_error"
		if status == 429 {
			typ = "rate_limit_exceeded"
		}
		return mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
	}
}

// answer is a complete non-streaming answer carrying text.
func answer(proto, model, text string) []byte {
	switch protocol.ID(proto) {
	case protocol.AnthropicMessages:
		return mustJSON(map[string]any{
			"id": "msg_echo", "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
		})
	case protocol.OpenAIResponses:
		return mustJSON(map[string]any{
			"id": "resp_echo", "object": "response", "created_at": 1735689600, "status": "completed", "model": model,
			"output": []any{map[string]any{"type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text}}}},
			"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
		})
	case protocol.GeminiNative:
		return mustJSON(map[string]any{
			"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
				"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP"}},
			"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
			"modelVersion":  model,
		})
	default:
		return mustJSON(map[string]any{
			"id": "chatcmpl-echo", "object": "chat.completion", "created": 1735689600, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		})
	}
}

// events is a whole stream of n events (at least the protocol's minimum),
// in the protocol's sequence; usage adds the completions usage chunk.
func events(proto, model string, n int, usage bool) []vendor.Event {
	mj := strconv.Quote(model)
	var head, tail []vendor.Event
	var delta func() vendor.Event
	switch protocol.ID(proto) {
	case protocol.AnthropicMessages:
		head = []vendor.Event{
			{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_echo","type":"message","role":"assistant","model":` + mj + `,"content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`)},
			{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
		}
		delta = func() vendor.Event {
			return vendor.Event{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"echo"}}`)}
		}
		tail = []vendor.Event{
			{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
			{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`)},
			{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
		}
	case protocol.OpenAIResponses:
		resp := `{"id":"resp_echo","object":"response","created_at":1735689600,"status":"in_progress","model":` + mj + `,"output":[],"usage":null}`
		item := `{"type":"message","id":"msg_echo","role":"assistant","status":"completed","content":[{"type":"output_text","text":"echo"}]}`
		head = []vendor.Event{
			{Name: "response.created", Data: []byte(`{"type":"response.created","response":` + resp + `}`)},
			{Name: "response.in_progress", Data: []byte(`{"type":"response.in_progress","response":` + resp + `}`)},
			{Name: "response.output_item.added", Data: []byte(`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_echo","role":"assistant","status":"in_progress","content":[]}}`)},
		}
		delta = func() vendor.Event {
			return vendor.Event{Name: "response.output_text.delta", Data: []byte(`{"type":"response.output_text.delta","item_id":"msg_echo","output_index":0,"content_index":0,"delta":"echo"}`)}
		}
		tail = []vendor.Event{
			{Name: "response.output_text.done", Data: []byte(`{"type":"response.output_text.done","item_id":"msg_echo","output_index":0,"content_index":0,"text":"echo"}`)},
			{Name: "response.output_item.done", Data: []byte(`{"type":"response.output_item.done","output_index":0,"item":` + item + `}`)},
			{Name: "response.completed", Data: []byte(`{"type":"response.completed","response":{"id":"resp_echo","object":"response","created_at":1735689600,"status":"completed","model":` + mj +
				`,"output":[` + item + `],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}`)},
		}
	case protocol.GeminiNative:
		delta = func() vendor.Event {
			return vendor.Event{Data: []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"echo"}]}}],"modelVersion":` + mj + `}`)}
		}
		tail = []vendor.Event{{Data: []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2},"modelVersion":` + mj + `}`)}}
	default:
		chunk := `{"id":"chatcmpl-echo","object":"chat.completion.chunk","created":1735689600,"model":` + mj + `,"choices":`
		delta = func() vendor.Event {
			return vendor.Event{Data: []byte(chunk + `[{"index":0,"delta":{"content":"echo"}}]}`)}
		}
		tail = []vendor.Event{{Data: []byte(chunk + `[{"index":0,"delta":{},"finish_reason":"stop"}]}`)}}
		if usage {
			tail = append(tail, vendor.Event{Data: []byte(chunk + `[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)})
		}
		tail = append(tail, vendor.Event{Data: []byte("[DONE]")})
	}
	out := append([]vendor.Event(nil), head...)
	for range max(n-len(head)-len(tail), 1) {
		out = append(out, delta())
	}
	return append(out, tail...)
}

// envReport is what the process sees of its environment.
func envReport() string {
	return string(mustJSON(map[string]any{"pid": os.Getpid(), "env": os.Environ(), "memlimit": debug.SetMemoryLimit(-1)}))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed shapes of strings and numbers are marshalled
	}
	return b
}

var _ vendor.Vendor = (*Vendor)(nil)
