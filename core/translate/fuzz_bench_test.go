package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Request bodies shared by the fuzz seeds and the benchmarks.
const (
	benchChatBody      = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":[{"type":"text","text":"What is the weather in Paris?"},{"type":"image_url","image_url":{"url":"https://example.com/sky.png"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny, 21C"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}],"tool_choice":"auto","temperature":0.7,"max_tokens":512,"stream":true,"stream_options":{"include_usage":true}}`
	benchMessagesBody  = `{"model":"claude-sonnet-4-5","max_tokens":512,"system":[{"type":"text","text":"You are a helpful assistant.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"What is the weather in Paris?"}]},{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny, 21C"}]}],"tools":[{"name":"get_weather","description":"Get the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],"tool_choice":{"type":"auto"},"stream":true}`
	benchResponsesBody = `{"model":"gpt-5-codex","instructions":"You are a helpful assistant.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"What is the weather in Paris?"}]},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny, 21C"}],"tools":[{"type":"function","name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"type":"web_search"}],"tool_choice":"auto","max_output_tokens":512,"stream":true}`
	benchGeminiBody    = `{"contents":[{"role":"user","parts":[{"text":"What is the weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"content":"sunny, 21C"}}}]}],"systemInstruction":{"parts":[{"text":"You are a helpful assistant."}]},"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}],"generationConfig":{"maxOutputTokens":512,"temperature":0.7}}`
)

// sides are what the fuzz seeds and benchmarks use of each protocol: a
// client body, an upstream stream of n events and recorded upstream
// answers (testdata).
var sides = map[protocol.ID]struct {
	name    string
	body    string
	stream  func(n int) []protocol.Event
	answer  string // a non-streaming answer
	fixture string // a recorded stream
}{
	protocol.OpenAIChat:        {"Chat", benchChatBody, chatEvents, "chat_completion.json", "chat_stream.sse"},
	protocol.AnthropicMessages: {"Messages", benchMessagesBody, anthropicEvents, "anthropic_message.json", "anthropic_stream.sse"},
	protocol.OpenAIResponses:   {"Responses", benchResponsesBody, responsesEvents, "responses_response.json", "responses_stream.sse"},
	protocol.GeminiNative:      {"Gemini", benchGeminiBody, geminiEvents, "gemini_response.json", "gemini_stream.sse"},
}

type pairCase struct {
	name     string
	from, to protocol.ID
}

// pairs are the twelve pairs, named ClientToUpstream.
var pairs = func() []pairCase {
	var out []pairCase
	for _, from := range protocol.All {
		for _, to := range protocol.All {
			if from != to {
				out = append(out, pairCase{sides[from].name + "To" + sides[to].name, from, to})
			}
		}
	}
	return out
}()

