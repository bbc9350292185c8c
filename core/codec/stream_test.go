package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
)

func rc(ss ...string) int64 {
	var n int64
	for _, s := range ss {
		n += int64(utf8.RuneCountInString(s))
	}
	return n
}

// replay feeds a recorded SSE fixture to a new tracker and returns it with
// the number of events Observe said to drop.
func replay(t testing.TB, p protocol.ID, fixture string) (Stream, int) {
	t.Helper()
	st := For(p).NewStream()
	r := sse.NewReader(bytes.NewReader(readFixture(t, fixture)))
	dropped := 0
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return st, dropped
		}
		if err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		if !st.Observe(ev) {
			dropped++
		}
	}
}

func TestStreamFixtures(t *testing.T) {
	cases := []struct {
		desc     string
		p        protocol.ID
		fixture  string
		usage    protocol.Usage
		chars    int64
		complete bool
		dropped  int
	}{
		{"completions with include_usage", protocol.OpenAIChat, "streams/chat_usage.sse",
			protocol.Usage{InputTokens: 1117, OutputTokens: 46, CachedTokens: 1024, Reported: true},
			rc("Hello", ", wörld\n"), true, 1},
		{"completions tool call without usage", protocol.OpenAIChat, "streams/chat_tool_calls.sse",
			protocol.Usage{}, rc(`{"location":`, ` "Paris"}`), true, 0},
		{"completions cut before [DONE]", protocol.OpenAIChat, "streams/chat_cut.sse",
			protocol.Usage{}, rc("Let me think", "42"), false, 0},
		{"messages with thinking and a tool call", protocol.AnthropicMessages, "streams/messages_thinking_tool.sse",
			protocol.Usage{InputTokens: 472 + 1200 + 30000, OutputTokens: 89, CachedTokens: 30000, CacheWriteTokens: 1200, Reported: true},
			rc("I need to list files.", "Listing the files — one moment.", `{"command": "ls"}`), true, 0},
		{"messages ended by an error event", protocol.AnthropicMessages, "streams/messages_cut.sse",
			protocol.Usage{InputTokens: 25, OutputTokens: 1}, rc("Hello"), false, 0},
		{"responses with reasoning and a function call", protocol.OpenAIResponses, "streams/responses_function_call.sse",
			protocol.Usage{InputTokens: 5012, OutputTokens: 301, CachedTokens: 4864, ReasoningTokens: 256, Reported: true},
			rc("**Planning**", "Running tests.", `{"command":["go",`, `"test"]}`), true, 0},
		{"gemini with thoughts and a function call", protocol.GeminiNative, "streams/gemini_thinking.sse",
			protocol.Usage{InputTokens: 310, OutputTokens: 17 + 48, CachedTokens: 256, ReasoningTokens: 48, Reported: true},
			rc("**Considering colours**", "The cat is ginger.", `{"x": "cat"}`), true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			st, dropped := replay(t, tc.p, tc.fixture)
			if got := st.Usage(); got != tc.usage {
				t.Errorf("Usage = %+v, want %+v", got, tc.usage)
			}
			if got := st.OutputChars(); got != tc.chars {
				t.Errorf("OutputChars = %d, want %d", got, tc.chars)
			}
			if got := st.Complete(); got != tc.complete {
				t.Errorf("Complete = %v, want %v", got, tc.complete)
			}
			if dropped != tc.dropped {
				t.Errorf("Observe returned false %d times, want %d", dropped, tc.dropped)
			}
		})
	}
}

