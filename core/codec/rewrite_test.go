package codec

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestRewrite(t *testing.T) {
	cases := []struct {
		desc string
		p    protocol.ID
		body string
		opts RewriteOptions
		want string
	}{
		{"chat model replaced, spacing kept", protocol.OpenAIChat,
			"{ \"model\" : \"gpt-4o\" ,\n \"messages\":[],\"x\":{\"model\":\"inner\"} }",
			RewriteOptions{Model: "gpt-4o-2024-08-06"},
			"{ \"model\" : \"gpt-4o-2024-08-06\" ,\n \"messages\":[],\"x\":{\"model\":\"inner\"} }"},
		{"chat max_tokens added after the last member", protocol.OpenAIChat,
			"{\"model\":\"a\",\"messages\":[]\n}",
			RewriteOptions{Model: "b", MaxTokens: 100},
			"{\"model\":\"b\",\"messages\":[],\"max_tokens\":100\n}"},
		{"chat max_completion_tokens field chosen", protocol.OpenAIChat,
			`{"model":"a","messages":[]}`,
			RewriteOptions{MaxTokens: 7, ChatMaxTokensField: "max_completion_tokens"},
			`{"model":"a","messages":[],"max_completion_tokens":7}`},
		{"chat existing max_completion_tokens replaced, none added", protocol.OpenAIChat,
			`{"model":"a","max_completion_tokens":10,"messages":[]}`,
			RewriteOptions{MaxTokens: 4096},
			`{"model":"a","max_completion_tokens":4096,"messages":[]}`},
		{"chat both max fields replaced", protocol.OpenAIChat,
			`{"max_tokens":1,"model":"a","max_completion_tokens":2}`,
			RewriteOptions{MaxTokens: 3},
			`{"max_tokens":3,"model":"a","max_completion_tokens":3}`},
		{"chat null max_tokens replaced", protocol.OpenAIChat,
			`{"model":"a","max_tokens":null}`,
			RewriteOptions{MaxTokens: 3},
			`{"model":"a","max_tokens":3}`},
		{"chat model escaped", protocol.OpenAIChat,
			`{"model":"a"}`,
			RewriteOptions{Model: "we\"ird\\id\n"},
			`{"model":"we\"ird\\id\n"}`},
		{"chat empty object gets two members", protocol.OpenAIChat,
			`{}`,
			RewriteOptions{Model: "x", MaxTokens: 5},
			`{"model":"x","max_tokens":5}`},
		{"chat duplicate model keys all replaced", protocol.OpenAIChat,
			`{"model":"a","mod\u0065l":"b"}`,
			RewriteOptions{Model: "c"},
			`{"model":"c","mod\u0065l":"c"}`},
		{"chat stream usage added", protocol.OpenAIChat,
			`{"model":"a","stream":true}`,
			RewriteOptions{StreamUsage: true},
			`{"model":"a","stream":true,"stream_options":{"include_usage":true}}`},
		{"chat stream usage flipped to true", protocol.OpenAIChat,
			`{"stream_options":{"include_usage":false,"x":1},"stream":true}`,
			RewriteOptions{StreamUsage: true},
			`{"stream_options":{"include_usage":true,"x":1},"stream":true}`},
		{"chat stream usage into empty options", protocol.OpenAIChat,
			`{"stream":true,"stream_options":{ }}`,
			RewriteOptions{StreamUsage: true},
			`{"stream":true,"stream_options":{"include_usage":true }}`},
		{"chat stream usage appended to options", protocol.OpenAIChat,
			`{"stream":true,"stream_options":{"continuous_usage_stats":true}}`,
			RewriteOptions{StreamUsage: true},
			`{"stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":true}}`},
		{"chat stream usage replaces null options", protocol.OpenAIChat,
			`{"stream":true,"stream_options":null}`,
			RewriteOptions{StreamUsage: true},
			`{"stream":true,"stream_options":{"include_usage":true}}`},
		{"chat stream usage ignored without stream", protocol.OpenAIChat,
			`{"model":"a","stream":false}`,
			RewriteOptions{StreamUsage: true},
			`{"model":"a","stream":false}`},
		{"chat all three at once", protocol.OpenAIChat,
			`{"messages":[],"stream":true}`,
			RewriteOptions{Model: "m", MaxTokens: 9, StreamUsage: true},
			`{"messages":[],"stream":true,"model":"m","max_tokens":9,"stream_options":{"include_usage":true}}`},
		{"messages model and max_tokens replaced", protocol.AnthropicMessages,
			`{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}`,
			RewriteOptions{Model: "claude-sonnet-4-5-20250929", MaxTokens: 64000},
			`{"model":"claude-sonnet-4-5-20250929","max_tokens":64000,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}`},
		{"messages stream usage has no effect", protocol.AnthropicMessages,
			`{"model":"a","stream":true}`,
			RewriteOptions{StreamUsage: true},
			`{"model":"a","stream":true}`},
		{"responses max_output_tokens added", protocol.OpenAIResponses,
			`{"model":"gpt-5","input":"hi","store":false}`,
			RewriteOptions{Model: "gpt-5-2025-08-07", MaxTokens: 128000},
			`{"model":"gpt-5-2025-08-07","input":"hi","store":false,"max_output_tokens":128000}`},
		{"gemini config added, model ignored", protocol.GeminiNative,
			`{"contents":[{"parts":[{"text":"hi"}]}]}`,
			RewriteOptions{Model: "ignored", MaxTokens: 8192},
			`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":8192}}`},
		{"gemini maxOutputTokens replaced", protocol.GeminiNative,
			`{"contents":[],"generationConfig":{"temperature":0.5,"maxOutputTokens":100}}`,
			RewriteOptions{MaxTokens: 200},
			`{"contents":[],"generationConfig":{"temperature":0.5,"maxOutputTokens":200}}`},
		{"gemini maxOutputTokens inserted into config", protocol.GeminiNative,
			`{"generationConfig":{"temperature":0.5},"contents":[]}`,
			RewriteOptions{MaxTokens: 200},
			`{"generationConfig":{"temperature":0.5,"maxOutputTokens":200},"contents":[]}`},
		{"gemini snake_case config keeps its style", protocol.GeminiNative,
			`{"generation_config":{"top_k":3},"contents":[]}`,
			RewriteOptions{MaxTokens: 200},
			`{"generation_config":{"top_k":3,"max_output_tokens":200},"contents":[]}`},
		{"gemini snake_case field in camel config replaced", protocol.GeminiNative,
			`{"generationConfig":{"max_output_tokens":1},"contents":[]}`,
			RewriteOptions{MaxTokens: 200},
			`{"generationConfig":{"max_output_tokens":200},"contents":[]}`},
		{"gemini null config replaced", protocol.GeminiNative,
			`{"generationConfig":null,"contents":[]}`,
			RewriteOptions{MaxTokens: 5},
			`{"generationConfig":{"maxOutputTokens":5},"contents":[]}`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := For(tc.p).Rewrite([]byte(tc.body), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("Rewrite:\n got %s\nwant %s", got, tc.want)
			}
			if !gjson.ValidBytes(got) {
				t.Fatalf("Rewrite produced invalid JSON: %s", got)
			}
		})
	}
}

