package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestGeminiToChatRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.GeminiNative, protocol.OpenAIChat)
	runRequestCases(t, tr, []reqCase{{
		desc: "contents, system instruction, generation config",
		body: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello"}]},{"role":"user","parts":[{"text":"More"}]}],"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Metric."}]},"generationConfig":{"maxOutputTokens":100,"temperature":0.2,"topP":0.8,"stopSequences":["END"],"presencePenalty":0.1,"frequencyPenalty":0.2,"seed":3,"candidateCount":1}}`,
		opts: RequestOptions{Model: "gpt-up", Stream: true},
		want: map[string]string{
			"model":             `"gpt-up"`,
			"messages":          `[{"role":"system","content":"Be brief.\nMetric."},{"role":"user","content":[{"type":"text","text":"Hi"}]},{"role":"assistant","content":"Hello"},{"role":"user","content":[{"type":"text","text":"More"}]}]`,
			"max_tokens":        `100`,
			"temperature":       `0.2`,
			"top_p":             `0.8`,
			"stop":              `["END"]`,
			"presence_penalty":  `0.1`,
			"frequency_penalty": `0.2`,
			"seed":              `3`,
			"stream":            `true`,
			"stream_options":    `{"include_usage":true}`,
		},
	}, {
		desc: "snake_case fields",
		body: `{"contents":[{"parts":[{"text":"x"}]}],"system_instruction":{"parts":[{"text":"S"}]},"generation_config":{"max_output_tokens":7}}`,
		want: map[string]string{"messages.0": `{"role":"system","content":"S"}`, "max_tokens": `7`},
	}, {
		desc: "media parts",
		body: `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"iVBO"}},{"inline_data":{"mime_type":"application/pdf","data":"JVB"}},{"inlineData":{"mimeType":"audio/mp3","data":"SUQz"}},{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/a.jpg"}}]}]}`,
		want: map[string]string{
			"messages.0.content": `[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVB"}},{"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}},{"type":"image_url","image_url":{"url":"https://example.com/a.jpg"}}]`,
		},
	}, {
		desc: "function calls get synthetic ids, responses matched by name and order",
		body: `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"content":"sunny"}}},{"functionResponse":{"name":"get_weather","response":{"temp":20}}}]},{"role":"model","parts":[{"functionCall":{"id":"abc","name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"abc","name":"f","response":{"ok":true}}}]}]}`,
		want: map[string]string{
			"messages.1":                 `{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}`,
			"messages.2":                 `{"role":"tool","tool_call_id":"call_0","content":"sunny"}`,
			"messages.3":                 `{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":20}"}`,
			"messages.4.tool_calls.0.id": `"abc"`,
			"messages.5":                 `{"role":"tool","tool_call_id":"abc","content":"{\"ok\":true}"}`,
			"messages.#":                 `6`,
		},
		warn: []string{"contents.parts.thoughtSignature"},
	}, {
		desc: "tools with upper-case types and tool config",
		body: `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"d","parameters":{"type":"OBJECT","properties":{"a":{"type":"STRING","nullable":true},"b":{"type":"ARRAY","items":{"type":"INTEGER"}}},"required":["a"],"propertyOrdering":["a","b"]}},{"name":"g","parametersJsonSchema":{"type":"object","additionalProperties":false}},{"name":"h"}]},{"googleSearch":{}}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}}`,
		want: map[string]string{
			"tools":       `[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"array","items":{"type":"integer"}}},"required":["a"]}}},{"type":"function","function":{"name":"g","parameters":{"type":"object","additionalProperties":false}}},{"type":"function","function":{"name":"h","parameters":{"type":"object","properties":{}}}}]`,
			"tool_choice": `{"type":"function","function":{"name":"f"}}`,
		},
		warn: []string{"tools.googleSearch"},
	}, {
		desc: "tool config modes",
		body: `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"},{"name":"g"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f","g"]}}}`,
		want: map[string]string{"tool_choice": `"required"`},
		warn: []string{"toolConfig.functionCallingConfig.allowedFunctionNames"},
	}, {
		desc: "response schema becomes json_schema",
		body: `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"n":{"type":"NUMBER"}}}}}`,
		want: map[string]string{"response_format": `{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object","properties":{"n":{"type":"number"}}}}}`},
	}, {
		desc: "json mime type alone",
		body: `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`,
		want: map[string]string{"response_format": `{"type":"json_object"}`},
	}, {
		desc: "dropped fields in request order",
		body: `{"safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}],"contents":[{"role":"model","parts":[{"text":"plan","thought":true},{"text":"ok"}]},{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"topK":40,"thinkingConfig":{"thinkingBudget":0},"candidateCount":2},"cachedContent":"c/1"}`,
		want: map[string]string{"messages.0": `{"role":"assistant","content":"ok"}`},
		warn: []string{"safetySettings", "contents.parts.thought", "generationConfig.topK", "generationConfig.thinkingConfig", "generationConfig.candidateCount", "cachedContent"},
	}, {
		desc: "a functionResponse without a call",
		body: `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`,
		err:  "answers no earlier functionCall",
	}, {
		desc: "unsupported inline data",
		body: `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"video/mp4","data":"AAA"}}]}]}`,
		err:  `"video/mp4"`,
	}, {
		desc: "non-image fileData",
		body: `{"contents":[{"role":"user","parts":[{"fileData":{"mimeType":"video/mp4","fileUri":"https://x/v.mp4"}}]}]}`,
		err:  "fileData",
	}})
}

