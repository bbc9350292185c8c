package matrix

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
)

// tc is one case of the suite, in neutral terms; build writes it in a
// protocol's own request shape.
type tc struct {
	name      string
	prompt    string // the last user message ("" in a tool result turn)
	tools     bool   // get_weather is offered
	history   bool   // the conversation ends with get_weather's result
	image     bool   // the user message carries a PNG
	maxTokens int64
	// What the client must see.
	finish    string // stop, length, tool_calls
	errStatus int    // the upstream refuses with this status
	cached    int64  // cached input tokens reported
	reasoning int64  // reasoning tokens reported
}

var cases = []tc{
	{name: "plain", prompt: "Hello through the matrix", maxTokens: 256, finish: "stop"},
	{name: "tool turn", prompt: "Use the get_weather tool for Paris.", tools: true, maxTokens: 256, finish: "tool_calls"},
	{name: "tool result turn", tools: true, history: true, maxTokens: 256, finish: "stop"},
	{name: "image input", prompt: "What is in this image?", image: true, maxTokens: 256, finish: "stop"},
	{name: "max-tokens stop", prompt: "Tell me a long story [sim:words=60]", maxTokens: 16, finish: "length"},
	{name: "cached usage", prompt: "Hello again [sim:cached=5 reasoning=3]", maxTokens: 256, finish: "stop", cached: 5, reasoning: 3},
	{name: "upstream error", prompt: "Fail now [sim:error=429]", maxTokens: 256, errStatus: 429},
}

const (
	system     = "You are terse."
	pngData    = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	askWeather = "Use the get_weather tool for Paris."
	toolResult = `{"temp_c":21}`
	callArgs   = `{"city":"Paris","unit":"celsius"}`
	schema     = `{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city","unit"]}`
)

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// build writes case c as a client body of protocol p.
func build(p protocol.ID, c tc, stream bool) string {
	var b strings.Builder
	switch p {
	case protocol.OpenAIChat:
		b.WriteString(`{"model":"client-model","messages":[{"role":"system","content":` + q(system) + `}`)
		if c.history {
			b.WriteString(`,{"role":"user","content":` + q(askWeather) + `},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":` + q(callArgs) + `}}]},{"role":"tool","tool_call_id":"call_1","content":` + q(toolResult) + `}`)
		} else {
			b.WriteString(`,{"role":"user","content":[{"type":"text","text":` + q(c.prompt) + `}`)
			if c.image {
				b.WriteString(`,{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pngData + `"}}`)
			}
			b.WriteString(`]}`)
		}
		fmt.Fprintf(&b, `],"max_tokens":%d`, c.maxTokens)
		if c.tools {
			b.WriteString(`,"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city","parameters":` + schema + `}}]`)
		}
		if stream {
			b.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
		}
	case protocol.AnthropicMessages:
		fmt.Fprintf(&b, `{"model":"client-model","max_tokens":%d,"system":%s,"messages":[`, c.maxTokens, q(system))
		if c.history {
			b.WriteString(`{"role":"user","content":` + q(askWeather) + `},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":` + callArgs + `}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + q(toolResult) + `}]}`)
		} else {
			b.WriteString(`{"role":"user","content":[{"type":"text","text":` + q(c.prompt) + `}`)
			if c.image {
				b.WriteString(`,{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pngData + `"}}`)
			}
			b.WriteString(`]}`)
		}
		b.WriteString(`]`)
		if c.tools {
			b.WriteString(`,"tools":[{"name":"get_weather","description":"Current weather for a city","input_schema":` + schema + `}]`)
		}
		if stream {
			b.WriteString(`,"stream":true`)
		}
	case protocol.OpenAIResponses:
		b.WriteString(`{"model":"client-model","instructions":` + q(system) + `,"input":[`)
		if c.history {
			b.WriteString(`{"type":"message","role":"user","content":[{"type":"input_text","text":` + q(askWeather) + `}]},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":` + q(callArgs) + `},{"type":"function_call_output","call_id":"call_1","output":` + q(toolResult) + `}`)
		} else {
			b.WriteString(`{"type":"message","role":"user","content":[{"type":"input_text","text":` + q(c.prompt) + `}`)
			if c.image {
				b.WriteString(`,{"type":"input_image","image_url":"data:image/png;base64,` + pngData + `","detail":"auto"}`)
			}
			b.WriteString(`]}`)
		}
		fmt.Fprintf(&b, `],"max_output_tokens":%d`, c.maxTokens)
		if c.tools {
			b.WriteString(`,"tools":[{"type":"function","name":"get_weather","description":"Current weather for a city","parameters":` + schema + `,"strict":false}]`)
		}
		if stream {
			b.WriteString(`,"stream":true`)
		}
	case protocol.GeminiNative:
		b.WriteString(`{"contents":[`)
		if c.history {
			b.WriteString(`{"role":"user","parts":[{"text":` + q(askWeather) + `}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":` + callArgs + `}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":` + toolResult + `}}]}`)
		} else {
			b.WriteString(`{"role":"user","parts":[{"text":` + q(c.prompt) + `}`)
			if c.image {
				b.WriteString(`,{"inlineData":{"mimeType":"image/png","data":"` + pngData + `"}}`)
			}
			b.WriteString(`]}`)
		}
		fmt.Fprintf(&b, `],"systemInstruction":{"parts":[{"text":%s}]},"generationConfig":{"maxOutputTokens":%d}`, q(system), c.maxTokens)
		if c.tools {
			b.WriteString(`,"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Current weather for a city","parameters":` + schema + `}]}]`)
		}
	}
	b.WriteString(`}`)
	return b.String()
}