func TestStreamEvents(t *testing.T) {
	ev := func(name, data string) protocol.Event { return protocol.Event{Name: name, Data: []byte(data)} }
	cases := []struct {
		desc     string
		p        protocol.ID
		events   []protocol.Event
		keep     []bool
		complete bool
		chars    int64
	}{
		{"completions usage chunk without choices is droppable", protocol.OpenAIChat,
			[]protocol.Event{ev("", `{"usage":{"prompt_tokens":1,"completion_tokens":2}}`), ev("", "[DONE]")},
			[]bool{false, true}, true, 0},
		{"completions usage on a content chunk is kept", protocol.OpenAIChat,
			[]protocol.Event{ev("", `{"choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`)},
			[]bool{true}, false, 2},
		{"completions finish_reason alone is not the end", protocol.OpenAIChat,
			[]protocol.Event{ev("", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)},
			[]bool{true}, false, 0},
		{"completions [DONE] with trailing space", protocol.OpenAIChat,
			[]protocol.Event{ev("", "[DONE] ")}, []bool{true}, true, 0},
		{"completions escaped content counted per character", protocol.OpenAIChat,
			[]protocol.Event{ev("", `{"choices":[{"delta":{"content":"a\n\u00e9\ud83d\ude00\"","reasoning":"xy","refusal":"z"}}]}`)},
			[]bool{true}, false, 5 + 2 + 1},
		{"completions several choices", protocol.OpenAIChat,
			[]protocol.Event{ev("", `{"choices":[{"index":0,"delta":{"content":"ab"}},{"index":1,"delta":{"content":"cde"}}]}`)},
			[]bool{true}, false, 5},
		{"messages without event names use the data type", protocol.AnthropicMessages,
			[]protocol.Event{ev("", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hey"}}`), ev("", `{"type":"message_stop"}`)},
			[]bool{true, true}, true, 3},
		{"messages citations and signatures are not text", protocol.AnthropicMessages,
			[]protocol.Event{ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abcdef"}}`)},
			[]bool{true}, false, 0},
		{"responses incomplete is an end", protocol.OpenAIResponses,
			[]protocol.Event{ev("response.incomplete", `{"type":"response.incomplete","response":{"status":"incomplete","usage":{"input_tokens":3,"output_tokens":4}}}`)},
			[]bool{true}, true, 0},
		{"responses failed is an end", protocol.OpenAIResponses,
			[]protocol.Event{ev("", `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error"}}}`)},
			[]bool{true}, true, 0},
		{"responses done events are not counted twice", protocol.OpenAIResponses,
			[]protocol.Event{ev("response.output_text.delta", `{"type":"response.output_text.delta","delta":"abc"}`), ev("response.output_text.done", `{"type":"response.output_text.done","text":"abc"}`)},
			[]bool{true, true}, false, 3},
		{"gemini blocked prompt is an end", protocol.GeminiNative,
			[]protocol.Event{ev("", `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9}}`)},
			[]bool{true}, true, 0},
		{"gemini chunk without finishReason", protocol.GeminiNative,
			[]protocol.Event{ev("", `{"candidates":[{"content":{"parts":[{"text":"ab"}],"role":"model"},"index":0}]}`)},
			[]bool{true}, false, 2},
		{"non-JSON data is ignored", protocol.GeminiNative,
			[]protocol.Event{ev("", `: keep-alive`), ev("", ``)}, []bool{true, true}, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			st := For(tc.p).NewStream()
			for i, e := range tc.events {
				if got := st.Observe(e); got != tc.keep[i] {
					t.Fatalf("Observe(event %d) = %v, want %v", i, got, tc.keep[i])
				}
			}
			if st.Complete() != tc.complete {
				t.Fatalf("Complete = %v, want %v", st.Complete(), tc.complete)
			}
			if st.OutputChars() != tc.chars {
				t.Fatalf("OutputChars = %d, want %d", st.OutputChars(), tc.chars)
			}
		})
	}
}

func TestUsageAndOutputChars(t *testing.T) {
	cases := []struct {
		desc  string
		p     protocol.ID
		body  []byte
		usage protocol.Usage
		chars int64
	}{
		{"completions", protocol.OpenAIChat, readFixture(t, "bodies/chat.json"),
			protocol.Usage{InputTokens: 1117, OutputTokens: 46, ReasoningTokens: 12, Reported: true},
			rc("Café \"olé\"\n", `{"a":1}`)},
		{"completions deepseek cache hits", protocol.OpenAIChat,
			[]byte(`{"choices":[{"message":{"content":"hi","reasoning_content":"hmm"}}],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`),
			protocol.Usage{InputTokens: 100, OutputTokens: 5, CachedTokens: 64, Reported: true}, 5},
		{"completions without usage", protocol.OpenAIChat,
			[]byte(`{"choices":[{"message":{"content":[{"type":"text","text":"abc"}]}}]}`), protocol.Usage{}, 3},
		{"messages with cache reads and writes", protocol.AnthropicMessages, readFixture(t, "bodies/messages.json"),
			protocol.Usage{InputTokens: 2095 + 2051 + 10000, OutputTokens: 503, CachedTokens: 10000, CacheWriteTokens: 2051, Reported: true},
			rc("Short.", "Hi! My name is Claude.", `{"command":"ls"}`)},
		{"messages with null cache fields", protocol.AnthropicMessages,
			[]byte(`{"content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":3}}`),
			protocol.Usage{InputTokens: 10, OutputTokens: 3, Reported: true}, 0},
		{"responses", protocol.OpenAIResponses, readFixture(t, "bodies/responses.json"),
			protocol.Usage{InputTokens: 328, OutputTokens: 52, CachedTokens: 128, ReasoningTokens: 30, Reported: true},
			rc("Thinking.", "In a peaceful grove.", `{"cmd":"ls"}`)},
		{"gemini with thoughts", protocol.GeminiNative, readFixture(t, "bodies/gemini.json"),
			protocol.Usage{InputTokens: 8, OutputTokens: 20 + 103, CachedTokens: 4, ReasoningTokens: 103, Reported: true},
			rc("Thinking it over", "Hello there", `{"a": 1}`)},
		{"gemini tool-use prompt tokens are input", protocol.GeminiNative,
			[]byte(`{"usageMetadata":{"promptTokenCount":10,"toolUsePromptTokenCount":5,"candidatesTokenCount":2}}`),
			protocol.Usage{InputTokens: 15, OutputTokens: 2, Reported: true}, 0},
		{"not JSON", protocol.OpenAIChat, []byte(`<html>`), protocol.Usage{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			c := For(tc.p)
			if got := c.Usage(tc.body); got != tc.usage {
				t.Errorf("Usage = %+v, want %+v", got, tc.usage)
			}
			if got := c.OutputChars(tc.body); got != tc.chars {
				t.Errorf("OutputChars = %d, want %d", got, tc.chars)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	long := bytes.Repeat([]byte("é"), 300)
	cases := []struct {
		desc string
		p    protocol.ID
		body string
		want string
	}{
		{"openai", protocol.OpenAIChat,
			`{"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			"Incorrect API key provided: sk-abc."},
		{"anthropic", protocol.AnthropicMessages,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			"Overloaded"},
		{"gemini", protocol.GeminiNative,
			`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`,
			"API key not valid. Please pass a valid API key."},
		{"gemini array-wrapped", protocol.GeminiNative,
			"[{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Resource has been exhausted (e.g. check quota).\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}]\n",
			"Resource has been exhausted (e.g. check quota)."},
		{"escaped message", protocol.OpenAIResponses, `{"error":{"message":"bad \"input\"\u0021"}}`, `bad "input"!`},
		{"error as a string", protocol.OpenAIChat, `{"error":"model not loaded","object":"error"}`, "model not loaded"},
		{"fastapi detail", protocol.OpenAIChat, `{"detail":"Not Found"}`, "Not Found"},
		{"top-level message", protocol.OpenAIChat, `{"object":"error","message":"max_tokens too large","code":400}`, "max_tokens too large"},
		{"JSON without a message", protocol.OpenAIChat, `{"status":500}`, ""},
		{"empty", protocol.AnthropicMessages, ``, ""},
		{"plain text", protocol.OpenAIChat, "  upstream connect error or disconnect/reset before headers\n", "upstream connect error or disconnect/reset before headers"},
		{"long plain text cut to 200 characters", protocol.OpenAIChat, string(long), string(long[:400])},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := For(tc.p).ErrorMessage([]byte(tc.body)); got != tc.want {
				t.Fatalf("ErrorMessage = %q, want %q", got, tc.want)
			}
		})
	}
}
