package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// validate checks v against schema by the rules sim promises: type (any
// case), enum, bounds, required present and nothing else, recursively.
func validate(schema map[string]any, v any, path string) error {
	if e, ok := schema["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
			return fmt.Errorf("%s: %v not in enum %v", path, v, e)
		}
		return nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := schema[k].([]any); ok {
			for _, a := range alts {
				if validate(a.(map[string]any), v, path) == nil {
					return nil
				}
			}
			return fmt.Errorf("%s: matches no %s branch", path, k)
		}
	}
	ty, _ := schema["type"].(string)
	switch strings.ToLower(ty) {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", path)
		}
		req, _ := schema["required"].([]any)
		if len(obj) != len(req) {
			return fmt.Errorf("%s: %d properties, %d required", path, len(obj), len(req))
		}
		props, _ := schema["properties"].(map[string]any)
		for _, r := range req {
			val, ok := obj[r.(string)]
			if !ok {
				return fmt.Errorf("%s: %s missing", path, r)
			}
			if err := validate(props[r.(string)].(map[string]any), val, path+"."+r.(string)); err != nil {
				return err
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: not an array", path)
		}
		if mn, ok := schema["minItems"].(float64); ok && float64(len(arr)) < mn {
			return fmt.Errorf("%s: %d items < minItems", path, len(arr))
		}
		for i, it := range arr {
			if err := validate(schema["items"].(map[string]any), it, fmt.Sprint(path, "[", i, "]")); err != nil {
				return err
			}
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: not a string", path)
		}
		if mn, ok := schema["minLength"].(float64); ok && float64(len(s)) < mn {
			return fmt.Errorf("%s: shorter than minLength", path)
		}
		if mx, ok := schema["maxLength"].(float64); ok && float64(len(s)) > mx {
			return fmt.Errorf("%s: longer than maxLength", path)
		}
	case "integer", "number":
		n, ok := v.(float64)
		if !ok || strings.EqualFold(ty, "integer") && n != float64(int64(n)) {
			return fmt.Errorf("%s: %v is not a %s", path, v, ty)
		}
		if mn, ok := schema["minimum"].(float64); ok && n < mn {
			return fmt.Errorf("%s: %v < minimum", path, n)
		}
		if mx, ok := schema["maximum"].(float64); ok && n > mx {
			return fmt.Errorf("%s: %v > maximum", path, n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: not a boolean", path)
		}
	}
	return nil
}

func TestToolArgumentsFitTheSchema(t *testing.T) {
	cases := []struct {
		desc, schema string
		want         string // exact arguments, when set
	}{
		{desc: "flat required only", schema: weatherSchema, want: `{"city":"Paris","unit":"celsius"}`},
		{desc: "all types", schema: `{"type":"object","properties":{"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"a":{"type":"array","items":{"type":"integer"}},"o":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"boolean"}},"required":["y"]}},"required":["s","i","n","b","a","o"]}`,
			want: `{"s":"Paris","i":1,"n":1,"b":true,"a":[1],"o":{"y":true}}`},
		{desc: "nested required, three deep", schema: `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"string","enum":["x","y"]},"d":{"type":"integer"}},"required":["c"]}},"required":["b"]}},"required":["a"]}`,
			want: `{"a":{"b":{"c":"x"}}}`},
		{desc: "bounds", schema: `{"type":"object","properties":{"i":{"type":"integer","minimum":5,"maximum":9},"m":{"type":"integer","maximum":-3},"f":{"type":"number","minimum":2.5},"s":{"type":"string","minLength":8},"t":{"type":"string","maxLength":2},"l":{"type":"array","minItems":3,"items":{"type":"string","enum":["q"]}}},"required":["t","s","i","m","f","l"]}`},
		{desc: "gemini upper-case types", schema: `{"type":"OBJECT","properties":{"city":{"type":"STRING"},"count":{"type":"INTEGER"},"tags":{"type":"ARRAY","items":{"type":"STRING","enum":["a","b"]}},"ok":{"type":"BOOLEAN"}},"required":["city","count","tags","ok"]}`,
			want: `{"city":"Paris","count":1,"tags":["a"],"ok":true}`},
		{desc: "nullable type list and anyOf", schema: `{"type":"object","properties":{"a":{"type":["null","integer"]},"b":{"anyOf":[{"type":"null"},{"type":"boolean"}]}},"required":["a","b"]}`,
			want: `{"a":1,"b":true}`},
		{desc: "local refs", schema: `{"type":"object","$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},"properties":{"p":{"$ref":"#/$defs/pt"}},"required":["p"]}`,
			want: `{"p":{"x":1,"y":1}}`},
		{desc: "recursive ref stops", schema: `{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`},
		{desc: "no parameters", schema: `{"type":"object"}`, want: `{}`},
		{desc: "formats", schema: `{"type":"object","properties":{"w":{"type":"string"},"d":{"type":"string","format":"date-time"},"e":{"type":"string","format":"email"}},"required":["w","d","e"]}`,
			want: `{"w":"Paris","d":"2025-01-01T00:00:00Z","e":"sim@example.com"}`},
	}
	for _, p := range protocol.All {
		for _, tc := range cases {
			t.Run(string(p)+"/"+tc.desc, func(t *testing.T) {
				if p != protocol.GeminiNative && strings.Contains(tc.schema, `"OBJECT"`) {
					t.Skip("upper-case types are Gemini's")
				}
				a := decodeBody(t, p, mustChat(t, call(p, bodyFor(p, "Use the lookup tool for: Paris", "", [2]string{"lookup", tc.schema}))).Body)
				if a.tool != "lookup" {
					t.Fatalf("no call: %+v", a)
				}
				if tc.want != "" && !jsonEqual(a.args, tc.want) {
					t.Fatalf("args %s, want %s", a.args, tc.want)
				}
				if strings.Contains(tc.desc, "ref") {
					return // the validator does not follow refs
				}
				var schema map[string]any
				var v any
				if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(a.args), &v); err != nil {
					t.Fatalf("args not JSON: %s", a.args)
				}
				if err := validate(schema, v, "$"); err != nil {
					t.Fatalf("%v: %s", err, a.args)
				}
			})
		}
	}
}

