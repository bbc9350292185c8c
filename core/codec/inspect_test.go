package codec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawLens sums the raw lengths of the named top-level values, as gjson
// sees them: an independent oracle for InputBytes.
func rawLens(body []byte, paths ...string) int64 {
	var n int64
	for _, p := range paths {
		n += int64(len(gjson.GetBytes(body, p).Raw))
	}
	return n
}

type validationCase struct {
	desc    string
	body    string
	wantErr string // substring of the message; "" means valid
}

func runValidation(t *testing.T, p protocol.ID, cases []validationCase) {
	t.Helper()
	c := For(p)
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := c.Inspect([]byte(tc.body))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Inspect: unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Inspect accepted %s; want error containing %q", tc.body, tc.wantErr)
			}
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Code != apierr.InvalidRequest || ae.Status != 400 {
				t.Fatalf("error %#v is not a 400 invalid_request *apierr.Error", err)
			}
			if !strings.Contains(ae.Message, tc.wantErr) {
				t.Fatalf("message %q does not contain %q", ae.Message, tc.wantErr)
			}
		})
	}
}

// commonCases apply to every protocol.
var commonCases = []validationCase{
	{"empty body", ``, "empty"},
	{"blank body", " \n ", "empty"},
	{"malformed JSON", `{"model":`, "not valid JSON"},
	{"trailing garbage", `{"a":1} x`, "not valid JSON"},
	{"array body", `[1,2]`, "must be a JSON object"},
	{"string body", `"hi"`, "must be a JSON object"},
}

