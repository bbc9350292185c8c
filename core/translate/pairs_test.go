package translate

import (
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The pairs added with the full matrix: what each maps, drops and refuses
// beyond what the conformance suite (package matrix) drives through all.

func TestChatToResponsesRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.OpenAIResponses)
	runRequestCases(t, tr, []reqCase{{
		desc: "system, turns, sampling, tools and formats",
		body: `{"model":"gpt","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}},{"type":"file","file":{"file_id":"file-1"}}]},{"role":"assistant","content":"Calling.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"},{"role":"developer","content":"Mind the units."}],"temperature":0.4,"top_p":0.9,"presence_penalty":0.1,"frequency_penalty":0.2,"user":"u-1","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}},"reasoning_effort":"high","max_completion_tokens":300,"stream":true}`,
		opts: RequestOptions{Model: "gpt-5", Stream: true, Reasoning: true},
		want: map[string]string{
			"model":               `"gpt-5"`,
			"instructions":        `"Be brief."`,
			"input.0":             `{"role":"user","content":[{"type":"input_text","text":"Hi"},{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"},{"type":"input_file","file_id":"file-1"}]}`,
			"input.1":             `{"role":"assistant","content":"Calling."}`,
			"input.2":             `{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}`,
			"input.3":             `{"type":"function_call_output","call_id":"call_1","output":"ok"}`,
			"input.4":             `{"role":"system","content":"Mind the units."}`,
			"max_output_tokens":   `300`,
			"temperature":         `0.4`,
			"presence_penalty":    `0.1`,
			"tools":               `[{"type":"function","name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true},{"type":"function","name":"g","parameters":{"type":"object","properties":{}},"strict":false}]`,
			"tool_choice":         `{"type":"function","name":"f"}`,
			"parallel_tool_calls": `false`,
			"user":                `"u-1"`,
			"text":                `{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}`,
			"reasoning":           `{"effort":"high"}`,
			"store":               `false`,
			"stream":              `true`,
		},
	}, {
		desc: "instructions are always sent; what responses lacks is warned",
		body: `{"messages":[{"role":"user","content":"x"}],"stop":["END"],"seed":3,"logprobs":true,"n":1,"reasoning_effort":"low","messages_extra":1}`,
		opts: RequestOptions{MaxTokens: 64},
		want: map[string]string{"instructions": `""`, "input": `[{"role":"user","content":"x"}]`, "max_output_tokens": `64`, "stop": `<absent>`},
		warn: []string{"stop", "seed", "logprobs", "reasoning_effort", "messages_extra"},
	}, {
		desc: "audio has no responses form",
		body: `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}}]}]}`,
		err:  `"input_audio" content part`,
	}})
}

func TestMessagesToGeminiRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.AnthropicMessages, protocol.GeminiNative)
	runRequestCases(t, tr, []reqCase{{
		desc: "system, turns, tool round trip with media, sampling, thinking",
		body: `{"model":"claude","max_tokens":500,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}],"temperature":0.5,"top_k":20,"stop_sequences":["END"],"thinking":{"type":"enabled","budget_tokens":2000},"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"additionalProperties":false}}],"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`,
		opts: RequestOptions{Model: "gemini-up", Reasoning: true},
		want: map[string]string{
			"systemInstruction": `{"parts":[{"text":"Be brief."}]}`,
			"contents.0":        `{"role":"user","parts":[{"text":"weather?"}]}`,
			"contents.1":        `{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"skip_thought_signature_validator"}]}`,
			"contents.2":        `{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"content":"sunny"}}},{"text":"here"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]}`,
			"generationConfig":  `{"temperature":0.5,"topK":20,"stopSequences":["END"],"maxOutputTokens":500,"thinkingConfig":{"thinkingBudget":2000}}`,
			"tools":             `[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}]`,
			"toolConfig":        `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}`,
		},
		warn: []string{"cache_control", "messages.content.thinking", "tool_choice.disable_parallel_tool_use"},
	}, {
		desc: "a model without reasoning drops thinking; metadata has no form",
		body: `{"max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"x"}]}`,
		want: map[string]string{"generationConfig": `{"maxOutputTokens":5}`},
		warn: []string{"thinking", "metadata.user_id"},
	}, {
		desc: "a PDF by URL is fileData",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}]}`,
		want: map[string]string{"contents.0.parts": `[{"fileData":{"mimeType":"application/pdf","fileUri":"https://example.com/a.pdf"}}]`},
	}})
}

func TestMessagesToResponsesRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.AnthropicMessages, protocol.OpenAIResponses)
	runRequestCases(t, tr, []reqCase{{
		desc: "system, tool round trip, tools, choice, user, effort",
		body: `{"model":"claude","max_tokens":300,"system":"Be brief.","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"title":"r.pdf"}]}],"tools":[{"name":"get_weather","description":"W","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"metadata":{"user_id":"u-1"},"thinking":{"type":"enabled","budget_tokens":1024},"top_k":3,"stop_sequences":["x"],"stream":true}`,
		opts: RequestOptions{Model: "gpt-5", Stream: true, Reasoning: true},
		want: map[string]string{
			"instructions":        `"Be brief."`,
			"input":               `[{"role":"user","content":"weather?"},{"role":"assistant","content":"Checking."},{"type":"function_call","call_id":"toolu_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"toolu_1","output":"sunny"},{"role":"user","content":[{"type":"input_file","filename":"r.pdf","file_data":"data:application/pdf;base64,JVBE"}]}]`,
			"tools":               `[{"type":"function","name":"get_weather","description":"W","parameters":{"type":"object"},"strict":false}]`,
			"tool_choice":         `"required"`,
			"parallel_tool_calls": `false`,
			"user":                `"u-1"`,
			"reasoning":           `{"effort":"low"}`,
			"max_output_tokens":   `300`,
		},
		warn: []string{"top_k", "stop_sequences"},
	}})
}

func TestResponsesToMessagesRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIResponses, protocol.AnthropicMessages)
	runRequestCases(t, tr, []reqCase{{
		desc: "instructions, items, calls merged, results first, codex's fields warned",
		body: `{"model":"gpt-5-codex","instructions":"Be brief.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"Env: /"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"x"},{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"cmd\":[\"ls\"]}"},{"type":"function_call_output","call_id":"call_1","output":"a.go"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"array"}}},"strict":false},{"type":"web_search"}],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","stream":true}`,
		opts: RequestOptions{Model: "claude-up", MaxTokens: 8192, Stream: true, Reasoning: true},
		want: map[string]string{
			"system":      `[{"type":"text","text":"Be brief."},{"type":"text","text":"Env: /"}]`,
			"messages":    `[{"role":"user","content":[{"type":"text","text":"list files"}]},{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"shell","input":{"cmd":["ls"]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"a.go"},{"type":"text","text":"and then?"}]}]`,
			"tools":       `[{"name":"shell","input_schema":{"type":"object","properties":{"cmd":{"type":"array"}}}}]`,
			"tool_choice": `{"type":"auto","disable_parallel_tool_use":true}`,
			"max_tokens":  `8192`,
			"stream":      `true`,
		},
		warn: []string{"input.reasoning", "tools.web_search", "reasoning", "store", "include", "prompt_cache_key"},
	}, {
		desc: "text formats have no messages form",
		body: `{"input":"x","text":{"format":{"type":"json_object"},"verbosity":"low"},"temperature":1.8}`,
		want: map[string]string{"temperature": `1`, "max_tokens": `4096`, "messages": `[{"role":"user","content":[{"type":"text","text":"x"}]}]`},
		warn: []string{"text.format", "text.verbosity"},
	}})
}

func TestResponsesToGeminiRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIResponses, protocol.GeminiNative)
	runRequestCases(t, tr, []reqCase{{
		desc: "items, schema format, effort as a budget",
		body: `{"instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_file","file_url":"https://example.com/a.pdf"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"{\"ok\":true}"}],"text":{"format":{"type":"json_schema","name":"o","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}},"reasoning":{"effort":"medium"},"max_output_tokens":100,"parallel_tool_calls":true,"user":"u"}`,
		opts: RequestOptions{Reasoning: true},
		want: map[string]string{
			"contents":          `[{"role":"user","parts":[{"text":"hi"},{"fileData":{"mimeType":"application/pdf","fileUri":"https://example.com/a.pdf"}}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"ok":true}}}]}]`,
			"systemInstruction": `{"parts":[{"text":"Be brief."}]}`,
			"generationConfig":  `{"responseMimeType":"application/json","responseSchema":{"type":"object","properties":{"n":{"type":"integer"}}},"maxOutputTokens":100,"thinkingConfig":{"thinkingBudget":8192}}`,
		},
		warn: []string{"parallel_tool_calls", "user"},
	}})
}

func TestGeminiToMessagesRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.GeminiNative, protocol.AnthropicMessages)
	runRequestCases(t, tr, []reqCase{{
		desc: "contents, calls with synthetic ids, config",
		body: `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":21}}}]}],"systemInstruction":{"parts":[{"text":"Be brief."}]},"generationConfig":{"maxOutputTokens":64,"topK":4,"stopSequences":["END"],"seed":1,"responseMimeType":"application/json"},"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}}}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`,
		opts: RequestOptions{Model: "claude-up"},
		want: map[string]string{
			"model":          `"claude-up"`,
			"max_tokens":     `64`,
			"system":         `[{"type":"text","text":"Be brief."}]`,
			"messages":       `[{"role":"user","content":[{"type":"text","text":"weather?"}]},{"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"{\"temp\":21}"}]}]`,
			"top_k":          `4`,
			"stop_sequences": `["END"]`,
			"tools":          `[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`,
			"tool_choice":    `{"type":"any"}`,
		},
		warn: []string{"generationConfig.seed", "generationConfig.responseMimeType"},
	}})
}

func TestGeminiToResponsesRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.GeminiNative, protocol.OpenAIResponses)
	runRequestCases(t, tr, []reqCase{{
		desc: "contents, penalties, thinking level",
		body: `{"contents":[{"parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/jpeg","data":"/9j/"}}]}],"generationConfig":{"presencePenalty":0.5,"thinkingConfig":{"thinkingLevel":"HIGH","includeThoughts":true}},"tools":[{"functionDeclarations":[{"name":"f"}]}]}`,
		opts: RequestOptions{Model: "gpt-5", MaxTokens: 1000, Reasoning: true},
		want: map[string]string{
			"input":             `[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/","detail":"auto"}]}]`,
			"presence_penalty":  `0.5`,
			"reasoning":         `{"effort":"high"}`,
			"tools":             `[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":false}]`,
			"max_output_tokens": `1000`,
			"instructions":      `""`,
		},
		warn: []string{"generationConfig.thinkingConfig.includeThoughts"},
	}, {
		desc: "audio has no responses form",
		body: `{"contents":[{"parts":[{"inlineData":{"mimeType":"audio/wav","data":"UklG"}}]}]}`,
		err:  `"audio/wav"`,
	}})
}

// An upstream's error event mid-stream reaches the client as its own
// protocol's error event, and nothing terminates the stream after it.
func TestStreamErrorEvents(t *testing.T) {
	t.Parallel()
	upstream := map[protocol.ID]protocol.Event{
		protocol.OpenAIChat:        {Data: []byte(`{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`)},
		protocol.AnthropicMessages: {Name: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
		protocol.OpenAIResponses:   {Name: "response.failed", Data: []byte(`{"type":"response.failed","sequence_number":3,"response":{"id":"r","status":"failed","error":{"code":"server_error","message":"The server had an error"},"output":[]}}`)},
		protocol.GeminiNative:      {Data: []byte(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			tr := mustLookup(t, p.from, p.to)
			evs := sides[p.to].stream(6)
			evs = append(evs[:3:3], upstream[p.to])
			var out []protocol.Event
			s := tr.NewStream(testResp)
			for _, ev := range evs {
				err := s.Event(ev, func(e protocol.Event) error {
					out = append(out, protocol.Event{Name: e.Name, Data: []byte(string(e.Data))})
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			last := out[len(out)-1]
			var want string
			switch p.from {
			case protocol.OpenAIChat:
				want = `{"error":{"message":`
			case protocol.AnthropicMessages:
				want = `{"type":"error","error":{"type":"`
			case protocol.OpenAIResponses:
				want = `"type":"response.failed"`
			case protocol.GeminiNative:
				want = `{"error":{"code":`
			}
			if !strings.Contains(string(last.Data), want) || strings.Contains(string(last.Data), `"error":null`) {
				t.Fatalf("last event %s %s, want it to contain %s", last.Name, last.Data, want)
			}
			if p.from == protocol.AnthropicMessages && last.Name != "error" {
				t.Errorf("messages error event named %q", last.Name)
			}
			// A later End (the upstream then sent its terminator) adds nothing.
			n := len(out)
			_ = s.End(func(e protocol.Event) error { out = append(out, e); return nil })
			if len(out) != n {
				t.Errorf("End after an error emitted %s", out[n].Data)
			}
		})
	}
}

// A responses upstream that answers 200 with a failed response is an
// upstream error, not an answer.
func TestFailedResponseIsAnError(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.OpenAIResponses)
	_, err := tr.Response([]byte(`{"id":"r","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"output":[]}`), testResp)
	if err == nil || !strings.Contains(err.Error(), "slow down") || !strings.Contains(err.Error(), "rate_limit_exceeded") {
		t.Fatalf("error %v", err)
	}
}
