package codec

import (
	"reflect"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// TestChunkIsWhatTheScanRead: the tracker's one walk of an event hands a
// translator everything it reads of it, for every protocol.
func TestChunkIsWhatTheScanRead(t *testing.T) {
	t.Parallel()
	tools := func(ts ...ToolDelta) []ToolDelta { return ts }
	for _, tc := range []struct {
		name string
		p    protocol.ID
		ev   protocol.Event
		want Chunk
	}{
		{"chat text", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"h\"i"},"finish_reason":null}]}`)},
			Chunk{Object: true, Index: -1, Text: `h\"i`}},
		{"chat refusal", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"choices":[{"delta":{"content":null,"refusal":"no"}}]}`)},
			Chunk{Object: true, Index: -1, Text: "no"}},
		{"chat tools and finish", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_1","function":{"name":"f","arguments":"{\"a\""}},{"index":2.0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"},{"delta":{"content":"other choice"}}]}`)},
			Chunk{Object: true, Index: -1, Tools: tools(ToolDelta{Index: 1, ID: "call_1", Name: "f", Args: `{\"a\"`}, ToolDelta{Index: 2, Args: "1}"}), Finish: "tool_calls", HasFinish: true}},
		{"chat usage", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)},
			Chunk{Object: true, Index: -1, HasUsage: true, Usage: protocol.Usage{InputTokens: 3, OutputTokens: 4, Reported: true}}},
		{"chat error", protocol.OpenAIChat, protocol.Event{Data: []byte(`{"error":{"message":"m"}}`)},
			Chunk{Object: true, Index: -1, Error: `{"message":"m"}`}},
		{"chat done", protocol.OpenAIChat, protocol.Event{Data: []byte(`[DONE]`)},
			Chunk{Done: true, Index: -1}},
		{"messages text", protocol.AnthropicMessages, protocol.Event{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)},
			Chunk{Object: true, Type: "content_block_delta", Index: -1, Block: "text_delta", Text: "hi"}},
		{"messages tool start", protocol.AnthropicMessages, protocol.Event{Data: []byte(`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`)},
			Chunk{Object: true, Type: "content_block_start", Index: 2, Block: "tool_use", Tools: tools(ToolDelta{ID: "toolu_1", Name: "f"})}},
		{"messages arguments", protocol.AnthropicMessages, protocol.Event{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`)},
			Chunk{Object: true, Type: "content_block_delta", Index: 2, Block: "input_json_delta", Tools: tools(ToolDelta{Args: `{\"a\":`})}},
		{"messages end", protocol.AnthropicMessages, protocol.Event{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}`)},
			Chunk{Object: true, Type: "message_delta", Index: -1, Finish: "max_tokens", HasFinish: true, HasUsage: true, Usage: protocol.Usage{OutputTokens: 9, Reported: true}}},
		{"responses call", protocol.OpenAIResponses, protocol.Event{Name: "response.output_item.added", Data: []byte(`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}`)},
			Chunk{Object: true, Type: "response.output_item.added", Index: 1, Block: "function_call", Tools: tools(ToolDelta{ID: "call_1", Name: "f"})}},
		{"responses arguments", protocol.OpenAIResponses, protocol.Event{Name: "response.function_call_arguments.delta", Data: []byte(`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{}"}`)},
			Chunk{Object: true, Type: "response.function_call_arguments.delta", Index: 1, Tools: tools(ToolDelta{Args: "{}"})}},
		{"responses end", protocol.OpenAIResponses, protocol.Event{Name: "response.incomplete", Data: []byte(`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`)},
			Chunk{Object: true, Type: "response.incomplete", Index: -1, Finish: "incomplete", Reason: "content_filter", HasFinish: true, HasUsage: true}},
		{"gemini parts", protocol.GeminiNative, protocol.Event{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"think","thought":true},{"text":"a"},{"functionCall":{"name":"f","args":{"x":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":3}}`)},
			Chunk{Object: true, Index: -1, Parts: []Part{{Text: "a"}, {Call: true, Name: "f", Args: `{"x":1}`}}, Finish: "STOP",
				HasUsage: true, Usage: protocol.Usage{InputTokens: 2, OutputTokens: 3, Reported: true}}},
		{"gemini blocked", protocol.GeminiNative, protocol.Event{Data: []byte(`{"promptFeedback":{"block_reason":"SAFETY"}}`)},
			Chunk{Object: true, Index: -1, Blocked: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := For(tc.p).NewStream()
			c := st.Chunk()
			st.Observe(tc.ev)
			got := *c
			got.Event = protocol.Event{}
			if len(got.Tools) == 0 {
				got.Tools = nil
			}
			if len(got.Parts) == 0 {
				got.Parts = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("chunk\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestChunkOfABrokenEventIsNoObject: an event that does not parse leaves
// a chunk a translator refuses.
func TestChunkOfABrokenEventIsNoObject(t *testing.T) {
	t.Parallel()
	for _, p := range protocol.All {
		st := For(p).NewStream()
		c := st.Chunk()
		st.Observe(protocol.Event{Data: []byte(`{"choices":[`)})
		if c.Object || c.Done || !st.Broken() {
			t.Errorf("%s: chunk %+v, broken %v", p, c, st.Broken())
		}
	}
}