func TestInspectChatValidation(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	runValidation(t, protocol.OpenAIChat, append(commonCases[:len(commonCases):len(commonCases)], []validationCase{
		{"minimal valid", `{"model":"m",` + msgs + `}`, ""},
		{"model missing", `{` + msgs + `}`, `"model" is required`},
		{"model empty", `{"model":"",` + msgs + `}`, `"model" must not be empty`},
		{"model number", `{"model":4,` + msgs + `}`, `"model" must be a string`},
		{"model null", `{"model":null,` + msgs + `}`, `"model" must be a string`},
		{"model duplicated", `{"model":"a","model":"b",` + msgs + `}`, `"model" appears more than once`},
		{"model duplicated by escape", `{"model":"a","mod\u0065l":"b",` + msgs + `}`, `"model" appears more than once`},
		{"messages missing", `{"model":"m"}`, `"messages" is required`},
		{"messages empty", `{"model":"m","messages":[]}`, `"messages" must be a non-empty array`},
		{"messages object", `{"model":"m","messages":{}}`, `"messages" must be a non-empty array`},
		{"message not object", `{"model":"m","messages":["hi"]}`, `messages[0] must be an object`},
		{"role missing", `{"model":"m","messages":[{"role":"user","content":"a"},{"content":"b"}]}`, `"messages[1].role" is required`},
		{"role unknown", `{"model":"m","messages":[{"role":"bot","content":"a"}]}`, `"messages[0].role" must be one of system, developer, user, assistant, tool (got "bot")`},
		{"role developer", `{"model":"m","messages":[{"role":"developer","content":"a"},{"role":"user","content":"b"}]}`, ""},
		{"roles all", `{"model":"m","messages":[{"role":"system","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"x","content":"c"}]}`, ""},
		{"temperature too high", `{"model":"m",` + msgs + `,"temperature":2.5}`, `"temperature" must be a number from 0 to 2`},
		{"temperature negative", `{"model":"m",` + msgs + `,"temperature":-0.1}`, `"temperature"`},
		{"temperature string", `{"model":"m",` + msgs + `,"temperature":"1"}`, `"temperature"`},
		{"temperature 2 ok", `{"model":"m",` + msgs + `,"temperature":2}`, ""},
		{"temperature null ok", `{"model":"m",` + msgs + `,"temperature":null}`, ""},
		{"top_p above 1", `{"model":"m",` + msgs + `,"top_p":1.5}`, `"top_p" must be a number from 0 to 1`},
		{"max_tokens zero", `{"model":"m",` + msgs + `,"max_tokens":0}`, `"max_tokens" must be a positive integer`},
		{"max_tokens negative", `{"model":"m",` + msgs + `,"max_tokens":-5}`, `"max_tokens" must be a positive integer`},
		{"max_tokens fraction", `{"model":"m",` + msgs + `,"max_tokens":10.5}`, `"max_tokens" must be a positive integer`},
		{"max_tokens string", `{"model":"m",` + msgs + `,"max_tokens":"10"}`, `"max_tokens" must be a positive integer`},
		{"max_tokens overflow", `{"model":"m",` + msgs + `,"max_tokens":99999999999999999999}`, `"max_tokens" must be a positive integer`},
		{"max_completion_tokens zero", `{"model":"m",` + msgs + `,"max_completion_tokens":0}`, `"max_completion_tokens" must be a positive integer`},
		{"n zero", `{"model":"m",` + msgs + `,"n":0}`, `"n" must be an integer from 1 to 128`},
		{"n too many", `{"model":"m",` + msgs + `,"n":129}`, `"n" must be an integer from 1 to 128`},
		{"n 128 ok", `{"model":"m",` + msgs + `,"n":128}`, ""},
		{"stream not bool", `{"model":"m",` + msgs + `,"stream":"yes"}`, `"stream" must be true or false`},
		{"tools not array", `{"model":"m",` + msgs + `,"tools":{}}`, `"tools" must be an array`},
		{"tool not object", `{"model":"m",` + msgs + `,"tools":[1]}`, `tools[0] must be an object`},
		{"tool without type", `{"model":"m",` + msgs + `,"tools":[{"function":{"name":"f"}}]}`, `"tools[0].type" is required`},
		{"tool_choice bad string", `{"model":"m",` + msgs + `,"tool_choice":"always"}`, `"tool_choice" must be "none", "auto", "required" or an object`},
		{"tool_choice number", `{"model":"m",` + msgs + `,"tool_choice":1}`, `"tool_choice"`},
		{"tool_choice required ok", `{"model":"m",` + msgs + `,"tool_choice":"required"}`, ""},
		{"tool_choice object ok", `{"model":"m",` + msgs + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`, ""},
		{"stream_options without stream", `{"model":"m",` + msgs + `,"stream_options":{"include_usage":true}}`, `"stream_options" is only allowed when "stream" is true`},
		{"stream_options with stream false", `{"model":"m",` + msgs + `,"stream":false,"stream_options":{"include_usage":true}}`, `only allowed when "stream" is true`},
		{"stream_options before stream ok", `{"model":"m",` + msgs + `,"stream_options":{"include_usage":true},"stream":true}`, ""},
		{"stream_options null ok", `{"model":"m",` + msgs + `,"stream_options":null}`, ""},
		{"stream_options not object", `{"model":"m",` + msgs + `,"stream":true,"stream_options":true}`, `"stream_options" must be an object`},
		{"include_usage not bool", `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"include_usage":1}}`, `"stream_options.include_usage" must be true or false`},
		{"unknown fields pass", `{"model":"m",` + msgs + `,"x":{"y":[1,{"z":"\"}"}]},"seed":7}`, ""},
	}...))
}

func TestInspectMessagesValidation(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	const base = `"model":"m","max_tokens":64,`
	runValidation(t, protocol.AnthropicMessages, append(commonCases[:len(commonCases):len(commonCases)], []validationCase{
		{"minimal valid", `{` + base + msgs + `}`, ""},
		{"model missing", `{"max_tokens":64,` + msgs + `}`, `"model" is required`},
		{"model empty", `{"model":"","max_tokens":64,` + msgs + `}`, `"model" must not be empty`},
		{"max_tokens missing", `{"model":"m",` + msgs + `}`, `"max_tokens" is required`},
		{"max_tokens null", `{"model":"m","max_tokens":null,` + msgs + `}`, `"max_tokens" is required`},
		{"max_tokens zero", `{"model":"m","max_tokens":0,` + msgs + `}`, `"max_tokens" must be a positive integer`},
		{"max_tokens fraction", `{"model":"m","max_tokens":1.5,` + msgs + `}`, `"max_tokens" must be a positive integer`},
		{"max_tokens duplicated", `{"model":"m","max_tokens":1,"max_tokens":100000,` + msgs + `}`, `"max_tokens" appears more than once`},
		{"messages missing", `{` + base[:len(base)-1] + `}`, `"messages" is required`},
		{"messages empty", `{` + base + `"messages":[]}`, `"messages" must be a non-empty array`},
		{"messages string", `{` + base + `"messages":"hi"}`, `"messages" must be a non-empty array`},
		{"role tool refused", `{` + base + `"messages":[{"role":"tool","content":"x"}]}`, `"messages[0].role" must be "user", "assistant" or "system"`},
		{"role missing", `{` + base + `"messages":[{"content":"x"}]}`, `"messages[0].role" is required`},
		{"content missing", `{` + base + `"messages":[{"role":"user"}]}`, `"messages[0].content" must be a string or an array`},
		{"content number", `{` + base + `"messages":[{"role":"user","content":5}]}`, `"messages[0].content"`},
		{"system string ok", `{` + base + msgs + `,"system":"be brief"}`, ""},
		{"system blocks ok", `{` + base + msgs + `,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}`, ""},
		{"system number", `{` + base + msgs + `,"system":3}`, `"system" must be a string or an array of text blocks`},
		{"system image block", `{` + base + msgs + `,"system":[{"type":"image","source":{}}]}`, `system[0] must be a text block`},
		{"system block without text", `{` + base + msgs + `,"system":[{"type":"text"}]}`, `system[0] must be a text block`},
		{"temperature above 1", `{` + base + msgs + `,"temperature":1.5}`, `"temperature" must be a number from 0 to 1`},
		{"stream not bool", `{` + base + msgs + `,"stream":1}`, `"stream" must be true or false`},
		{"tool_choice auto", `{` + base + msgs + `,"tool_choice":{"type":"auto"}}`, ""},
		{"tool_choice any", `{` + base + msgs + `,"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`, ""},
		{"tool_choice none", `{` + base + msgs + `,"tool_choice":{"type":"none"}}`, ""},
		{"tool_choice tool with name", `{` + base + msgs + `,"tool_choice":{"type":"tool","name":"Bash"}}`, ""},
		{"tool_choice tool without name", `{` + base + msgs + `,"tool_choice":{"type":"tool"}}`, `"tool_choice.name" is required`},
		{"tool_choice bad type", `{` + base + msgs + `,"tool_choice":{"type":"required"}}`, `"tool_choice.type" must be one of auto, any, tool, none`},
		{"tool_choice string", `{` + base + msgs + `,"tool_choice":"auto"}`, `"tool_choice" must be an object`},
		{"tools not array", `{` + base + msgs + `,"tools":{}}`, `"tools" must be an array`},
		{"tool without name", `{` + base + msgs + `,"tools":[{"input_schema":{"type":"object"}}]}`, `"tools[0].name" is required`},
		{"tool without schema", `{` + base + msgs + `,"tools":[{"name":"f"}]}`, `"tools[0].input_schema" is required`},
		{"custom tool without schema", `{` + base + msgs + `,"tools":[{"type":"custom","name":"f"}]}`, `"tools[0].input_schema" is required`},
		{"server tool without schema", `{` + base + msgs + `,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}]}`, ""},
		{"tool with schema", `{` + base + msgs + `,"tools":[{"name":"f","input_schema":{"type":"object"}}]}`, ""},
	}...))
}

