package codec

import (
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestModelNamer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		desc string
		p    protocol.ID
		ev   protocol.Event
		want string // "" = unchanged
	}{
		{"completions chunk", protocol.OpenAIChat,
			protocol.Event{Data: []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[]}`)},
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"my-gpt","choices":[]}`},
		{"completions chunk already named", protocol.OpenAIChat,
			protocol.Event{Data: []byte(`{"id":"c","model":"my-gpt","choices":[]}`)}, ""},
		{"completions [DONE]", protocol.OpenAIChat, protocol.Event{Data: []byte(`[DONE]`)}, ""},
		{"completions chunk without a model", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"choices":[]}`)}, ""},
		{"messages message_start", protocol.AnthropicMessages,
			protocol.Event{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"m","model":"claude-x","usage":{}}}`)},
			`{"type":"message_start","message":{"id":"m","model":"my-gpt","usage":{}}}`},
		{"messages message_start without an event line", protocol.AnthropicMessages,
			protocol.Event{Data: []byte(`{"type":"message_start","message":{"model":"claude-x"}}`)},
			`{"type":"message_start","message":{"model":"my-gpt"}}`},
		{"messages delta untouched", protocol.AnthropicMessages,
			protocol.Event{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","delta":{"text":"model"}}`)}, ""},
		{"responses created", protocol.OpenAIResponses,
			protocol.Event{Name: "response.created", Data: []byte(`{"type":"response.created","sequence_number":0,"response":{"id":"r","model":"gpt-5","output":[]}}`)},
			`{"type":"response.created","sequence_number":0,"response":{"id":"r","model":"my-gpt","output":[]}}`},
		{"responses delta untouched", protocol.OpenAIResponses,
			protocol.Event{Name: "response.output_text.delta", Data: []byte(`{"type":"response.output_text.delta","delta":"x"}`)}, ""},
		{"generate-content chunk", protocol.GeminiNative,
			protocol.Event{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"\"modelVersion\""}]}}],"modelVersion":"gemini-2.5-flash","responseId":"r"}`)},
			`{"candidates":[{"content":{"parts":[{"text":"\"modelVersion\""}]}}],"modelVersion":"my-gpt","responseId":"r"}`},
		{"not JSON", protocol.GeminiNative, protocol.Event{Data: []byte(`{"modelVersion":`)}, ""},
		{"a model that is not a string", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"model":7}`)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			n := NewModelNamer(tc.p, "my-gpt")
			got := n.Event(tc.ev)
			want := tc.want
			if want == "" {
				want = string(tc.ev.Data)
			}
			if string(got.Data) != want || got.Name != tc.ev.Name {
				t.Errorf("Event = %s %s, want %s", got.Name, got.Data, want)
			}
		})
	}
	t.Run("answers", func(t *testing.T) {
		t.Parallel()
		for p, body := range map[protocol.ID]string{
			protocol.OpenAIChat:        `{"id":"c","model":"gpt-4o-mini","choices":[]}`,
			protocol.AnthropicMessages: `{"id":"m","type":"message","model":"claude-x"}`,
			protocol.OpenAIResponses:   `{"id":"r","object":"response","model":"gpt-5"}`,
			protocol.GeminiNative:      `{"candidates":[],"modelVersion":"gemini-2.5-flash"}`,
		} {
			got := string(NewModelNamer(p, "my \"gpt\"").Answer([]byte(body)))
			if !contains(got, `"my \"gpt\""`) || contains(got, "gpt-4o-mini") || contains(got, "claude-x") {
				t.Errorf("%s: %s", p, got)
			}
		}
		same := []byte(`{"model":"my-gpt"}`)
		if got := NewModelNamer(protocol.OpenAIChat, "my-gpt").Answer(same); &got[0] != &same[0] {
			t.Error("an unchanged answer was copied")
		}
	})
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func BenchmarkModelNamer(b *testing.B) {
	chunk := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"word 7, "},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for _, tc := range []struct {
		name  string
		model string
	}{{"renamed", "my-gpt"}, {"same", "gpt-4o-mini-2024-07-18"}} {
		b.Run(tc.name, func(b *testing.B) {
			n := NewModelNamer(protocol.OpenAIChat, tc.model)
			ev := protocol.Event{Data: chunk}
			b.ReportAllocs()
			for b.Loop() {
				_ = n.Event(ev)
			}
		})
	}
}