func TestRewriteNoChangeReturnsBody(t *testing.T) {
	for _, p := range protocol.All {
		t.Run(string(p), func(t *testing.T) {
			body := []byte(`{"model":"a","stream":false}`)
			got, err := For(p).Rewrite(body, RewriteOptions{StreamUsage: true})
			if err != nil {
				t.Fatal(err)
			}
			if &got[0] != &body[0] || len(got) != len(body) {
				t.Fatalf("Rewrite with nothing to do copied the body: %s", got)
			}
		})
	}
}

func TestRewriteRefusesNonObjects(t *testing.T) {
	for _, p := range protocol.All {
		for _, body := range []string{``, `[]`, `"x"`, `{"model":`, `{"model" "x"}`} {
			t.Run(string(p)+" "+body, func(t *testing.T) {
				_, err := For(p).Rewrite([]byte(body), RewriteOptions{Model: "m", MaxTokens: 3})
				if err == nil {
					t.Fatalf("Rewrite accepted %q", body)
				}
			})
		}
	}
}

// set is one change the oracle applies: a gjson path and its new raw value.
type set struct{ path, raw string }

// oracle builds the expected rewrite with gjson's offsets: an existing
// value is spliced in place; a missing top-level member is appended after
// the last member. Every other byte is the original's.
func oracle(t *testing.T, orig []byte, sets []set) []byte {
	t.Helper()
	type splice struct {
		at, end int
		text    string
	}
	var sp []splice
	for _, s := range sets {
		r := gjson.GetBytes(orig, s.path)
		if r.Exists() {
			if r.Index <= 0 {
				t.Fatalf("no offset for %s", s.path)
			}
			sp = append(sp, splice{r.Index, r.Index + len(r.Raw), s.raw})
			continue
		}
		if strings.Contains(s.path, ".") {
			t.Fatalf("oracle appends top-level members only, not %s", s.path)
		}
		last := 0
		gjson.ParseBytes(orig).ForEach(func(_, v gjson.Result) bool {
			last = v.Index + len(v.Raw)
			return true
		})
		sp = append(sp, splice{last, last, `,"` + s.path + `":` + s.raw})
	}
	sort.SliceStable(sp, func(i, j int) bool { return sp[i].at < sp[j].at })
	var out []byte
	prev := 0
	for _, s := range sp {
		out = append(out, orig[prev:s.at]...)
		out = append(out, s.text...)
		prev = s.end
	}
	return append(out, orig[prev:]...)
}

