package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestChatToGeminiRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.GeminiNative)
	runRequestCases(t, tr, []reqCase{{
		desc: "system instruction, roles, generation config",
		body: `{"model":"gpt","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":[{"type":"text","text":"More"}]}],"temperature":0.2,"top_p":0.8,"stop":["END"],"presence_penalty":0.1,"frequency_penalty":0.2,"seed":5,"max_tokens":100,"stream":true}`,
		opts: RequestOptions{Model: "gemini-up", MaxTokens: 999, Stream: true},
		want: map[string]string{
			"systemInstruction": `{"parts":[{"text":"Be brief."}]}`,
			"contents":          `[{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello"}]},{"role":"user","parts":[{"text":"More"}]}]`,
			"generationConfig":  `{"temperature":0.2,"topP":0.8,"stopSequences":["END"],"presencePenalty":0.1,"frequencyPenalty":0.2,"seed":5,"maxOutputTokens":100}`,
			"model":             `<absent>`,
			"stream":            `<absent>`,
		},
	}, {
		desc: "max tokens from options when omitted",
		body: `{"messages":[{"role":"user","content":"x"}]}`,
		opts: RequestOptions{MaxTokens: 65536},
		want: map[string]string{"generationConfig.maxOutputTokens": `65536`},
	}, {
		desc: "media: inlineData, fileData, audio, pdf",
		body: `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A"}},{"type":"image_url","image_url":{"url":"https://example.com/a.png?x=1"}},{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE"}}]}]}`,
		want: map[string]string{
			"contents.0.parts": `[{"inlineData":{"mimeType":"image/jpeg","data":"/9j/4A"}},{"fileData":{"mimeType":"image/png","fileUri":"https://example.com/a.png?x=1"}},{"inlineData":{"mimeType":"audio/wav","data":"UklG"}},{"inlineData":{"mimeType":"application/pdf","data":"JVBE"}}]`,
		},
	}, {
		desc: "tool calls and results matched by id to the call's name",
		body: `{"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_0","content":"sunny"},{"role":"tool","tool_call_id":"zzz","name":"other","content":"{\"ok\":true}"}]}`,
		want: map[string]string{
			"contents.1": `{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"skip_thought_signature_validator"}]}`,
			"contents.2": `{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"content":"sunny"}}},{"functionResponse":{"name":"other","response":{"ok":true}}}]}`,
		},
	}, {
		desc: "tools with cleaned schemas and a named tool_choice",
		body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"properties":{"a":{"type":["string","null"],"format":"uri","enum":["x","y"]},"b":{"type":"array","items":{"type":"integer","exclusiveMinimum":0}},"c":{"const":"k"},"d":{"oneOf":[{"type":"string"},{"type":"null"}]}},"required":["a"]}}},{"type":"function","function":{"name":"g","parameters":{"type":"object","properties":{}}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		want: map[string]string{
			"tools":      `[{"functionDeclarations":[{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"nullable":true},"b":{"type":"array","items":{"type":"integer"}},"c":{"enum":["k"]},"d":{"anyOf":[{"type":"string"}],"nullable":true}},"required":["a"]}},{"name":"g"}]}]`,
			"toolConfig": `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}`,
		},
	}, {
		desc: "tool_choice modes",
		body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
		want: map[string]string{"toolConfig.functionCallingConfig.mode": `"ANY"`},
	}, {
		desc: "tool_choice none",
		body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`,
		want: map[string]string{"toolConfig.functionCallingConfig.mode": `"NONE"`},
	}, {
		desc: "json_schema response format becomes responseSchema",
		body: `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":false}}}}`,
		want: map[string]string{"generationConfig": `{"responseMimeType":"application/json","responseSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`},
	}, {
		desc: "json_object response format",
		body: `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`,
		want: map[string]string{"generationConfig.responseMimeType": `"application/json"`},
	}, {
		desc: "dropped fields are warned in request order",
		body: `{"user":"u","messages":[{"role":"user","content":"x","name":"bob"}],"logprobs":true,"n":3,"parallel_tool_calls":false,"tools":[{"type":"web_search"},{"type":"image_generation"}],"metadata":{"a":"b"}}`,
		want: map[string]string{"tools": `<absent>`},
		warn: []string{"user", "messages.name", "logprobs", "n", "parallel_tool_calls", "tools.web_search", "tools.image_generation", "metadata"},
	}, {
		desc: "a tool result with no earlier call and no name",
		body: `{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]}`,
		err:  "answers no earlier tool call",
	}, {
		desc: "file ids cannot be sent",
		body: `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`,
		err:  "file ids",
	}, {
		desc: "bad tool arguments",
		body: `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"nope"}}]}]}`,
		err:  "not a JSON object",
	}})
}

func TestChatToGeminiResponse(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.GeminiNative)
	out, err := tr.Response(readFixture(t, "gemini_response.json"), testResp)
	if err != nil {
		t.Fatal(err)
	}
	checkPaths(t, out, map[string]string{
		"id":                           `"chatcmpl-req123"`,
		"model":                        `"client-model"`,
		"choices.0.message.content":    `"Okay, let's check the \"weather\"\n"`,
		"choices.0.message.tool_calls": `[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"San Francisco, CA\"}"}}]`,
		"choices.0.finish_reason":      `"tool_calls"`,
		"usage":                        `{"prompt_tokens":472,"completion_tokens":89,"total_tokens":561,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":64}}`,
	})
	var cc openai.ChatCompletion
	if err := json.Unmarshal(out, &cc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ reason, finish string }{
		{"STOP", "stop"}, {"MAX_TOKENS", "length"}, {"SAFETY", "content_filter"},
		{"RECITATION", "content_filter"}, {"PROHIBITED_CONTENT", "content_filter"}, {"OTHER", "stop"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			body := `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"` + tc.reason + `"}]}`
			out, err := tr.Response([]byte(body), testResp)
			if err != nil {
				t.Fatal(err)
			}
			checkPaths(t, out, map[string]string{"choices.0.finish_reason": `"` + tc.finish + `"`})
		})
	}
	t.Run("blocked prompt", func(t *testing.T) {
		out, err := tr.Response([]byte(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5}}`), testResp)
		if err != nil {
			t.Fatal(err)
		}
		checkPaths(t, out, map[string]string{"choices.0.finish_reason": `"content_filter"`, "choices.0.message.content": `null`})
	})
}

func TestChatToGeminiStream(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIChat, protocol.GeminiNative)
	evs := loadEvents(t, "gemini_stream.sse")
	out := runStream(t, tr, evs, testResp)
	var got []string
	for _, ev := range out {
		got = append(got, string(ev.Data))
	}
	want := []string{
		`"delta":{"role":"assistant","content":""}`,
		`"delta":{"content":"Okay, let's check "}`,
		`"delta":{"content":"the \"weather\"\n"}`,
		`"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"location\": \"San Francisco, CA\"}"}}]}`,
		`"finish_reason":"tool_calls"`,
		`"usage":{"prompt_tokens":472,"completion_tokens":89,"total_tokens":561,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":64}}`,
		`[DONE]`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("event %d = %s, want it to contain %s", i, got[i], want[i])
		}
	}
	cc := accumulateChat(t, out)
	if cc.Choices[0].Message.Content != "Okay, let's check the \"weather\"\n" || len(cc.Choices[0].Message.ToolCalls) != 1 {
		t.Errorf("accumulated %+v", cc.Choices[0].Message)
	}
	if cc.Usage.CompletionTokensDetails.ReasoningTokens != 64 {
		t.Errorf("usage %+v", cc.Usage)
	}
}