func TestToolRule(t *testing.T) {
	tools := [][2]string{{"Read", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`},
		{"Bash", `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}},"required":["command"]}`}}
	cases := []struct {
		desc, prompt string
		tools        [][2]string
		tool, args   string
	}{
		{desc: "names a tool", prompt: "Use the Bash tool to run: echo tollgate-e2e", tools: tools, tool: "Bash", args: `{"command":"echo tollgate-e2e"}`},
		{desc: "the tool named first wins", prompt: "Bash, or Read if you must: x", tools: tools, tool: "Bash", args: `{"command":"x"}`},
		{desc: "use a tool picks the first", prompt: "Please USE A TOOL now", tools: tools, tool: "Read", args: `{"path":"sim"}`},
		{desc: "call a tool", prompt: "call a tool", tools: tools, tool: "Read"},
		{desc: "a name inside a word is no call", prompt: "Reading Bashful poems", tools: tools},
		{desc: "case matters for names", prompt: "read the bash manual", tools: tools},
		{desc: "markers do not give the argument", prompt: "Use Bash [sim:words=3]", tools: tools, tool: "Bash", args: `{"command":"sim"}`},
		{desc: "no tools offered", prompt: "use a tool: ls"},
		{desc: "plain prompt", prompt: "Reply with one short sentence about toll roads.", tools: tools},
	}
	for _, p := range protocol.All {
		for _, tc := range cases {
			t.Run(string(p)+"/"+tc.desc, func(t *testing.T) {
				a := decodeBody(t, p, mustChat(t, call(p, bodyFor(p, tc.prompt, "", tc.tools...))).Body)
				if a.tool != tc.tool || tc.tool == "" && a.text == "" {
					t.Fatalf("got %+v, want tool %q", a, tc.tool)
				}
				if tc.args != "" && !jsonEqual(a.args, tc.args) {
					t.Fatalf("args %s, want %s", a.args, tc.args)
				}
			})
		}
	}
}

// Tool results end the turn with text quoting them, in each protocol's form.
func TestToolResultAnswersWithText(t *testing.T) {
	bodies := map[protocol.ID]string{
		protocol.OpenAIChat: `{"model":"m","tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"Use Bash: echo hi"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"tollgate-e2e output"}]}`,
		protocol.AnthropicMessages: `{"model":"m","max_tokens":100,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Use Bash: echo hi"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"tollgate-e2e output"}]},{"type":"text","text":"<system-reminder>Bash is here</system-reminder>"}]}]}`,
		protocol.OpenAIResponses: `{"model":"m","tools":[{"type":"function","name":"Bash","parameters":{"type":"object"}}],"input":[{"role":"user","content":"Use Bash: echo hi"},
			{"type":"function_call","call_id":"call_1","name":"Bash","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"tollgate-e2e output"}]}`,
		protocol.GeminiNative: `{"tools":[{"functionDeclarations":[{"name":"Bash","parameters":{"type":"OBJECT"}}]}],"contents":[{"role":"user","parts":[{"text":"Use Bash: echo hi"}]},
			{"role":"model","parts":[{"functionCall":{"name":"Bash","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"Bash","response":{"output":"tollgate-e2e output"}}}]}]}`,
	}
	for _, p := range protocol.All {
		t.Run(string(p), func(t *testing.T) {
			a := decodeBody(t, p, mustChat(t, call(p, []byte(bodies[p]))).Body)
			if a.tool != "" || !strings.HasPrefix(a.text, "Tool result received:") || !strings.Contains(a.text, "tollgate-e2e") || a.finish != finishes[p][0] {
				t.Fatalf("%+v", a)
			}
		})
	}
}