// TestRewriteFixturesKeepEveryOtherByte rewrites agent-style bodies and
// checks the result byte for byte against the gjson oracle: thinking
// signatures, cache_control, reasoning items and unknown fields survive.
func TestRewriteFixturesKeepEveryOtherByte(t *testing.T) {
	cases := []struct {
		desc    string
		p       protocol.ID
		fixture string
		opts    RewriteOptions
		sets    []set
	}{
		{"completions", protocol.OpenAIChat, "requests/chat_tools_vision.json",
			RewriteOptions{Model: "gpt-4o-mini-2024-07-18", MaxTokens: 4242, StreamUsage: true},
			[]set{{"model", `"gpt-4o-mini-2024-07-18"`}, {"max_completion_tokens", "4242"}, {"stream_options.include_usage", "true"}}},
		{"claude code messages", protocol.AnthropicMessages, "requests/messages_claude_code.json",
			RewriteOptions{Model: "claude-sonnet-4-5-20250929", MaxTokens: 64000},
			[]set{{"model", `"claude-sonnet-4-5-20250929"`}, {"max_tokens", "64000"}}},
		{"codex responses", protocol.OpenAIResponses, "requests/responses_codex.json",
			RewriteOptions{Model: "gpt-5-codex-2025-09-15", MaxTokens: 128000},
			[]set{{"model", `"gpt-5-codex-2025-09-15"`}, {"max_output_tokens", "128000"}}},
		{"gemini", protocol.GeminiNative, "requests/gemini_multimodal.json",
			RewriteOptions{Model: "ignored", MaxTokens: 65536},
			[]set{{"generationConfig.maxOutputTokens", "65536"}}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			orig := readFixture(t, tc.fixture)
			keep := bytes.Clone(orig)
			c := For(tc.p)
			got, err := c.Rewrite(orig, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(orig, keep) {
				t.Fatal("Rewrite modified its input")
			}
			if want := oracle(t, orig, tc.sets); !bytes.Equal(got, want) {
				t.Fatalf("Rewrite:\n got %s\nwant %s", got, want)
			}
			req, err := c.Inspect(got)
			if err != nil {
				t.Fatalf("rewritten body fails Inspect: %v", err)
			}
			if req.MaxTokens != tc.opts.MaxTokens {
				t.Fatalf("rewritten MaxTokens = %d, want %d", req.MaxTokens, tc.opts.MaxTokens)
			}
			if tc.p != protocol.GeminiNative && req.Model != tc.opts.Model {
				t.Fatalf("rewritten Model = %q, want %q", req.Model, tc.opts.Model)
			}
		})
	}
}
