package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Request bodies shared by the fuzz seeds and the benchmarks.
const (
	benchChatBody      = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":[{"type":"text","text":"What is the weather in Paris?"},{"type":"image_url","image_url":{"url":"https://example.com/sky.png"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny, 21C"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}],"tool_choice":"auto","temperature":0.7,"max_tokens":512,"stream":true,"stream_options":{"include_usage":true}}`
	benchMessagesBody  = `{"model":"claude-sonnet-4-5","max_tokens":512,"system":[{"type":"text","text":"You are a helpful assistant.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"What is the weather in Paris?"}]},{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny, 21C"}]}],"tools":[{"name":"get_weather","description":"Get the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],"tool_choice":{"type":"auto"},"stream":true}`
	benchResponsesBody = `{"model":"gpt-5-codex","instructions":"You are a helpful assistant.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"What is the weather in Paris?"}]},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny, 21C"}],"tools":[{"type":"function","name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"type":"web_search"}],"tool_choice":"auto","max_output_tokens":512,"stream":true}`
	benchGeminiBody    = `{"contents":[{"role":"user","parts":[{"text":"What is the weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"content":"sunny, 21C"}}}]}],"systemInstruction":{"parts":[{"text":"You are a helpful assistant."}]},"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}],"generationConfig":{"maxOutputTokens":512,"temperature":0.7}}`
)

type pairCase struct {
	name     string
	from, to protocol.ID
	body     string
	stream   func(n int) []protocol.Event // an upstream stream of n events
	fixture  string
}

var pairs = []pairCase{
	{"ChatToMessages", protocol.OpenAIChat, protocol.AnthropicMessages, benchChatBody, anthropicEvents, "anthropic_stream.sse"},
	{"ChatToGemini", protocol.OpenAIChat, protocol.GeminiNative, benchChatBody, geminiEvents, "gemini_stream.sse"},
	{"MessagesToChat", protocol.AnthropicMessages, protocol.OpenAIChat, benchMessagesBody, chatEvents, "chat_stream.sse"},
	{"ResponsesToChat", protocol.OpenAIResponses, protocol.OpenAIChat, benchResponsesBody, chatEvents, "chat_stream.sse"},
	{"GeminiToChat", protocol.GeminiNative, protocol.OpenAIChat, benchGeminiBody, chatEvents, "chat_stream.sse"},
}

func pairByName(name string) pairCase {
	for _, p := range pairs {
		if p.name == name {
			return p
		}
	}
	panic("no pair " + name)
}

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

func fuzzRequest(f *testing.F, name string) {
	p := pairByName(name)
	tr := mustLookup(f, p.from, p.to)
	for _, s := range []string{p.body, `{}`, `{"messages":[{"role":"user","content":[]}]}`, `{"contents":[{"parts":[{"functionResponse":{"name":"f"}}]}]}`, `{"input":[{"type":"function_call"}]}`, `[]`, `{"tools":[{"type":"function","function":{"parameters":{"properties":{"a":{"type":["null"]}}}}}]}`} {
		f.Add([]byte(s), int64(0), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, maxTokens int64, stream bool) {
		out, warns, err := tr.Request(body, RequestOptions{Model: "m", MaxTokens: maxTokens, Stream: stream})
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output for %s:\n%s", body, out)
		}
		seen := map[string]bool{}
		for _, w := range warns {
			if seen[w] {
				t.Fatalf("duplicate warning %q", w)
			}
			seen[w] = true
		}
	})
}

func fuzzStream(f *testing.F, name string) {
	p := pairByName(name)
	tr := mustLookup(f, p.from, p.to)
	var seed bytes.Buffer
	for _, ev := range loadEvents(f, p.fixture) {
		seed.Write(ev.Data)
		seed.WriteByte('\n')
	}
	f.Add(seed.Bytes())
	f.Add([]byte("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":5}]}}]}\n{\"type\":\"content_block_delta\",\"index\":9}\n[DONE]"))
	f.Fuzz(func(t *testing.T, data []byte) {
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
	})
}

// FuzzResponse feeds every pair's non-streaming answer translator (the
// pair chosen by the second argument) with upstream bodies: it must not
// panic, and what it returns without an error must be JSON.
func FuzzResponse(f *testing.F) {
	fixture := map[protocol.ID]string{
		protocol.AnthropicMessages: "anthropic_message.json",
		protocol.GeminiNative:      "gemini_response.json",
		protocol.OpenAIChat:        "chat_completion.json",
	}
	trs := make([]Translator, len(pairs))
	for i, p := range pairs {
		trs[i] = mustLookup(f, p.from, p.to)
		f.Add(readFixture(f, fixture[p.to]), uint8(i))
		f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"function":{}}]}}],"content":[{"type":"tool_use"}],"candidates":[{"content":{"parts":[{"functionCall":{}}]}}]}`), uint8(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, pair uint8) {
		tr := trs[int(pair)%len(trs)]
		out, err := tr.Response(body, testResp)
		if err == nil && !json.Valid(out) {
			t.Fatalf("%s -> %s: invalid output for %s:\n%s", tr.From(), tr.To(), body, out)
		}
	})
}

func FuzzRequestChatToMessages(f *testing.F)  { fuzzRequest(f, "ChatToMessages") }
func FuzzRequestChatToGemini(f *testing.F)    { fuzzRequest(f, "ChatToGemini") }
func FuzzRequestMessagesToChat(f *testing.F)  { fuzzRequest(f, "MessagesToChat") }
func FuzzRequestResponsesToChat(f *testing.F) { fuzzRequest(f, "ResponsesToChat") }
func FuzzRequestGeminiToChat(f *testing.F)    { fuzzRequest(f, "GeminiToChat") }

func FuzzStreamChatToMessages(f *testing.F)  { fuzzStream(f, "ChatToMessages") }
func FuzzStreamChatToGemini(f *testing.F)    { fuzzStream(f, "ChatToGemini") }
func FuzzStreamMessagesToChat(f *testing.F)  { fuzzStream(f, "MessagesToChat") }
func FuzzStreamResponsesToChat(f *testing.F) { fuzzStream(f, "ResponsesToChat") }
func FuzzStreamGeminiToChat(f *testing.F)    { fuzzStream(f, "GeminiToChat") }

func BenchmarkRequest(b *testing.B) {
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			tr := mustLookup(b, p.from, p.to)
			body := []byte(p.body)
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
			evs := p.stream(20)
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
			out := runStream(t, tr, p.stream(20), testResp)
			if len(out) < 15 {
				t.Errorf("%d client events from 20 upstream events", len(out))
			}
			if _, _, err := tr.Request([]byte(p.body), RequestOptions{Model: "up"}); err != nil {
				t.Error(err)
			}
		})
	}
}