// norm is an answer as a client reads it, in neutral terms.
type norm struct {
	text   string
	calls  []normCall
	finish string // stop, length, tool_calls, content_filter
	usage  protocol.Usage
}

type normCall struct {
	id, name string
	args     any // the decoded arguments object
}

func decodeArgs(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("tool arguments %q are not JSON: %v", s, err)
	}
	if _, ok := v.(map[string]any); !ok {
		t.Fatalf("tool arguments %q are not an object", s)
	}
	return v
}

// normFinish puts each protocol's stop reason in the completions terms.
func normFinish(s string, calls bool) string {
	switch s {
	case "length", "max_tokens", "MAX_TOKENS", "incomplete:max_output_tokens":
		return "length"
	case "content_filter", "refusal", "SAFETY", "incomplete:content_filter":
		return "content_filter"
	}
	if calls {
		return "tool_calls"
	}
	return "stop"
}

// readAnswer reads a non-streaming answer of protocol p with its SDK.
func readAnswer(t *testing.T, p protocol.ID, body []byte) norm {
	t.Helper()
	n := norm{usage: codec.For(p).Usage(body)}
	if !n.usage.Reported {
		t.Fatalf("%s answer without usage: %s", p, body)
	}
	switch p {
	case protocol.OpenAIChat:
		var cc openai.ChatCompletion
		mustUnmarshal(t, body, &cc)
		if cc.Object != "chat.completion" || len(cc.Choices) != 1 || cc.Model == "" {
			t.Fatalf("not a chat.completion: %s", body)
		}
		m := cc.Choices[0].Message
		n.text = m.Content
		for _, c := range m.ToolCalls {
			n.calls = append(n.calls, normCall{c.ID, c.Function.Name, decodeArgs(t, c.Function.Arguments)})
		}
		n.finish = normFinish(cc.Choices[0].FinishReason, len(n.calls) > 0)
	case protocol.AnthropicMessages:
		var m anthropic.Message
		mustUnmarshal(t, body, &m)
		if m.Type != "message" || m.Role != "assistant" || m.ID == "" {
			t.Fatalf("not a message: %s", body)
		}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				n.text += b.Text
			case "tool_use":
				n.calls = append(n.calls, normCall{b.ID, b.Name, decodeArgs(t, string(b.Input))})
			}
		}
		n.finish = normFinish(string(m.StopReason), len(n.calls) > 0)
	case protocol.OpenAIResponses:
		var r responses.Response
		mustUnmarshal(t, body, &r)
		n = readResponse(t, r, n.usage)
	case protocol.GeminiNative:
		var r genai.GenerateContentResponse
		mustUnmarshal(t, body, &r)
		var finish string
		n.text, n.calls, finish = geminiParts(t, &r)
		n.finish = normFinish(finish, len(n.calls) > 0)
	}
	return n
}

func readResponse(t *testing.T, r responses.Response, u protocol.Usage) norm {
	t.Helper()
	if r.Object != "response" || r.ID == "" {
		t.Fatalf("not a response: %s", r.RawJSON())
	}
	n := norm{text: r.OutputText(), usage: u}
	for _, it := range r.Output {
		if it.Type == "function_call" {
			fc := it.AsFunctionCall()
			n.calls = append(n.calls, normCall{fc.CallID, fc.Name, decodeArgs(t, fc.Arguments)})
		}
	}
	status := string(r.Status)
	if status == "incomplete" {
		status += ":" + r.IncompleteDetails.Reason
	}
	n.finish = normFinish(status, len(n.calls) > 0)
	return n
}

// geminiParts collects a chunk's text, calls and finish reason.
func geminiParts(t *testing.T, r *genai.GenerateContentResponse) (string, []normCall, string) {
	t.Helper()
	if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
		t.Fatalf("a generate-content answer without a candidate")
	}
	var text string
	var calls []normCall
	for _, p := range r.Candidates[0].Content.Parts {
		if p.Thought {
			continue
		}
		text += p.Text
		if fc := p.FunctionCall; fc != nil {
			raw, _ := json.Marshal(fc.Args)
			calls = append(calls, normCall{fc.ID, fc.Name, decodeArgs(t, string(raw))})
		}
	}
	return text, calls, string(r.Candidates[0].FinishReason)
}

