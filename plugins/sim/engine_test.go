package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// answer is what a decoded answer said, the same across protocols.
type answer struct {
	text   string
	tool   string
	args   string
	finish string
	usage  protocol.Usage
}

// decodeBody decodes a non-streaming body with the vendor's official SDK.
func decodeBody(t *testing.T, p protocol.ID, body []byte) answer {
	t.Helper()
	var a answer
	switch p {
	case protocol.OpenAIChat:
		var m openai.ChatCompletion
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		if m.Object != "chat.completion" || !strings.HasPrefix(m.ID, "chatcmpl-") || len(m.Choices) != 1 || m.Created == 0 {
			t.Fatalf("shape: %s", body)
		}
		c := m.Choices[0]
		a.text, a.finish = c.Message.Content, c.FinishReason
		if len(c.Message.ToolCalls) == 1 {
			tc := c.Message.ToolCalls[0]
			if !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
				t.Fatalf("tool call %s", body)
			}
			a.tool, a.args = tc.Function.Name, tc.Function.Arguments
		}
		a.usage = protocol.Usage{InputTokens: m.Usage.PromptTokens, OutputTokens: m.Usage.CompletionTokens,
			CachedTokens: m.Usage.PromptTokensDetails.CachedTokens, ReasoningTokens: m.Usage.CompletionTokensDetails.ReasoningTokens}
		if m.Usage.TotalTokens != m.Usage.PromptTokens+m.Usage.CompletionTokens {
			t.Fatalf("total: %s", body)
		}
	case protocol.AnthropicMessages:
		var m anthropic.Message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type != "message" || m.Role != "assistant" || !strings.HasPrefix(m.ID, "msg_") || len(m.Content) != 1 {
			t.Fatalf("shape: %s", body)
		}
		a = anthropicContent(t, m)
		a.usage = protocol.Usage{InputTokens: m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens,
			OutputTokens: m.Usage.OutputTokens, CachedTokens: m.Usage.CacheReadInputTokens, CacheWriteTokens: m.Usage.CacheCreationInputTokens}
	case protocol.OpenAIResponses:
		var r responses.Response
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		a = responsesOutput(t, r)
	case protocol.GeminiNative:
		var r genai.GenerateContentResponse
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		a = geminiOutput(t, []*genai.GenerateContentResponse{&r})
	}
	return a
}

func anthropicContent(t *testing.T, m anthropic.Message) answer {
	t.Helper()
	a := answer{finish: string(m.StopReason)}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			a.text += b.Text
		case "tool_use":
			if !strings.HasPrefix(b.ID, "toolu_") {
				t.Fatalf("tool_use id %q", b.ID)
			}
			a.tool, a.args = b.Name, string(b.Input)
		}
	}
	return a
}

func responsesOutput(t *testing.T, r responses.Response) answer {
	t.Helper()
	if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || len(r.Output) != 1 {
		t.Fatalf("shape: %s", r.RawJSON())
	}
	a := answer{text: r.OutputText(), finish: string(r.Status)}
	if it := r.Output[0]; it.Type == "function_call" {
		if !strings.HasPrefix(it.CallID, "call_") || !strings.HasPrefix(it.ID, "fc_") {
			t.Fatalf("function_call ids: %s", r.RawJSON())
		}
		a.tool, a.args = it.Name, it.Arguments.OfString
	}
	u := r.Usage
	a.usage = protocol.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedTokens: u.InputTokensDetails.CachedTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
	if u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Fatalf("total: %s", r.RawJSON())
	}
	return a
}

func geminiOutput(t *testing.T, chunks []*genai.GenerateContentResponse) answer {
	t.Helper()
	var a answer
	for i, r := range chunks {
		if len(r.Candidates) != 1 || r.Candidates[0].Content == nil || r.Candidates[0].Content.Role != "model" || r.ResponseID == "" || r.ModelVersion == "" {
			t.Fatalf("chunk %d shape", i)
		}
		for _, part := range r.Candidates[0].Content.Parts {
			a.text += part.Text
			if fc := part.FunctionCall; fc != nil {
				args, _ := json.Marshal(fc.Args)
				a.tool, a.args = fc.Name, string(args)
			}
		}
		last := i == len(chunks)-1
		if (r.Candidates[0].FinishReason != "") != last || (r.UsageMetadata != nil) != last {
			t.Fatalf("chunk %d of %d: finishReason %q usage %v", i, len(chunks), r.Candidates[0].FinishReason, r.UsageMetadata)
		}
		if last {
			a.finish = string(r.Candidates[0].FinishReason)
			u := r.UsageMetadata
			a.usage = protocol.Usage{InputTokens: int64(u.PromptTokenCount), OutputTokens: int64(u.CandidatesTokenCount + u.ThoughtsTokenCount),
				CachedTokens: int64(u.CachedContentTokenCount), ReasoningTokens: int64(u.ThoughtsTokenCount)}
			if u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
				t.Fatalf("total %+v", u)
			}
		}
	}
	return a
}