func TestGeminiToChatResponse(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.GeminiNative, protocol.OpenAIChat)
	out, err := tr.Response(readFixture(t, "chat_completion.json"), testResp)
	if err != nil {
		t.Fatal(err)
	}
	checkPaths(t, out, map[string]string{
		"candidates.0.content":      `{"role":"model","parts":[{"text":"Okay, let's check the \"weather\"\n"},{"functionCall":{"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","name":"get_weather","args":{"location": "San Francisco, CA"}}}]}`,
		"candidates.0.finishReason": `"STOP"`,
		"usageMetadata":             `{"promptTokenCount":572,"candidatesTokenCount":79,"totalTokenCount":661,"cachedContentTokenCount":100,"thoughtsTokenCount":10}`,
		"modelVersion":              `"client-model"`,
		"responseId":                `"req123"`,
	})
	var r genai.GenerateContentResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Text() != "Okay, let's check the \"weather\"\n" || len(r.FunctionCalls()) != 1 || r.FunctionCalls()[0].Args["location"] != "San Francisco, CA" {
		t.Errorf("SDK view %+v", r)
	}
	for _, tc := range []struct{ finish, reason string }{
		{"stop", "STOP"}, {"length", "MAX_TOKENS"}, {"content_filter", "SAFETY"}, {"tool_calls", "STOP"},
	} {
		t.Run(tc.finish, func(t *testing.T) {
			out, err := tr.Response([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"`+tc.finish+`"}]}`), testResp)
			if err != nil {
				t.Fatal(err)
			}
			checkPaths(t, out, map[string]string{"candidates.0.finishReason": `"` + tc.reason + `"`, "candidates.0.content.parts": `[{"text":""}]`})
		})
	}
}

func TestGeminiToChatStream(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.GeminiNative, protocol.OpenAIChat)
	out := runStream(t, tr, loadEvents(t, "chat_stream.sse"), testResp)
	if len(out) != 4 {
		var s []string
		for _, ev := range out {
			s = append(s, string(ev.Data))
		}
		t.Fatalf("got %d chunks:\n%s", len(out), strings.Join(s, "\n"))
	}
	var text strings.Builder
	var calls []*genai.FunctionCall
	var last genai.GenerateContentResponse
	for _, ev := range out {
		if ev.Name != "" {
			t.Errorf("generate-content chunk with a name %q", ev.Name)
		}
		var r genai.GenerateContentResponse
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			t.Fatal(err)
		}
		text.WriteString(r.Text())
		calls = append(calls, r.FunctionCalls()...)
		last = r
	}
	if text.String() != "Okay, let's check the \"weather\"\n" {
		t.Errorf("text %q", text.String())
	}
	if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || calls[0].Args["location"] != "San Francisco, CA" {
		t.Errorf("calls %+v", calls)
	}
	if last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata.PromptTokenCount != 572 ||
		last.UsageMetadata.CandidatesTokenCount != 79 || last.UsageMetadata.ThoughtsTokenCount != 10 || last.UsageMetadata.TotalTokenCount != 661 {
		t.Errorf("final chunk %s", out[3].Data)
	}
	// The function call goes out at the finish chunk, before usage arrives.
	if !strings.Contains(string(out[2].Data), "functionCall") || strings.Contains(string(out[2].Data), "usageMetadata") {
		t.Errorf("chunk 2 %s", out[2].Data)
	}
}
