package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestCheckEnd(t *testing.T) {
	ev := func(name, data string) []vendor.Event {
		return []vendor.Event{{Name: "x", Data: []byte("{}")}, {Name: name, Data: []byte(data)}}
	}
	tests := []struct {
		name, proto string
		evs         []vendor.Event
		ok          bool
	}{
		{"done", "openai_chat", ev("", "[DONE]"), true},
		{"no done", "openai_chat", ev("", `{"choices":[{"finish_reason":"stop"}]}`), false},
		{"message_stop", "anthropic_messages", ev("message_stop", `{"type":"message_stop"}`), true},
		{"message_stop by data", "anthropic_messages", ev("", `{"type":"message_stop"}`), true},
		{"message_delta last", "anthropic_messages", ev("message_delta", `{"type":"message_delta"}`), false},
		{"completed", "openai_responses", ev("response.completed", `{}`), true},
		{"failed", "openai_responses", ev("response.failed", `{"type":"response.failed"}`), false},
		{"finish", "gemini_native", ev("", `{"candidates":[{"finishReason":"STOP"}]}`), true},
		{"no finish", "gemini_native", ev("", `{"candidates":[{"content":{}}]}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkEnd(tt.proto, tt.evs); (err == nil) != tt.ok {
				t.Fatalf("checkEnd = %v, want ok=%v", err, tt.ok)
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
