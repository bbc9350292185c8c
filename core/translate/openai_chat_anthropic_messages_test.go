package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestChatToMessagesRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.AnthropicMessages)
	runRequestCases(t, tr, []reqCase{{
		desc: "system and developer messages become the top-level system",
		body: `{"model":"gpt-x","messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":[{"type":"text","text":"Use metric."}]},{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		opts: RequestOptions{Model: "claude-up", MaxTokens: 8192, Stream: true},
		want: map[string]string{
			"model":      `"claude-up"`,
			"max_tokens": `8192`,
			"system":     `[{"type":"text","text":"Be brief."},{"type":"text","text":"Use metric."}]`,
			"messages":   `[{"role":"user","content":[{"type":"text","text":"Hi"}]}]`,
			"stream":     `true`,
		},
	}, {
		desc: "client max_tokens is kept and max_completion_tokens read",
		body: `{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":77}`,
		opts: RequestOptions{Model: "c"},
		want: map[string]string{"max_tokens": `77`, "stream": `<absent>`},
	}, {
		desc: "max_tokens falls back when nobody gave one",
		body: `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		want: map[string]string{"max_tokens": `4096`, "model": `"m"`},
	}, {
		desc: "images: data URL, http URL, PDF file; detail warned",
		body: `{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K","detail":"high"}},{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0"}}]}]}`,
		want: map[string]string{
			"messages.0.content.0": `{"type":"text","text":"look"}`,
			"messages.0.content.1": `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}}`,
			"messages.0.content.2": `{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}`,
			"messages.0.content.3": `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0"}}`,
		},
		warn: []string{"messages.content.image_url.detail"},
	}, {
		desc: "tool calls keep ids; consecutive tool results share one user turn",
		body: `{"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"get_time","arguments":""}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"noon"}]},{"role":"user","content":"thanks"}]}`,
		want: map[string]string{
			"messages.#":         `3`,
			"messages.1.role":    `"assistant"`,
			"messages.1.content": `[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"call_2","name":"get_time","input":{}}]`,
			"messages.2.role":    `"user"`,
			"messages.2.content": `[{"type":"tool_result","tool_use_id":"call_1","content":"sunny"},{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"noon"}]},{"type":"text","text":"thanks"}]`,
		},
	}, {
		desc: "function tools become input_schema tools; required becomes any",
		body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},{"type":"function","function":{"name":"noargs"}}],"tool_choice":"required"}`,
		want: map[string]string{
			"tools":       `[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"name":"noargs","input_schema":{"type":"object","properties":{}}}]`,
			"tool_choice": `{"type":"any"}`,
		},
	}, {
		desc: "named tool_choice and parallel_tool_calls false",
		body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`,
		want: map[string]string{"tool_choice": `{"type":"tool","name":"f","disable_parallel_tool_use":true}`},
	}, {
		desc: "tool_choice none and auto",
		body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`,
		want: map[string]string{"tool_choice": `{"type":"none"}`},
	}, {
		desc: "sampling, stop sequences, user",
		body: `{"messages":[{"role":"user","content":"x"}],"temperature":1.5,"top_p":0.9,"stop":"END","user":"u-42"}`,
		want: map[string]string{
			"temperature":    `1`,
			"top_p":          `0.9`,
			"stop_sequences": `["END"]`,
			"metadata":       `{"user_id":"u-42"}`,
		},
	}, {
		desc: "stop array and temperature in range",
		body: `{"messages":[{"role":"user","content":"x"}],"temperature":0.3,"stop":["a","b"]}`,
		want: map[string]string{"temperature": `0.3`, "stop_sequences": `["a","b"]`},
	}, {
		desc: "dropped fields are warned in request order",
		body: `{"logprobs":true,"messages":[{"role":"user","content":"x","name":"bob"}],"n":2,"presence_penalty":0.5,"seed":7,"response_format":{"type":"json_object"},"tools":[{"type":"web_search"},{"type":"function","function":{"name":"f","strict":true}}],"reasoning_effort":"low","frequency_penalty":0.1,"n":1,"response_format":{"type":"text"}}`,
		want: map[string]string{"tools": `[{"name":"f","input_schema":{"type":"object","properties":{}}}]`},
		warn: []string{"logprobs", "messages.name", "n", "presence_penalty", "seed", "response_format", "tools.web_search", "tools.function.strict", "reasoning_effort", "frequency_penalty"},
	}, {
		desc: "null fields are absent, not warned",
		body: `{"messages":[{"role":"user","content":"x"}],"seed":null,"logprobs":null}`,
		want: map[string]string{"seed": `<absent>`},
	}, {
		desc: "audio input cannot be represented",
		body: `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAA","format":"wav"}}]}]}`,
		err:  `"input_audio" content part`,
	}, {
		desc: "file ids cannot be sent",
		body: `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`,
		err:  "file ids",
	}, {
		desc: "a non-URL image is refused",
		body: `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`,
		err:  "http(s) URL",
	}, {
		desc: "tool arguments must be an object",
		body: `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
		err:  "not a JSON object",
	}, {
		desc: "unknown role",
		body: `{"messages":[{"role":"function","content":"x"}]}`,
		err:  `"function"`,
	}, {
		desc: "only a system prompt",
		body: `{"messages":[{"role":"system","content":"x"}]}`,
		err:  "no user or assistant message",
	}, {
		desc: "not JSON",
		body: `{"messages":`,
		err:  "not valid JSON",
	}})
}

func TestChatToMessagesResponse(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.AnthropicMessages)
	out, err := tr.Response(readFixture(t, "anthropic_message.json"), testResp)
	if err != nil {
		t.Fatal(err)
	}
	checkPaths(t, out, map[string]string{
		"id":                           `"chatcmpl-req123"`,
		"object":                       `"chat.completion"`,
		"created":                      `1754000000`,
		"model":                        `"client-model"`,
		"choices.0.message.content":    `"Okay, let's check the \"weather\"\n"`,
		"choices.0.message.tool_calls": `[{"id":"toolu_01A09q90qw90lq917835lq9","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"San Francisco, CA\"}"}}]`,
		"choices.0.finish_reason":      `"tool_calls"`,
		"usage":                        `{"prompt_tokens":592,"completion_tokens":89,"total_tokens":681,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":0}}`,
	})
	var cc openai.ChatCompletion
	if err := json.Unmarshal(out, &cc); err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" || cc.Usage.PromptTokensDetails.CachedTokens != 100 {
		t.Errorf("SDK view: %+v", cc)
	}

	for _, tc := range []struct{ stop, finish string }{
		{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"max_tokens", "length"},
		{"tool_use", "tool_calls"}, {"refusal", "content_filter"}, {"pause_turn", "stop"},
	} {
		t.Run(tc.stop, func(t *testing.T) {
			body := `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"` + tc.stop + `","usage":{"input_tokens":1,"output_tokens":2}}`
			out, err := tr.Response([]byte(body), testResp)
			if err != nil {
				t.Fatal(err)
			}
			checkPaths(t, out, map[string]string{"choices.0.finish_reason": `"` + tc.finish + `"`, "choices.0.message.content": `"hi"`})
		})
	}
	if _, err := tr.Response([]byte(`[1]`), testResp); err == nil {
		t.Error("a non-object body was accepted")
	}
}