// The conversation bytes counted for usage are the gateway's pre-charge rule.
func TestUsageRule(t *testing.T) {
	cases := []struct {
		p    protocol.ID
		body string
		in   int64
	}{
		{protocol.OpenAIChat, `{"model":"m","messages":[{"role":"user","content":"abcd"}],"tools":[{"type":"function","function":{"name":"x"}}]}`, (34 + 3) / 4},
		{protocol.AnthropicMessages, `{"model":"m","max_tokens":9,"system":"sys","messages":[{"role":"user","content":"abcd"}]}`, (5 + 34 + 3) / 4},
		{protocol.OpenAIResponses, `{"model":"m","instructions":"be","input":"abcdefgh"}`, (4 + 10 + 3) / 4},
		{protocol.GeminiNative, `{"contents":[{"parts":[{"text":"abcd"}]}],"system_instruction":{"parts":[{"text":"s"}]}}`, (29 + 24 + 3) / 4},
	}
	for _, tc := range cases {
		t.Run(string(tc.p), func(t *testing.T) {
			a := decodeBody(t, tc.p, mustChat(t, call(tc.p, []byte(tc.body))).Body)
			if a.usage.InputTokens != tc.in {
				t.Fatalf("input %d, want %d", a.usage.InputTokens, tc.in)
			}
			if r, err := codec.For(tc.p).Inspect([]byte(tc.body)); err != nil || r.InputEstimate() != tc.in {
				t.Fatalf("gateway pre-charge estimate %d (%v), sim %d", r.InputEstimate(), err, tc.in)
			}
		})
	}
}

func TestVendor(t *testing.T) {
	ctx := context.Background()
	v := New(nil)
	d, err := v.Describe(ctx)
	if err != nil || d.Name != "sim" || len(d.Protocols) != 4 || !slices.Equal(d.Families, []string{"chat", "image", "video", "music", "speech", "voice", "transcript", "search",
		"avatar", "lipsync", "motion", "clip", "subtitle"}) {
		t.Fatalf("%+v %v", d, err)
	}
	for _, tc := range []struct {
		desc     string
		settings map[string]string
		protos   []string
	}{
		{desc: "unknown setting", settings: map[string]string{"colour": "red"}},
		{desc: "bad fault", settings: map[string]string{"fault": "error=99"}},
		{desc: "unknown knob", settings: map[string]string{"fault": "explode"}},
		{desc: "bad latency", settings: map[string]string{"latency": "soon"}},
		{desc: "unknown protocol", protos: []string{"soap"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := v.Configure(ctx, vendor.Config{Channels: []vendor.Channel{{Name: "c", Settings: tc.settings, Protocols: tc.protos}}})
			if err == nil {
				t.Fatal("configured")
			}
		})
	}
	err = v.Configure(ctx, vendor.Config{Channels: []vendor.Channel{
		{Name: "ok"},
		{Name: "broken", Settings: map[string]string{"fault": "error=503"}},
		{Name: "slow", Settings: map[string]string{"fault": "chunks=2", "slow": "1ms", "latency": "1ms"}},
		{Name: "chat-only", Protocols: []string{"openai_chat"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(ch string, p protocol.ID) *vendor.ChatRequest {
		return &vendor.ChatRequest{Channel: ch, Protocol: string(p), Model: "m", Body: bodyFor(p, "hi", "")}
	}
	if resp, err := v.Chat(ctx, req("ok", protocol.OpenAIChat)); err != nil || resp.Status != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if resp, err := v.Chat(ctx, req("broken", protocol.OpenAIChat)); err != nil || resp.Status != 503 || resp.Headers["retry-after"] == "" {
		t.Fatalf("%v %v", resp, err)
	}
	sink := &recSink{}
	if err := v.ChatStream(ctx, req("slow", protocol.GeminiNative), sink); err != nil || len(sink.events) != 2 {
		t.Fatalf("%v, %d events", err, len(sink.events))
	}
	for _, r := range []*vendor.ChatRequest{req("nope", protocol.OpenAIChat), req("chat-only", protocol.AnthropicMessages)} {
		if _, err := v.Chat(ctx, r); failureKind(err) != vendor.FailureConfig {
			t.Fatalf("%s: %v", r.Channel, err)
		}
		if err := v.ChatStream(ctx, r, &recSink{}); failureKind(err) != vendor.FailureConfig {
			t.Fatalf("%s stream: %v", r.Channel, err)
		}
	}
}

func TestToolTurnAfterTrailingSystemMessage(t *testing.T) {
	body := `{"model":"m","max_tokens":100,"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}],` +
		`"messages":[{"role":"user","content":"Use the Bash tool to run: echo hi"},{"role":"system","content":[{"type":"text","text":"# Environment"}]}]}`
	c := readConv(protocol.AnthropicMessages, body, &Knobs{})
	if !c.lastIsUser || !strings.Contains(c.userText, "Bash") {
		t.Fatalf("the user's turn was not found behind the system note: %+v", c)
	}
}