func TestInspectResponsesValidation(t *testing.T) {
	runValidation(t, protocol.OpenAIResponses, append(commonCases[:len(commonCases):len(commonCases)], []validationCase{
		{"string input", `{"model":"m","input":"hi"}`, ""},
		{"array input", `{"model":"m","input":[{"role":"user","content":"hi"}]}`, ""},
		{"model missing", `{"input":"hi"}`, `"model" is required`},
		{"model empty", `{"model":"","input":"hi"}`, `"model" must not be empty`},
		{"input missing", `{"model":"m"}`, `"input" is required`},
		{"input number", `{"model":"m","input":3}`, `"input" must be a string or an array`},
		{"input item not object", `{"model":"m","input":["hi"]}`, `input[0] must be an object`},
		{"input role unknown", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, `"input[0].role" must be one of user, assistant, system, developer`},
		{"instructions number", `{"model":"m","input":"hi","instructions":1}`, `"instructions" must be a string`},
		{"previous_response_id number", `{"model":"m","input":"hi","previous_response_id":7}`, `"previous_response_id" must be a string`},
		{"max_output_tokens zero", `{"model":"m","input":"hi","max_output_tokens":0}`, `"max_output_tokens" must be a positive integer`},
		{"max_output_tokens string", `{"model":"m","input":"hi","max_output_tokens":"9"}`, `"max_output_tokens" must be a positive integer`},
		{"reasoning not object", `{"model":"m","input":"hi","reasoning":"high"}`, `"reasoning" must be an object`},
		{"reasoning effort unknown", `{"model":"m","input":"hi","reasoning":{"effort":"max"}}`, `"reasoning.effort" must be one of none, minimal, low, medium, high, xhigh`},
		{"reasoning effort xhigh", `{"model":"m","input":"hi","reasoning":{"effort":"xhigh"}}`, ""},
		{"reasoning effort minimal", `{"model":"m","input":"hi","reasoning":{"effort":"minimal","summary":"auto"}}`, ""},
		{"reasoning effort null", `{"model":"m","input":"hi","reasoning":{"effort":null}}`, ""},
		{"temperature above 2", `{"model":"m","input":"hi","temperature":3}`, `"temperature" must be a number from 0 to 2`},
		{"top_p above 1", `{"model":"m","input":"hi","top_p":1.01}`, `"top_p" must be a number from 0 to 1`},
		{"top_p 1 ok", `{"model":"m","input":"hi","top_p":1}`, ""},
		{"stream not bool", `{"model":"m","input":"hi","stream":"true"}`, `"stream" must be true or false`},
		{"tools not array", `{"model":"m","input":"hi","tools":"web_search"}`, `"tools" must be an array`},
		{"tool without type", `{"model":"m","input":"hi","tools":[{"name":"f"}]}`, `"tools[0].type" is required`},
		{"input duplicated", `{"model":"m","input":"a","input":"b"}`, `"input" appears more than once`},
	}...))
}