// anthropicEvents is a messages stream of n events: start, one text block
// of n-5 deltas, message_delta, message_stop.
func anthropicEvents(n int) []protocol.Event {
	evs := []protocol.Event{
		{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)},
		{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
	}
	for i := 0; len(evs) < n-3; i++ {
		evs = append(evs, protocol.Event{Name: "content_block_delta", Data: fmt.Appendf(nil, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word %d, "}}`, i)})
	}
	return append(evs,
		protocol.Event{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
		protocol.Event{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":40}}`)},
		protocol.Event{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
	)
}

// geminiEvents is a generate-content stream of n chunks, the last with
// finishReason and full usage.
func geminiEvents(n int) []protocol.Event {
	var evs []protocol.Event
	for i := 0; i < n-1; i++ {
		evs = append(evs, protocol.Event{Data: fmt.Appendf(nil, `{"candidates":[{"content":{"parts":[{"text":"word %d, "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":25,"totalTokenCount":25},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`, i)})
	}
	return append(evs, protocol.Event{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"end."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":25,"candidatesTokenCount":40,"totalTokenCount":65},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)})
}

// chatEvents is a completions stream of n events: role chunk, text
// chunks, finish chunk, usage chunk, [DONE].
func chatEvents(n int) []protocol.Event {
	evs := []protocol.Event{{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`)}}
	for i := 0; len(evs) < n-3; i++ {
		evs = append(evs, protocol.Event{Data: fmt.Appendf(nil, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"word %d, "},"logprobs":null,"finish_reason":null}],"usage":null}`, i)})
	}
	return append(evs,
		protocol.Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`)},
		protocol.Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":40,"total_tokens":65,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`)},
		protocol.Event{Data: []byte(`[DONE]`)},
	)
}

// responsesEvents is a responses stream of n events: created,
// in_progress, the message item opened, text deltas, the item closed,
// completed.
func responsesEvents(n int) []protocol.Event {
	seq := 0
	ev := func(typ, body string) protocol.Event {
		e := protocol.Event{Name: typ, Data: fmt.Appendf(nil, `{"type":%q,"sequence_number":%d,%s}`, typ, seq, body)}
		seq++
		return e
	}
	resp := `"response":{"id":"resp_1","object":"response","created_at":1754000000,"status":"in_progress","model":"gpt-5","output":[],"usage":null}`
	evs := []protocol.Event{
		ev("response.created", resp),
		ev("response.in_progress", resp),
		ev("response.output_item.added", `"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`),
		ev("response.content_part.added", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`),
	}
	for i := 0; len(evs) < n-4; i++ {
		evs = append(evs, ev("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_1","output_index":0,"content_index":0,"delta":"word %d, ","logprobs":[]`, i)))
	}
	return append(evs,
		ev("response.output_text.done", `"item_id":"msg_1","output_index":0,"content_index":0,"text":"...","logprobs":[]`),
		ev("response.content_part.done", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"...","annotations":[]}`),
		ev("response.output_item.done", `"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[]}`),
		ev("response.completed", `"response":{"id":"resp_1","object":"response","created_at":1754000000,"status":"completed","model":"gpt-5","output":[],"usage":{"input_tokens":25,"input_tokens_details":{"cached_tokens":0},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":65}}`),
	)
}

// fuzzPair fuzzes one pair's three paths: the request (mode 0), the
// non-streaming answer (mode 1) and the stream, one upstream event a line
// (mode 2). Nothing may panic; what comes out without an error is JSON and
// the warnings name each field once.
func fuzzPair(f *testing.F, from, to protocol.ID) {
	tr := mustLookup(f, from, to)
	for _, s := range []string{sides[from].body, `{}`, `{"messages":[{"role":"user","content":[]}]}`, `{"contents":[{"parts":[{"functionResponse":{"name":"f"}}]}]}`, `{"input":[{"type":"function_call"}]}`, `[]`, `{"tools":[{"type":"function","function":{"parameters":{"properties":{"a":{"type":["null"]}}}}}]}`} {
		f.Add([]byte(s), uint8(0))
	}
	f.Add(readFixture(f, sides[to].answer), uint8(1))
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"function":{}}]}}],"content":[{"type":"tool_use"}],"candidates":[{"content":{"parts":[{"functionCall":{}}]}}],"output":[{"type":"function_call"}],"status":"failed"}`), uint8(1))
	var seed bytes.Buffer
	for _, ev := range loadEvents(f, sides[to].fixture) {
		seed.Write(ev.Data)
		seed.WriteByte('\n')
	}
	f.Add(seed.Bytes(), uint8(2))
	f.Add([]byte("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":5}]}}]}\n{\"type\":\"content_block_delta\",\"index\":9}\n{\"type\":\"response.function_call_arguments.delta\",\"output_index\":3}\n{\"error\":{\"code\":500}}\n[DONE]"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		switch mode % 3 {
		case 0:
			out, warns, err := tr.Request(data, RequestOptions{Model: "m", MaxTokens: int64(mode), Stream: mode&4 != 0, Reasoning: mode&8 != 0})
			if err != nil {
				return
			}
			if !json.Valid(out) {
				t.Fatalf("invalid output for %s:\n%s", data, out)
			}
			seen := map[string]bool{}
			for _, w := range warns {
				if seen[w] {
					t.Fatalf("duplicate warning %q", w)
				}
				seen[w] = true
			}
		case 1:
			out, err := tr.Response(data, testResp)
			if err == nil && !json.Valid(out) {
				t.Fatalf("invalid output for %s:\n%s", data, out)
			}
		default:
			s := tr.NewStream(testResp)
			emit := func(ev protocol.Event) error {
				if !isDone(ev.Data) && !json.Valid(ev.Data) {
					t.Fatalf("emitted invalid JSON: %s", ev.Data)
				}
				return nil
			}
			for _, line := range bytes.Split(data, []byte{'\n'}) {
				var u struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(line, &u)
				if err := s.Event(protocol.Event{Name: u.Type, Data: line}, emit); err != nil {
					return
				}
			}
			if err := s.End(emit); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzChatToMessages(f *testing.F)  { fuzzPair(f, protocol.OpenAIChat, protocol.AnthropicMessages) }
func FuzzChatToResponses(f *testing.F) { fuzzPair(f, protocol.OpenAIChat, protocol.OpenAIResponses) }
func FuzzChatToGemini(f *testing.F)    { fuzzPair(f, protocol.OpenAIChat, protocol.GeminiNative) }
func FuzzMessagesToChat(f *testing.F)  { fuzzPair(f, protocol.AnthropicMessages, protocol.OpenAIChat) }
func FuzzMessagesToResponses(f *testing.F) {
	fuzzPair(f, protocol.AnthropicMessages, protocol.OpenAIResponses)
}
func FuzzMessagesToGemini(f *testing.F) {
	fuzzPair(f, protocol.AnthropicMessages, protocol.GeminiNative)
}
func FuzzResponsesToChat(f *testing.F) { fuzzPair(f, protocol.OpenAIResponses, protocol.OpenAIChat) }
func FuzzResponsesToMessages(f *testing.F) {
	fuzzPair(f, protocol.OpenAIResponses, protocol.AnthropicMessages)
}
func FuzzResponsesToGemini(f *testing.F) {
	fuzzPair(f, protocol.OpenAIResponses, protocol.GeminiNative)
}
func FuzzGeminiToChat(f *testing.F) { fuzzPair(f, protocol.GeminiNative, protocol.OpenAIChat) }
func FuzzGeminiToMessages(f *testing.F) {
	fuzzPair(f, protocol.GeminiNative, protocol.AnthropicMessages)
}
func FuzzGeminiToResponses(f *testing.F) {
	fuzzPair(f, protocol.GeminiNative, protocol.OpenAIResponses)
}

func BenchmarkRequest(b *testing.B) {
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			tr := mustLookup(b, p.from, p.to)
			body := []byte(sides[p.from].body)
			opts := RequestOptions{Model: "up", MaxTokens: 1024, Stream: true}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, _, err := tr.Request(body, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStream translates one 20-event upstream stream per iteration.
func BenchmarkStream(b *testing.B) {
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			tr := mustLookup(b, p.from, p.to)
			evs := sides[p.to].stream(20)
			if len(evs) != 20 {
				b.Fatalf("%d events", len(evs))
			}
			emit := func(protocol.Event) error { return nil }
			b.ReportAllocs()
			for b.Loop() {
				s := tr.NewStream(testResp)
				for _, ev := range evs {
					if err := s.Event(ev, emit); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.End(emit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestBenchStreamsTranslate(t *testing.T) {
	t.Parallel()
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			tr := mustLookup(t, p.from, p.to)
			out := runStream(t, tr, sides[p.to].stream(20), testResp)
			if len(out) < 12 { // every text delta makes a client event
				t.Errorf("%d client events from 20 upstream events", len(out))
			}
			if _, _, err := tr.Request([]byte(sides[p.from].body), RequestOptions{Model: "up"}); err != nil {
				t.Error(err)
			}
		})
	}
}

// BenchmarkTracked is a relay's work on one 20-event upstream stream: the
// codec's tracker observes each event and the translator reads its scan.
func BenchmarkTracked(b *testing.B) {
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			tr := mustLookup(b, p.from, p.to)
			evs := sides[p.to].stream(20)
			emit := func(protocol.Event) error { return nil }
			b.ReportAllocs()
			for b.Loop() {
				st := codec.For(p.to).NewStream()
				chunk := st.Chunk()
				s := tr.NewStream(testResp)
				for _, ev := range evs {
					st.Observe(ev)
					if err := s.Read(chunk, emit); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.End(emit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
