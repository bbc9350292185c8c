package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The suite refuses what a vendor might wrongly answer with a 200: an
// empty object, a body without usage, a stream whose only right event is
// its last one, events out of the protocol's order.
func TestShapesRefuse(t *testing.T) {
	ev := func(name, data string) vendor.Event { return vendor.Event{Name: name, Data: []byte(data)} }
	for _, p := range allProtocols {
		t.Run(p+"/empty object", func(t *testing.T) {
			if checkAnswer(p, []byte(`{}`)) == nil {
				t.Fatal("{} passed")
			}
			if checkStream(p, []vendor.Event{ev("", `{}`)}, false) == nil {
				t.Fatal("a stream of {} passed")
			}
		})
	}
	answers := []struct{ name, proto, body string }{
		{"chat without usage", "openai_chat", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`},
		{"chat total not the sum", "openai_chat", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":3}}`},
		{"messages without stop reason", "anthropic_messages", `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}`},
		{"responses in progress", "openai_responses", `{"id":"r","object":"response","created_at":1,"status":"in_progress","model":"m","output":[{"type":"message"}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`},
		{"gemini without usage", "gemini_native", `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"STOP"}]}`},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			if checkAnswer(a.proto, []byte(a.body)) == nil {
				t.Fatal("passed")
			}
		})
	}
	streams := []struct {
		name, proto string
		evs         []vendor.Event
		usage       bool
	}{
		{"only [DONE]", "openai_chat", []vendor.Event{ev("", "[DONE]")}, false},
		{"chat usage missing", "openai_chat", []vendor.Event{
			ev("", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`),
			ev("", "[DONE]")}, true},
		{"only message_stop", "anthropic_messages", []vendor.Event{ev("message_stop", `{"type":"message_stop"}`)}, false},
		{"message_delta before the blocks end", "anthropic_messages", []vendor.Event{
			ev("message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1}}}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`),
			ev("message_stop", `{"type":"message_stop"}`)}, false},
		{"only response.completed", "openai_responses", []vendor.Event{ev("response.completed", `{"type":"response.completed","response":{"status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}`)}, false},
		{"gemini finish before the end", "gemini_native", []vendor.Event{
			ev("", `{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"STOP"}]}`),
			ev("", `{"candidates":[{"content":{"role":"model","parts":[{"text":"y"}]}}],"usageMetadata":{"promptTokenCount":1,"totalTokenCount":2}}`)}, false},
	}
	for _, st := range streams {
		t.Run(st.name, func(t *testing.T) {
			if checkStream(st.proto, st.evs, st.usage) == nil {
				t.Fatal("passed")
			}
		})
	}
}

func TestMarkerRequest(t *testing.T) {
	tests := []struct{ fault, marker string }{
		{"", ""}, {FaultHTTP500, "[sim:error=500]"}, {FaultHTTP429, "[sim:error=429]"},
		{FaultCut, "[sim:cut=3]"}, {FaultHang, "[sim:hang]"},
	}
	for _, tt := range tests {
		for _, p := range allProtocols {
			t.Run(p+"/"+tt.fault, func(t *testing.T) {
				r := MarkerRequest(p, true, tt.fault)
				if r.Channel != "main" || r.Model != "m" || r.Protocol != p || !r.Stream {
					t.Fatalf("request %+v", r)
				}
				var m map[string]any
				if err := json.Unmarshal(r.Body, &m); err != nil {
					t.Fatal(err)
				}
				if Marker(tt.fault) != tt.marker || !strings.Contains(string(r.Body), tt.marker) {
					t.Fatalf("body %s lacks %q", r.Body, tt.marker)
				}
			})
		}
	}
}

func TestRecorder(t *testing.T) {
	r := Recorder{FailAt: 2}
	if err := r.Head(vendor.Head{Status: 200}); err != nil {
		t.Fatal(err)
	}
	errs := []error{r.Event(vendor.Event{}), r.Event(vendor.Event{}), r.Event(vendor.Event{})}
	if errs[0] != nil || errs[1] != errSinkGone || errs[2] != errSinkGone || r.afterFail != 1 || len(r.Events) != 2 {
		t.Fatalf("errors %v, afterFail %d, events %d", errs, r.afterFail, len(r.Events))
	}
}
