package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestMessagesToChatRequest(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.AnthropicMessages, protocol.OpenAIChat)
	runRequestCases(t, tr, []reqCase{{
		desc: "system, messages, sampling, stream usage",
		body: `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"text","text":"Hello"}]},{"role":"user","content":[{"type":"text","text":"More"}]}],"temperature":0.5,"top_p":0.9,"stop_sequences":["END"],"stream":true}`,
		opts: RequestOptions{Model: "gpt-up", Stream: true},
		want: map[string]string{
			"model":          `"gpt-up"`,
			"max_tokens":     `1024`,
			"messages":       `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":[{"type":"text","text":"More"}]}]`,
			"temperature":    `0.5`,
			"top_p":          `0.9`,
			"stop":           `["END"]`,
			"stream":         `true`,
			"stream_options": `{"include_usage":true}`,
		},
	}, {
		desc: "system blocks with cache_control",
		body: `{"max_tokens":5,"system":[{"type":"text","text":"A","cache_control":{"type":"ephemeral"}},{"type":"text","text":"B"}],"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}`,
		want: map[string]string{"messages.0": `{"role":"system","content":"A\nB"}`, "stream": `<absent>`},
		warn: []string{"cache_control"},
	}, {
		desc: "images and documents",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain doc"}}]}]}`,
		want: map[string]string{
			"messages.0.content": `[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"image_url","image_url":{"url":"https://example.com/a.jpg"}},{"type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVBE"}},{"type":"text","text":"plain doc"}]`,
		},
	}, {
		desc: "tool use and tool results keep ids; results come before user text",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"text","text":"also this"},{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"},{"type":"image","source":{"type":"url","url":"https://example.com/sky.png"}}],"is_error":true}]}]}`,
		want: map[string]string{
			"messages.1": `{"role":"assistant","content":"Checking.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
			"messages.2": `{"role":"tool","tool_call_id":"toolu_1","content":"sunny"}`,
			"messages.3": `{"role":"user","content":[{"type":"text","text":"also this"},{"type":"image_url","image_url":{"url":"https://example.com/sky.png"}}]}`,
		},
		warn: []string{"messages.content.thinking", "messages.content.is_error"},
	}, {
		desc: "tool-only assistant turn has null content",
		body: `{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`,
		want: map[string]string{
			"messages.0.content": `null`,
			"messages.1":         `{"role":"tool","tool_call_id":"t","content":"ok"}`,
			"messages.#":         `2`,
		},
	}, {
		desc: "tools, tool_choice any, disable_parallel_tool_use, metadata user",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"get_weather","description":"W","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"metadata":{"user_id":"u-1"}}`,
		want: map[string]string{
			"tools":               `[{"type":"function","function":{"name":"get_weather","description":"W","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`,
			"tool_choice":         `"required"`,
			"parallel_tool_calls": `false`,
			"user":                `"u-1"`,
		},
		warn: []string{"tools.web_search_20250305"},
	}, {
		desc: "named tool choice",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`,
		want: map[string]string{"tool_choice": `{"type":"function","function":{"name":"f"}}`},
	}, {
		desc: "dropped fields in request order",
		body: `{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":5,"top_k":5,"messages":[{"role":"user","content":"x"}],"service_tier":"auto","metadata":{"other":"x"}}`,
		want: map[string]string{"thinking": `<absent>`, "top_k": `<absent>`, "reasoning_effort": `<absent>`},
		warn: []string{"thinking", "top_k", "service_tier", "metadata.other"},
	}, {
		desc: "a reasoning model gets thinking budgets as efforts",
		body: `{"max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"x"}]}`,
		opts: RequestOptions{Reasoning: true},
		want: map[string]string{"reasoning_effort": `"low"`, "thinking": `<absent>`},
	}, {
		desc: "a large budget is high effort",
		body: `{"max_tokens":5,"thinking":{"type":"enabled","budget_tokens":31999},"messages":[{"role":"user","content":"x"}]}`,
		opts: RequestOptions{Reasoning: true},
		want: map[string]string{"reasoning_effort": `"high"`},
	}, {
		desc: "adaptive thinking has no effort: dropped",
		body: `{"max_tokens":5,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"x"}]}`,
		opts: RequestOptions{Reasoning: true},
		want: map[string]string{"reasoning_effort": `<absent>`},
		warn: []string{"thinking"},
	}, {
		desc: "disabled thinking asks for nothing",
		body: `{"max_tokens":5,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"x"}]}`,
		want: map[string]string{"reasoning_effort": `<absent>`},
	}, {
		desc: "max tokens from options when absent",
		body: `{"messages":[{"role":"user","content":"x"}]}`,
		opts: RequestOptions{MaxTokens: 300},
		want: map[string]string{"max_tokens": `300`},
	}, {
		desc: "a file-source document cannot be sent",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"f"}}]}]}`,
		err:  `"file" source`,
	}, {
		desc: "unknown role",
		body: `{"max_tokens":5,"messages":[{"role":"tool","content":"x"}]}`,
		err:  `"tool"`,
	}, {
		desc: "a mid-conversation system message stays a system message",
		body: `{"max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"text","text":"# Env"},{"type":"text","text":"cwd: /"}]}]}`,
		want: map[string]string{"messages.1": `{"role":"system","content":"# Env\n\ncwd: /"}`},
	}})
}