func TestChatToMessagesStream(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.AnthropicMessages)
	evs := loadEvents(t, "anthropic_stream.sse")

	t.Run("chunks", func(t *testing.T) {
		out := runStream(t, tr, evs, testResp)
		var deltas []string
		for _, ev := range out {
			if ev.Name != "" {
				t.Fatalf("completions chunk with a name: %q", ev.Name)
			}
			deltas = append(deltas, string(ev.Data))
		}
		want := []string{
			`"delta":{"role":"assistant","content":""}`,
			`"delta":{"content":"Okay, let's check "}`,
			`"delta":{"content":"the \"weather\"\n"}`,
			`"delta":{"tool_calls":[{"index":0,"id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","type":"function","function":{"name":"get_weather","arguments":""}}]}`,
			`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\": \"San Fra"}}]}`,
			`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ncisco, CA\"}"}}]}`,
			`"finish_reason":"tool_calls"`,
			`"choices":[],"usage":{"prompt_tokens":572,"completion_tokens":89,"total_tokens":661,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":0}}`,
			`[DONE]`,
		}
		if len(deltas) != len(want) {
			t.Fatalf("got %d events, want %d:\n%s", len(deltas), len(want), strings.Join(deltas, "\n"))
		}
		for i := range want {
			if !strings.Contains(deltas[i], want[i]) {
				t.Errorf("event %d = %s, want it to contain %s", i, deltas[i], want[i])
			}
		}
	})

	t.Run("no usage chunk unless asked", func(t *testing.T) {
		o := testResp
		o.IncludeUsage = false
		out := runStream(t, tr, evs, o)
		for _, ev := range out {
			if strings.Contains(string(ev.Data), `"usage"`) {
				t.Errorf("usage sent: %s", ev.Data)
			}
		}
		if string(out[len(out)-1].Data) != "[DONE]" {
			t.Errorf("last event %s", out[len(out)-1].Data)
		}
	})

	t.Run("openai-go accumulator", func(t *testing.T) {
		out := runStream(t, tr, evs, testResp)
		cc := accumulateChat(t, out)
		if got := cc.Choices[0].Message.Content; got != "Okay, let's check the \"weather\"\n" {
			t.Errorf("content %q", got)
		}
		tc := cc.Choices[0].Message.ToolCalls
		if len(tc) != 1 || tc[0].ID != "toolu_01T1x1fJ34qAmk2tNTrN7Up6" || tc[0].Function.Arguments != `{"location": "San Francisco, CA"}` {
			t.Errorf("tool calls %+v", tc)
		}
		if cc.Choices[0].FinishReason != "tool_calls" || cc.Usage.PromptTokens != 572 || cc.Usage.CompletionTokens != 89 {
			t.Errorf("finish %q usage %+v", cc.Choices[0].FinishReason, cc.Usage)
		}
	})

	t.Run("upstream cut: no terminator", func(t *testing.T) {
		s := tr.NewStream(testResp)
		var out []protocol.Event
		for _, ev := range evs[:5] {
			if err := s.Event(ev, func(e protocol.Event) error { out = append(out, e); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		for _, ev := range out {
			if strings.Contains(string(ev.Data), "finish_reason\":\"") || string(ev.Data) == "[DONE]" {
				t.Errorf("terminator before End: %s", ev.Data)
			}
		}
	})

	t.Run("invalid upstream event", func(t *testing.T) {
		s := tr.NewStream(testResp)
		if err := s.Event(protocol.Event{Data: []byte("{oops")}, func(protocol.Event) error { return nil }); err == nil {
			t.Error("invalid JSON accepted")
		}
	})
}

// accumulateChat decodes completions chunks with openai-go's accumulator.
func accumulateChat(t *testing.T, evs []protocol.Event) openai.ChatCompletion {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	for _, ev := range evs {
		if string(ev.Data) == "[DONE]" {
			continue
		}
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(ev.Data, &chunk); err != nil {
			t.Fatalf("%s: %v", ev.Data, err)
		}
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator refused chunk %s", ev.Data)
		}
	}
	return acc.ChatCompletion
}

var _ = anthropic.Message{}