// decodeStream accumulates a stream with the vendor's official SDK types.
func decodeStream(t *testing.T, p protocol.ID, sink *recSink) answer {
	t.Helper()
	if sink.head.Status != 200 || sink.head.Headers["content-type"] != "text/event-stream" {
		t.Fatalf("head %+v", sink.head)
	}
	evs := sink.events
	var a answer
	switch p {
	case protocol.OpenAIChat:
		if string(evs[len(evs)-1].Data) != "[DONE]" {
			t.Fatalf("no [DONE]")
		}
		var acc openai.ChatCompletionAccumulator
		for _, ev := range evs[:len(evs)-1] {
			if ev.Name != "" {
				t.Fatalf("named event %q", ev.Name)
			}
			var c openai.ChatCompletionChunk
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				t.Fatal(err)
			}
			if c.Object != "chat.completion.chunk" || !acc.AddChunk(c) {
				t.Fatalf("chunk refused: %s", ev.Data)
			}
		}
		m := acc.ChatCompletion
		if len(m.Choices) != 1 {
			t.Fatalf("choices %d", len(m.Choices))
		}
		a.text, a.finish = m.Choices[0].Message.Content, m.Choices[0].FinishReason
		if tc := m.Choices[0].Message.ToolCalls; len(tc) == 1 {
			a.tool, a.args = tc[0].Function.Name, tc[0].Function.Arguments
		}
		a.usage = protocol.Usage{InputTokens: m.Usage.PromptTokens, OutputTokens: m.Usage.CompletionTokens,
			CachedTokens: m.Usage.PromptTokensDetails.CachedTokens, ReasoningTokens: m.Usage.CompletionTokensDetails.ReasoningTokens}
	case protocol.AnthropicMessages:
		var m anthropic.Message
		for _, ev := range evs {
			var e anthropic.MessageStreamEventUnion
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type != ev.Name {
				t.Fatalf("event %q carries type %q", ev.Name, e.Type)
			}
			if err := m.Accumulate(e); err != nil {
				t.Fatalf("accumulate %s: %v", ev.Name, err)
			}
		}
		if evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" || evs[2].Name != "ping" {
			t.Fatalf("sequence %s ... %s", evs[0].Name, evs[len(evs)-1].Name)
		}
		a = anthropicContent(t, m)
		a.usage = protocol.Usage{InputTokens: m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens,
			OutputTokens: m.Usage.OutputTokens, CachedTokens: m.Usage.CacheReadInputTokens, CacheWriteTokens: m.Usage.CacheCreationInputTokens}
	case protocol.OpenAIResponses:
		var final responses.Response
		var deltas strings.Builder
		for i, ev := range evs {
			var e responses.ResponseStreamEventUnion
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type != ev.Name || e.SequenceNumber != int64(i) {
				t.Fatalf("event %d %q: type %q seq %d", i, ev.Name, e.Type, e.SequenceNumber)
			}
			switch e.Type {
			case "response.output_text.delta", "response.function_call_arguments.delta":
				deltas.WriteString(e.Delta)
			case "response.completed", "response.incomplete":
				final = e.Response
			}
		}
		if evs[0].Name != "response.created" || evs[1].Name != "response.in_progress" || evs[2].Name != "response.output_item.added" {
			t.Fatalf("sequence starts %s %s %s", evs[0].Name, evs[1].Name, evs[2].Name)
		}
		a = responsesOutput(t, final)
		if got := a.text + a.args; deltas.String() != got {
			t.Fatalf("deltas %q, final %q", deltas.String(), got)
		}
	case protocol.GeminiNative:
		var chunks []*genai.GenerateContentResponse
		for _, ev := range evs {
			var r genai.GenerateContentResponse
			if ev.Name != "" {
				t.Fatalf("named event %q", ev.Name)
			}
			if err := json.Unmarshal(ev.Data, &r); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, &r)
		}
		a = geminiOutput(t, chunks)
	}
	// The gateway's own codec must read the same stream as complete, with
	// the same usage.
	st := codec.For(p).NewStream()
	for _, ev := range evs {
		st.Observe(ev2(ev.Name, ev.Data))
	}
	if !st.Complete() {
		t.Fatalf("codec: stream not complete")
	}
	if u := st.Usage(); !sameUsage(u, a.usage) {
		t.Fatalf("codec usage %+v, sdk usage %+v", u, a.usage)
	}
	return a
}

