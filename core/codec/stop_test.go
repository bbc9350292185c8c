package codec

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func ev(name, data string) protocol.Event { return protocol.Event{Name: name, Data: []byte(data)} }

// stopAfter observes events, the last one as the event the gateway does
// not send, then stops the stream; it returns what the stop emitted.
func stopAfter(t *testing.T, p protocol.ID, evs []protocol.Event, o StopOptions) []protocol.Event {
	t.Helper()
	st := For(p).NewStream()
	for _, e := range evs {
		st.Observe(e)
		if st.Broken() {
			t.Fatalf("%s: a valid event was taken as broken: %s", p, e.Data)
		}
	}
	var out []protocol.Event
	err := st.Stop(o, func(e protocol.Event) error {
		out = append(out, protocol.Event{Name: e.Name, Data: append([]byte(nil), e.Data...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out {
		if string(e.Data) != "[DONE]" && !ValidObject(e.Data) {
			t.Fatalf("%s: a stop event is not a JSON object: %s", p, e.Data)
		}
	}
	return out
}

func TestStopEndsEachProtocolAtMaxTokens(t *testing.T) {
	o := StopOptions{Model: "gw-model", RequestID: "req_1", Created: time.Unix(1700000000, 0),
		Usage: protocol.Usage{InputTokens: 12, OutputTokens: 50}, IncludeUsage: true}

	t.Run("completions", func(t *testing.T) {
		chunk := `{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1690000000,"model":"up","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`
		out := stopAfter(t, protocol.OpenAIChat, []protocol.Event{ev("", chunk), ev("", chunk)}, o)
		if len(out) != 3 || string(out[2].Data) != "[DONE]" {
			t.Fatalf("want finish, usage, [DONE]: %q", out)
		}
		fin := gjson.ParseBytes(out[0].Data)
		if fin.Get("choices.0.finish_reason").Str != "length" || fin.Get("id").Str != "chatcmpl-up" ||
			fin.Get("created").Int() != 1690000000 || fin.Get("model").Str != "gw-model" {
			t.Errorf("finish chunk: %s", out[0].Data)
		}
		if u := gjson.GetBytes(out[1].Data, "usage"); u.Get("completion_tokens").Int() != 50 || u.Get("prompt_tokens").Int() != 12 ||
			len(gjson.GetBytes(out[1].Data, "choices").Array()) != 0 {
			t.Errorf("usage chunk: %s", out[1].Data)
		}
	})

	t.Run("messages", func(t *testing.T) {
		evs := []protocol.Event{
			ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[],"usage":{"input_tokens":12,"output_tokens":1}}}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"word "}}`),
		}
		out := stopAfter(t, protocol.AnthropicMessages, evs, o)
		names := []string{}
		for _, e := range out {
			names = append(names, e.Name)
		}
		if strings.Join(names, ",") != "content_block_stop,message_delta,message_stop" {
			t.Fatalf("events %v", names)
		}
		if gjson.GetBytes(out[0].Data, "index").Int() != 1 ||
			gjson.GetBytes(out[1].Data, "delta.stop_reason").Str != "max_tokens" ||
			gjson.GetBytes(out[1].Data, "usage.output_tokens").Int() != 50 {
			t.Errorf("stop events: %q", out)
		}
		// A block opened by the event not sent is not closed.
		out = stopAfter(t, protocol.AnthropicMessages, append(evs[:4:4],
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"word"}}`)), o)
		if out[0].Name != "message_delta" {
			t.Errorf("a block the client never saw was closed: %q", out)
		}
	})

	t.Run("responses", func(t *testing.T) {
		evs := []protocol.Event{
			ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","created_at":1690000000,"status":"in_progress","model":"up","output":[]}}`),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_up","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
			ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_up","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_up","output_index":0,"content_index":0,"delta":"Hello \"you\" "}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_up","output_index":0,"content_index":0,"delta":"not sent"}`),
		}
		out := stopAfter(t, protocol.OpenAIResponses, evs, o)
		var types []string
		for i, e := range out {
			r := gjson.ParseBytes(e.Data)
			types = append(types, r.Get("type").Str)
			if r.Get("sequence_number").Int() != int64(4+i) || e.Name != r.Get("type").Str {
				t.Errorf("event %d: %s", i, e.Data)
			}
		}
		if strings.Join(types, ",") != "response.output_text.done,response.content_part.done,response.output_item.done,response.incomplete" {
			t.Fatalf("events %v", types)
		}
		if txt := gjson.GetBytes(out[0].Data, "text").Str; txt != `Hello "you" ` {
			t.Errorf("done text %q", txt)
		}
		resp := gjson.GetBytes(out[3].Data, "response")
		if resp.Get("id").Str != "resp_up" || resp.Get("status").Str != "incomplete" ||
			resp.Get("incomplete_details.reason").Str != "max_output_tokens" ||
			resp.Get("output.0.content.0.text").Str != `Hello "you" ` || resp.Get("usage.output_tokens").Int() != 50 {
			t.Errorf("response.incomplete: %s", out[3].Data)
		}
	})

	t.Run("generate-content", func(t *testing.T) {
		chunk := `{"candidates":[{"content":{"parts":[{"text":"word "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3},"modelVersion":"up","responseId":"r1"}`
		out := stopAfter(t, protocol.GeminiNative, []protocol.Event{ev("", chunk), ev("", chunk)}, o)
		r := gjson.ParseBytes(out[0].Data)
		if len(out) != 1 || r.Get("candidates.0.finishReason").Str != "MAX_TOKENS" ||
			r.Get("usageMetadata.candidatesTokenCount").Int() != 50 || r.Get("responseId").Str != "r1" {
			t.Errorf("stop chunk: %q", out)
		}
	})
}

func TestStreamBrokenEvents(t *testing.T) {
	for _, p := range protocol.All {
		for _, tc := range []struct {
			data   string
			broken bool
		}{
			{`{"ok":true}`, false},
			{"[DONE]", false},
			{"", false},
			{`{"cut":`, true},
			{`not json`, true},
			{`{"a":1}}`, true},
			{strings.Repeat("[", 5000) + strings.Repeat("]", 5000), true},
		} {
			st := For(p).NewStream()
			st.Observe(ev("", tc.data))
			if st.Broken() != tc.broken {
				t.Errorf("%s %.20q: broken %v, want %v", p, tc.data, st.Broken(), tc.broken)
			}
		}
	}
}
