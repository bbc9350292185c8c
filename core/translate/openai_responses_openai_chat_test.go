package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestResponsesToChatRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIResponses, protocol.OpenAIChat)
	runRequestCases(t, tr, []reqCase{{
		desc: "string input and instructions",
		body: `{"model":"gpt-5-codex","instructions":"Be brief.","input":"Hi","max_output_tokens":200,"temperature":0.3,"top_p":0.9,"frequency_penalty":0.1,"presence_penalty":0.2,"parallel_tool_calls":false,"user":"u","stream":true}`,
		opts: RequestOptions{Model: "up", Stream: true},
		want: map[string]string{
			"model":               `"up"`,
			"messages":            `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]`,
			"max_tokens":          `200`,
			"temperature":         `0.3`,
			"top_p":               `0.9`,
			"frequency_penalty":   `0.1`,
			"presence_penalty":    `0.2`,
			"parallel_tool_calls": `<absent>`, // only with tools, which completions requires
			"user":                `"u"`,
			"stream":              `true`,
			"stream_options":      `{"include_usage":true}`,
		},
	}, {
		desc: "message items with parts, function calls and outputs",
		body: `{"input":[{"role":"developer","content":"Rules."},{"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"},{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"},{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]}]}`,
		opts: RequestOptions{MaxTokens: 1000},
		want: map[string]string{
			"messages.0": `{"role":"system","content":"Rules."}`,
			"messages.1": `{"role":"user","content":[{"type":"text","text":"weather?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]}`,
			"messages.2": `{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`,
			"messages.3": `{"role":"tool","tool_call_id":"call_1","content":"sunny"}`,
			"messages.4": `{"role":"tool","tool_call_id":"call_2","content":"noon"}`,
			"max_tokens": `1000`,
		},
	}, {
		desc: "function tools, tool_choice and json_schema text format",
		body: `{"input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true},{"type":"web_search"},{"type":"namespace","name":"ns"}],"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}}`,
		want: map[string]string{
			"tools":           `[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true}}]`,
			"tool_choice":     `{"type":"function","function":{"name":"f"}}`,
			"response_format": `{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}`,
		},
		warn: []string{"tools.web_search", "tools.namespace"},
	}, {
		desc: "string tool_choice and json_object",
		body: `{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":"required","parallel_tool_calls":false,"text":{"format":{"type":"json_object"}}}`,
		want: map[string]string{"tool_choice": `"required"`, "parallel_tool_calls": `false`, "response_format": `{"type":"json_object"}`},
	}, {
		desc: "dropped fields in request order",
		body: `{"model":"m","reasoning":{"effort":"high"},"input":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"a"}]}],"include":["reasoning.encrypted_content"],"store":false,"prompt_cache_key":"k","text":{"format":{"type":"text"},"verbosity":"low"},"tool_choice":{"type":"web_search_preview"},"metadata":{"a":"b"}}`,
		want: map[string]string{"messages": `[{"role":"assistant","content":"a"}]`, "reasoning_effort": `<absent>`},
		warn: []string{"reasoning", "input.reasoning", "input.id", "input.status", "include", "store", "prompt_cache_key", "text.verbosity", "tool_choice", "metadata"},
	}, {
		desc: "a reasoning model gets the effort; the summary is dropped",
		body: `{"model":"m","reasoning":{"effort":"high","summary":"auto"},"input":"x"}`,
		opts: RequestOptions{Reasoning: true},
		want: map[string]string{"reasoning_effort": `"high"`, "reasoning": `<absent>`},
		warn: []string{"reasoning.summary"},
	}, {
		desc: "input_file with data",
		body: `{"input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVB"}]}]}`,
		want: map[string]string{"messages.0.content": `[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVB"}}]`},
	}, {
		desc: "input_image by file id cannot be sent",
		body: `{"input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`,
		err:  "file ids",
	}, {
		desc: "input_file by URL cannot be sent",
		body: `{"input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`,
		err:  "file URLs",
	}, {
		desc: "unknown role",
		body: `{"input":[{"role":"critic","content":"x"}]}`,
		err:  `"critic"`,
	}})
}