func TestMessagesToChatResponse(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.AnthropicMessages, protocol.OpenAIChat)
	out, err := tr.Response(readFixture(t, "chat_completion.json"), testResp)
	if err != nil {
		t.Fatal(err)
	}
	checkPaths(t, out, map[string]string{
		"id":          `"msg_req123"`,
		"type":        `"message"`,
		"model":       `"client-model"`,
		"content":     `[{"type":"text","text":"Okay, let's check the \"weather\"\n"},{"type":"tool_use","id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","name":"get_weather","input":{"location": "San Francisco, CA"}}]`,
		"stop_reason": `"tool_use"`,
		"usage":       `{"input_tokens":472,"output_tokens":89,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}`,
	})
	var m anthropic.Message
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m.Content[1].AsToolUse().Name != "get_weather" || m.Usage.CacheReadInputTokens != 100 {
		t.Errorf("SDK view %+v", m)
	}
	for _, tc := range []struct{ finish, stop string }{
		{"stop", "end_turn"}, {"length", "max_tokens"}, {"tool_calls", "tool_use"}, {"content_filter", "refusal"},
	} {
		t.Run(tc.finish, func(t *testing.T) {
			body := `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"` + tc.finish + `"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
			out, err := tr.Response([]byte(body), testResp)
			if err != nil {
				t.Fatal(err)
			}
			checkPaths(t, out, map[string]string{"stop_reason": `"` + tc.stop + `"`, "content.0.text": `"hi"`})
		})
	}
}

func TestMessagesToChatStream(t *testing.T) {
	t.Parallel()
	tr := mustLookup(t, protocol.AnthropicMessages, protocol.OpenAIChat)
	evs := loadEvents(t, "chat_stream.sse")
	out := runStream(t, tr, evs, testResp)
	var names []string
	for _, ev := range out {
		var typ struct{ Type string }
		if err := json.Unmarshal(ev.Data, &typ); err != nil || typ.Type != ev.Name {
			t.Fatalf("event name %q, data %s", ev.Name, ev.Data)
		}
		names = append(names, ev.Name)
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	checkPaths(t, out[9].Data, map[string]string{
		"delta": `{"stop_reason":"tool_use","stop_sequence":null}`,
		"usage": `{"input_tokens":472,"output_tokens":89,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}`,
	})

	t.Run("anthropic-sdk-go accumulator", func(t *testing.T) {
		var msg anthropic.Message
		for _, ev := range out {
			var u anthropic.MessageStreamEventUnion
			if err := json.Unmarshal(ev.Data, &u); err != nil {
				t.Fatal(err)
			}
			if err := msg.Accumulate(u); err != nil {
				t.Fatalf("Accumulate(%s): %v", ev.Data, err)
			}
		}
		if len(msg.Content) != 2 || msg.Content[0].Text != "Okay, let's check the \"weather\"\n" {
			t.Fatalf("content %+v", msg.Content)
		}
		tu := msg.Content[1].AsToolUse()
		if tu.ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || tu.Name != "get_weather" || string(tu.Input) != `{"location": "San Francisco, CA"}` {
			t.Errorf("tool use %+v input %s", tu, tu.Input)
		}
		if msg.StopReason != "tool_use" || msg.Usage.OutputTokens != 89 || msg.Usage.InputTokens != 472 {
			t.Errorf("stop %q usage %+v", msg.StopReason, msg.Usage)
		}
	})

	t.Run("text after a tool opens a new block", func(t *testing.T) {
		evs := []protocol.Event{
			{Data: []byte(`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"a","arguments":"{}"}}]}}]}`)},
			{Data: []byte(`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"b","arguments":"{\"k\":"}}]}}]}`)},
			{Data: []byte(`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"1}"}}]}}]}`)},
			{Data: []byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}`)},
			{Data: []byte(`[DONE]`)},
		}
		out := runStream(t, tr, evs, testResp)
		var msg anthropic.Message
		for _, ev := range out {
			var u anthropic.MessageStreamEventUnion
			if err := json.Unmarshal(ev.Data, &u); err != nil {
				t.Fatal(err)
			}
			if err := msg.Accumulate(u); err != nil {
				t.Fatalf("Accumulate(%s): %v", ev.Data, err)
			}
		}
		if len(msg.Content) != 3 || string(msg.Content[1].AsToolUse().Input) != `{"k":1}` || msg.Content[2].Text != "done" {
			t.Errorf("content %+v", msg.Content)
		}
	})

	t.Run("empty complete stream still terminates", func(t *testing.T) {
		out := runStream(t, tr, nil, testResp)
		if len(out) != 3 || out[0].Name != "message_start" || out[2].Name != "message_stop" {
			t.Errorf("events %v", out)
		}
	})
}