func ev2(name string, data []byte) protocol.Event { return protocol.Event{Name: name, Data: data} }

func sameUsage(a, b protocol.Usage) bool {
	return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.CachedTokens == b.CachedTokens &&
		(a.ReasoningTokens == b.ReasoningTokens || a.ReasoningTokens == 0 || b.ReasoningTokens == 0)
}

var finishes = map[protocol.ID][3]string{ // stop, length, tool
	protocol.OpenAIChat:        {"stop", "length", "tool_calls"},
	protocol.AnthropicMessages: {"end_turn", "max_tokens", "tool_use"},
	protocol.OpenAIResponses:   {"completed", "incomplete", "completed"},
	protocol.GeminiNative:      {"STOP", "MAX_TOKENS", "STOP"},
}

var maxField = map[protocol.ID]string{
	protocol.OpenAIChat:        `,"max_tokens":5`,
	protocol.AnthropicMessages: ``, // set below: the body already has max_tokens
	protocol.OpenAIResponses:   `,"max_output_tokens":5`,
	protocol.GeminiNative:      `,"generationConfig":{"maxOutputTokens":5}`,
}

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1}},"required":["city","unit"]}`

func TestAnswersDecodeWithSDKs(t *testing.T) {
	for _, p := range protocol.All {
		words := func(s string) int { return len(strings.Fields(s)) }
		cases := []struct {
			desc, prompt, extra string
			tools               [][2]string
			check               func(t *testing.T, a answer, in int64)
		}{
			{desc: "default text", prompt: "What is a toll road?", check: func(t *testing.T, a answer, in int64) {
				if !strings.HasPrefix(a.text, "Tollgate sim reply to: What is a toll road?") || words(a.text) != DefaultWords ||
					a.finish != finishes[p][0] || a.usage.OutputTokens != DefaultWords || a.usage.InputTokens != in {
					t.Fatalf("%+v (want input %d)", a, in)
				}
			}},
			{desc: "words cached reasoning", prompt: "hi [sim:words=7] [sim:cached=3,reasoning=11]", check: func(t *testing.T, a answer, in int64) {
				if words(a.text) != 7 || a.usage.OutputTokens != 18 || a.usage.CachedTokens != 3 || a.finish != finishes[p][0] {
					t.Fatalf("%+v", a)
				}
				if p != protocol.AnthropicMessages && a.usage.ReasoningTokens != 11 {
					t.Fatalf("reasoning %+v", a.usage)
				}
			}},
			{desc: "cache writes", prompt: "hi there [sim:cached=2,written=3]", check: func(t *testing.T, a answer, in int64) {
				// Input counts every token; only messages-style names the writes.
				wantWritten := int64(0)
				if p == protocol.AnthropicMessages {
					wantWritten = 3
				}
				if a.usage.InputTokens != in || a.usage.CachedTokens != 2 || a.usage.CacheWriteTokens != wantWritten {
					t.Fatalf("%+v (want input %d)", a.usage, in)
				}
			}},
			{desc: "max tokens", prompt: "hi", extra: maxField[p], check: func(t *testing.T, a answer, in int64) {
				if words(a.text) != 5 || a.usage.OutputTokens != 5 || a.finish != finishes[p][1] {
					t.Fatalf("%+v", a)
				}
			}},
			{desc: "tool call", prompt: "Use get_weather for: Paris", tools: [][2]string{{"lookup", `{"type":"object"}`}, {"get_weather", weatherSchema}},
				check: func(t *testing.T, a answer, in int64) {
					if a.tool != "get_weather" || a.text != "" || a.finish != finishes[p][2] {
						t.Fatalf("%+v", a)
					}
					var args map[string]any
					if err := json.Unmarshal([]byte(a.args), &args); err != nil || args["city"] != "Paris" || args["unit"] != "celsius" || len(args) != 2 {
						t.Fatalf("args %s", a.args)
					}
					if want := int64((len(a.args) + argFragment - 1) / argFragment); a.usage.OutputTokens != want {
						t.Fatalf("output %d, want %d", a.usage.OutputTokens, want)
					}
				}},
		}
		for _, tc := range cases {
			t.Run(string(p)+"/"+tc.desc, func(t *testing.T) {
				body := bodyFor(p, tc.prompt, tc.extra, tc.tools...)
				if p == protocol.AnthropicMessages && tc.desc == "max tokens" {
					body = []byte(strings.Replace(string(body), `"max_tokens":1024`, `"max_tokens":5`, 1))
				}
				req, err := codec.For(p).Inspect(body)
				if err != nil {
					t.Fatalf("the gateway codec refuses the test body: %v", err)
				}
				resp := mustChat(t, call(p, body))
				if resp.Status != 200 || resp.Headers["content-type"] != "application/json" {
					t.Fatalf("%d %v", resp.Status, resp.Headers)
				}
				a := decodeBody(t, p, resp.Body)
				tc.check(t, a, req.InputEstimate())
				if u := codec.For(p).Usage(resp.Body); !sameUsage(u, a.usage) {
					t.Fatalf("codec usage %+v, sdk %+v", u, a.usage)
				}
				sbody := body
				if p == protocol.OpenAIChat {
					sbody = bodyFor(p, tc.prompt, tc.extra+`,"stream":true,"stream_options":{"include_usage":true}`, tc.tools...)
				}
				s := decodeStream(t, p, mustStream(t, call(p, sbody)))
				if s.text != a.text || s.tool != a.tool || s.finish != a.finish || !sameUsage(s.usage, a.usage) {
					t.Fatalf("stream %+v\nbody   %+v", s, a)
				}
				if s.args != a.args && !jsonEqual(s.args, a.args) {
					t.Fatalf("stream args %s, body %s", s.args, a.args)
				}
			})
		}
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestChatStreamUsageOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		extra string
		usage bool
	}{
		{desc: "without stream_options", extra: `,"stream":true`},
		{desc: "include_usage false", extra: `,"stream":true,"stream_options":{"include_usage":false}`},
		{desc: "include_usage true", extra: `,"stream":true,"stream_options":{"include_usage":true}`, usage: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			sink := mustStream(t, call(protocol.OpenAIChat, bodyFor(protocol.OpenAIChat, "hi [sim:words=3]", tc.extra)))
			// role, 3 content, finish, [usage], [DONE]
			if want := 6 + b2i(tc.usage); len(sink.events) != want {
				t.Fatalf("%d events, want %d", len(sink.events), want)
			}
			for i, ev := range sink.events[:len(sink.events)-1] {
				hasNull := strings.Contains(string(ev.Data), `"usage":null`)
				isUsage := strings.Contains(string(ev.Data), `"choices":[],"usage":{`)
				if hasNull != (tc.usage && !isUsage) || isUsage != (tc.usage && i == len(sink.events)-2) {
					t.Fatalf("event %d: %s", i, ev.Data)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A chat answer's timestamp is the request's time (the engine's clock),
// on the protocols that carry one.
func TestChatCreatedIsNow(t *testing.T) {
	e := NewEngine()
	at := time.Unix(1_900_000_123, 0)
	e.now = func() time.Time { return at }
	for p, path := range map[protocol.ID]string{protocol.OpenAIChat: "created", protocol.OpenAIResponses: "created_at"} {
		resp, err := e.Chat(context.Background(), call(p, bodyFor(p, "hi", "")))
		if err != nil || gjson.GetBytes(resp.Body, path).Int() != at.Unix() {
			t.Errorf("%s: %s = %s, want %d (%v)", p, path, gjson.GetBytes(resp.Body, path).Raw, at.Unix(), err)
		}
	}
	before := time.Now().Unix()
	resp, _ := NewEngine().Chat(context.Background(), call(protocol.OpenAIChat, bodyFor(protocol.OpenAIChat, "hi", "")))
	if c := gjson.GetBytes(resp.Body, "created").Int(); c < before || c > time.Now().Unix() {
		t.Errorf("created %d is not now", c)
	}
}