func TestResponsesToChatResponse(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIResponses, protocol.OpenAIChat)
	out, err := tr.Response(readFixture(t, "chat_completion.json"), testResp)
	if err != nil {
		t.Fatal(err)
	}
	checkPaths(t, out, map[string]string{
		"id":         `"resp_req123"`,
		"object":     `"response"`,
		"created_at": `1754000000`,
		"status":     `"completed"`,
		"model":      `"client-model"`,
		"output":     `[{"id":"msg_req123_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Okay, let's check the \"weather\"\n","annotations":[],"logprobs":[]}]},{"id":"fc_req123_1","type":"function_call","status":"completed","call_id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","name":"get_weather","arguments":"{\"location\": \"San Francisco, CA\"}"}]`,
		"usage":      `{"input_tokens":572,"input_tokens_details":{"cached_tokens":100},"output_tokens":89,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":661}`,
	})
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != "Okay, let's check the \"weather\"\n" || r.Output[1].AsFunctionCall().CallID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" {
		t.Errorf("SDK view %+v", r.Output)
	}
	t.Run("length is incomplete", func(t *testing.T) {
		out, err := tr.Response([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"cut"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`), testResp)
		if err != nil {
			t.Fatal(err)
		}
		checkPaths(t, out, map[string]string{"status": `"incomplete"`, "incomplete_details": `{"reason":"max_output_tokens"}`})
	})
}

func TestResponsesToChatStream(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.OpenAIResponses, protocol.OpenAIChat)
	out := runStream(t, tr, loadEvents(t, "chat_stream.sse"), testResp)
	var names []string
	for i, ev := range out {
		var u responses.ResponseStreamEventUnion
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			t.Fatal(err)
		}
		if u.Type != ev.Name || u.SequenceNumber != int64(i) {
			t.Fatalf("event %d: name %q type %q seq %d", i, ev.Name, u.Type, u.SequenceNumber)
		}
		names = append(names, ev.Name)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}

	var u responses.ResponseStreamEventUnion
	_ = json.Unmarshal(out[0].Data, &u)
	if created := u.AsResponseCreated(); created.Response.Status != "in_progress" || created.Response.JSON.Usage.Raw() != "null" {
		t.Errorf("created %s", out[0].Data)
	}
	var text strings.Builder
	for _, ev := range out {
		var u responses.ResponseStreamEventUnion
		_ = json.Unmarshal(ev.Data, &u)
		switch ev.Name {
		case "response.output_text.delta":
			text.WriteString(u.AsResponseOutputTextDelta().Delta)
		case "response.output_text.done":
			if d := u.AsResponseOutputTextDone(); d.Text != text.String() {
				t.Errorf("done text %q, deltas %q", d.Text, text.String())
			}
		case "response.function_call_arguments.done":
			if d := u.AsResponseFunctionCallArgumentsDone(); d.Arguments != `{"location": "San Francisco, CA"}` {
				t.Errorf("arguments %q", d.Arguments)
			}
		case "response.completed":
			r := u.AsResponseCompleted().Response
			if r.Status != "completed" || r.OutputText() != "Okay, let's check the \"weather\"\n" || len(r.Output) != 2 {
				t.Errorf("completed %s", ev.Data)
			}
			if r.Usage.InputTokens != 572 || r.Usage.InputTokensDetails.CachedTokens != 100 || r.Usage.OutputTokensDetails.ReasoningTokens != 10 {
				t.Errorf("usage %+v", r.Usage)
			}
			if fc := r.Output[1].AsFunctionCall(); fc.Name != "get_weather" || fc.CallID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" {
				t.Errorf("function call %+v", fc)
			}
		}
	}

	t.Run("length ends incomplete", func(t *testing.T) {
		out := runStream(t, tr, []protocol.Event{
			{Data: []byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]}`)},
			{Data: []byte(`{"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)},
		}, testResp)
		last := out[len(out)-1]
		if last.Name != "response.incomplete" || !strings.Contains(string(last.Data), `"reason":"max_output_tokens"`) {
			t.Errorf("last %s %s", last.Name, last.Data)
		}
	})
}