// readStream reads the events of a stream of protocol p with its SDK
// (accumulators where the SDK has one) and checks the protocol's framing.
func readStream(t *testing.T, p protocol.ID, evs []protocol.Event) norm {
	t.Helper()
	track := codec.For(p).NewStream()
	for _, ev := range evs {
		track.Observe(ev)
	}
	if !track.Complete() {
		t.Fatalf("%s stream not complete: %s", p, dump(evs))
	}
	n := norm{usage: track.Usage()}
	switch p {
	case protocol.OpenAIChat:
		var acc openai.ChatCompletionAccumulator
		if !sse.IsDone(evs[len(evs)-1]) {
			t.Fatalf("completions stream without [DONE]")
		}
		for _, ev := range evs[:len(evs)-1] {
			var chunk openai.ChatCompletionChunk
			mustUnmarshal(t, ev.Data, &chunk)
			if chunk.Object != "chat.completion.chunk" || ev.Name != "" {
				t.Fatalf("not a chunk: %s %s", ev.Name, ev.Data)
			}
			if !acc.AddChunk(chunk) {
				t.Fatalf("the accumulator refused %s", ev.Data)
			}
		}
		if len(acc.Choices) != 1 {
			t.Fatalf("accumulated %d choices", len(acc.Choices))
		}
		m := acc.Choices[0].Message
		n.text = m.Content
		for _, c := range m.ToolCalls {
			n.calls = append(n.calls, normCall{c.ID, c.Function.Name, decodeArgs(t, c.Function.Arguments)})
		}
		n.finish = normFinish(acc.Choices[0].FinishReason, len(n.calls) > 0)
	case protocol.AnthropicMessages:
		var m anthropic.Message
		for _, ev := range evs {
			var u anthropic.MessageStreamEventUnion
			mustUnmarshal(t, ev.Data, &u)
			if u.Type != ev.Name {
				t.Fatalf("event %q carries type %q", ev.Name, u.Type)
			}
			if err := m.Accumulate(u); err != nil {
				t.Fatalf("Accumulate(%s): %v", ev.Data, err)
			}
		}
		if evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" {
			t.Fatalf("messages stream from %s to %s", evs[0].Name, evs[len(evs)-1].Name)
		}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				n.text += b.Text
			case "tool_use":
				n.calls = append(n.calls, normCall{b.ID, b.Name, decodeArgs(t, string(b.Input))})
			}
		}
		n.finish = normFinish(string(m.StopReason), len(n.calls) > 0)
	case protocol.OpenAIResponses:
		var final responses.Response
		var deltas string
		for i, ev := range evs {
			var u responses.ResponseStreamEventUnion
			mustUnmarshal(t, ev.Data, &u)
			if u.Type != ev.Name || u.SequenceNumber != int64(i) {
				t.Fatalf("event %d %q: type %q, sequence_number %d", i, ev.Name, u.Type, u.SequenceNumber)
			}
			switch u.Type {
			case "response.output_text.delta":
				deltas += u.Delta
			case "response.completed", "response.incomplete":
				final = u.Response
			}
		}
		if evs[0].Name != "response.created" || evs[1].Name != "response.in_progress" {
			t.Fatalf("responses stream opens with %s, %s", evs[0].Name, evs[1].Name)
		}
		n = readResponse(t, final, n.usage)
		if deltas != n.text {
			t.Fatalf("text deltas %q, completed text %q", deltas, n.text)
		}
	case protocol.GeminiNative:
		var finish string
		for _, ev := range evs {
			var r genai.GenerateContentResponse
			mustUnmarshal(t, ev.Data, &r)
			text, calls, f := geminiParts(t, &r)
			n.text += text
			n.calls = append(n.calls, calls...)
			if f != "" {
				finish = f
			}
		}
		n.finish = normFinish(finish, len(n.calls) > 0)
	}
	return n
}

// textDelta reports whether an upstream event of protocol p carries text.
func textDelta(p protocol.ID, ev protocol.Event) bool {
	s := string(ev.Data)
	switch p {
	case protocol.OpenAIChat:
		return strings.Contains(s, `"delta":{"content":"`) && !strings.Contains(s, `"content":""`)
	case protocol.AnthropicMessages:
		return strings.Contains(s, `"text_delta"`)
	case protocol.OpenAIResponses:
		return ev.Name == "response.output_text.delta"
	case protocol.GeminiNative:
		return strings.Contains(s, `"text":"`) && !strings.Contains(s, `"text":""`)
	}
	return false
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%T: %v\n%s", v, err, data)
	}
}

func dump(evs []protocol.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n%s %s", ev.Name, ev.Data)
	}
	return b.String()
}