func TestInspectGeminiValidation(t *testing.T) {
	const contents = `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	runValidation(t, protocol.GeminiNative, append(commonCases[:len(commonCases):len(commonCases)], []validationCase{
		{"minimal valid", `{` + contents + `}`, ""},
		{"role omitted", `{"contents":[{"parts":[{"text":"hi"}]}]}`, ""},
		{"role model", `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]}]}`, ""},
		{"contents missing", `{"generationConfig":{}}`, `"contents" is required`},
		{"contents empty", `{"contents":[]}`, `"contents" must be a non-empty array`},
		{"contents object", `{"contents":{"parts":[]}}`, `"contents" must be a non-empty array`},
		{"content not object", `{"contents":["hi"]}`, `contents[0] must be an object`},
		{"role unknown", `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`, `"contents[0].role" must be "user" or "model"`},
		{"parts missing", `{"contents":[{"role":"user"}]}`, `"contents[0].parts" must be a non-empty array`},
		{"parts empty", `{"contents":[{"role":"user","parts":[ ]}]}`, `"contents[0].parts" must be a non-empty array`},
		{"part not object", `{"contents":[{"role":"user","parts":["hi"]}]}`, `contents[0].parts[0] must be an object`},
		{"maxOutputTokens zero", `{` + contents + `,"generationConfig":{"maxOutputTokens":0}}`, `"generationConfig.maxOutputTokens" must be a positive integer`},
		{"max_output_tokens negative", `{` + contents + `,"generation_config":{"max_output_tokens":-1}}`, `"generation_config.max_output_tokens" must be a positive integer`},
		{"generationConfig not object", `{` + contents + `,"generationConfig":[]}`, `"generationConfig" must be an object`},
		{"temperature above 2", `{` + contents + `,"generationConfig":{"temperature":2.1}}`, `"generationConfig.temperature"`},
		{"systemInstruction ok", `{` + contents + `,"systemInstruction":{"parts":[{"text":"be brief"}]}}`, ""},
		{"system_instruction ok", `{` + contents + `,"system_instruction":{"parts":[{"text":"be brief"}]}}`, ""},
		{"systemInstruction string", `{` + contents + `,"systemInstruction":"be brief"}`, `"systemInstruction" must be a Content object`},
		{"both config spellings", `{` + contents + `,"generationConfig":{},"generation_config":{}}`, `"generationConfig" appears more than once`},
	}...))
}

func TestInspectFixtures(t *testing.T) {
	chatBody := readFixture(t, "requests/chat_tools_vision.json")
	msgBody := readFixture(t, "requests/messages_claude_code.json")
	respBody := readFixture(t, "requests/responses_codex.json")
	gemBody := readFixture(t, "requests/gemini_multimodal.json")
	cases := []struct {
		desc string
		p    protocol.ID
		body []byte
		want Request
	}{
		{"completions with tools, image and include_usage", protocol.OpenAIChat, chatBody, Request{
			Model: "gpt-4o-mini", Stream: true, MaxTokens: 512, IncludeUsage: true,
			InputBytes: rawLens(chatBody, "messages"), BuiltinTools: []string{"web_search"}, HasImages: true,
		}},
		{"claude code messages with thinking, cache_control and a screenshot", protocol.AnthropicMessages, msgBody, Request{
			Model: "claude-sonnet-4-5", Stream: true, MaxTokens: 32000,
			InputBytes: rawLens(msgBody, "messages", "system"), HasImages: true,
		}},
		{"codex responses with reasoning items and built-in tools", protocol.OpenAIResponses, respBody, Request{
			Model: "gpt-5-codex", Stream: true,
			InputBytes:   rawLens(respBody, "input", "instructions"),
			BuiltinTools: []string{"custom", "web_search", "namespace"}, HasImages: true,
		}},
		{"gemini snake_case system_instruction and inline image", protocol.GeminiNative, gemBody, Request{
			MaxTokens: 1024, InputBytes: rawLens(gemBody, "contents", "system_instruction"), HasImages: true,
		}},
		{"responses string input and previous_response_id", protocol.OpenAIResponses,
			[]byte(`{"model":"gpt-5","input":"Say hi","instructions":null,"previous_response_id":"resp_1","max_output_tokens":77}`),
			Request{Model: "gpt-5", MaxTokens: 77, InputBytes: int64(len(`"Say hi"`)), PreviousResponseID: true}},
		{"responses null previous_response_id", protocol.OpenAIResponses,
			[]byte(`{"model":"gpt-5","input":"x","previous_response_id":null}`),
			Request{Model: "gpt-5", InputBytes: 3}},
		{"completions max_tokens only, no usage option", protocol.OpenAIChat,
			[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9,"stream":true}`),
			Request{Model: "m", Stream: true, MaxTokens: 9, InputBytes: int64(len(`[{"role":"user","content":"hi"}]`))}},
		{"completions escaped model", protocol.OpenAIChat,
			[]byte(`{"model":"gpt\u002d4o","messages":[{"role":"user","content":"hi"}]}`),
			Request{Model: "gpt-4o", InputBytes: int64(len(`[{"role":"user","content":"hi"}]`))}},
		{"completions image_generation tool", protocol.OpenAIChat,
			[]byte(`{"model":"m","messages":[{"role":"user","content":"draw"}],"tools":[{"type":"image_generation"},{"type":"function","function":{"name":"f"}},{"type":"web_search"}]}`),
			Request{Model: "m", InputBytes: int64(len(`[{"role":"user","content":"draw"}]`)), BuiltinTools: []string{"image_generation", "web_search"}}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := For(tc.p).Inspect(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Inspect:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestInputEstimate(t *testing.T) {
	cases := []struct {
		bytes, want int64
	}{{0, 0}, {1, 1}, {4, 1}, {5, 2}, {8, 2}, {4001, 1001}, {-3, 0}}
	for _, tc := range cases {
		t.Run(strconv.FormatInt(tc.bytes, 10), func(t *testing.T) {
			if got := (Request{InputBytes: tc.bytes}).InputEstimate(); got != tc.want {
				t.Fatalf("InputEstimate(%d) = %d, want %d", tc.bytes, got, tc.want)
			}
		})
	}
}

func TestFor(t *testing.T) {
	for _, p := range protocol.All {
		t.Run(string(p), func(t *testing.T) {
			c := For(p)
			if c == nil || c.Protocol() != p {
				t.Fatalf("For(%s) = %v", p, c)
			}
		})
	}
	if For("nope") != nil {
		t.Fatal("For of an unknown id must be nil")
	}
}
