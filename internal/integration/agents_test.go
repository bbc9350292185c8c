package integration

// Issue 6, points 2 to 7: what Claude Code, Codex and the official SDKs
// send and need, against the real binary and the real vendor plugins over
// the in-repo vendor simulators (agentsConfig), or the embedded default.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"google.golang.org/genai"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// claudeCodeBody is a messages request shaped as Claude Code sends it
// (docs/agents.md): system blocks with cache_control, a system message
// inside messages, a thinking block with its signature, a tool round trip,
// cache_control on the last turn, metadata.user_id as a JSON string,
// thinking, context_management, output_config, and a field no version of
// the protocol has. The last user turn asks for the Bash tool.
const claudeCodeBody = `{
  "model": "MODEL",
  "max_tokens": 32000,
  "system": [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Work in /tmp/project."}
  ],
  "messages": [
    {"role": "user", "content": [
      {"type": "text", "text": "<system-reminder>The date is 2026-01-01.</system-reminder>"},
      {"type": "text", "text": "List the files. NONCE"}
    ]},
    {"role": "system", "content": [{"type": "text", "text": "Environment: linux, cwd /tmp/project"}]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I should run ls.", "signature": "EqQBCkYIBxgCKkBsignature=="},
      {"type": "text", "text": "Running ls."},
      {"type": "tool_use", "id": "toolu_01ABCDEF", "name": "Bash", "input": {"command": "ls", "description": "List files"}}
    ]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_01ABCDEF", "content": "a.txt\nb.txt", "is_error": true}
    ]},
    {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
    {"role": "user", "content": [
      {"type": "text", "text": "[sim:cached=7,reasoning=3] Use the Bash tool to run: echo done", "cache_control": {"type": "ephemeral"}}
    ]}
  ],
  "tools": [
    {"name": "Bash", "description": "Run a shell command", "cache_control": {"type": "ephemeral"},
     "input_schema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
       "properties": {"command": {"type": "string"}, "description": {"type": "string"}, "timeout": {"type": "number"}},
       "required": ["command"], "additionalProperties": false}}
  ],
  "tool_choice": {"type": "auto"},
  "metadata": {"user_id": "{\"device_id\":\"d-1\",\"session_id\":\"s-1\"}"},
  "thinking": {"type": "enabled", "budget_tokens": 31999},
  "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
  "output_config": {"effort": "high"},
  "stop_sequences": ["\n\nHuman:"],
  "temperature": 1,
  "top_k": 40,
  "x_tollgate_future": {"nested": [1, 2, 3]},
  "stream": false
}`

// claudeCodeHeaders are Claude Code's headers besides its key.
var claudeCodeHeaders = map[string]string{
	"anthropic-beta":              "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
	"x-claude-code-session-id":    "0199aaaa-bbbb-cccc-dddd-eeeeffff0000",
	"x-app":                       "cli",
	"x-stainless-lang":            "js",
	"x-stainless-package-version": "0.60.0",
	"x-stainless-retry-count":     "0",
	"User-Agent":                  "claude-cli/2.1.330 (external, cli)",
}

// codexTools are the tools Codex offers: function tools, a namespace tool
// and web_search.
const codexTools = `[
    {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY", "strict": false,
     "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}},
       "required": ["cmd"], "additionalProperties": false}},
    {"type": "namespace", "name": "mcp__files", "description": "File tools", "tools": [{"type": "function", "name": "read", "parameters": {"type": "object", "properties": {}}}]},
    {"type": "web_search", "external_web_access": false}
  ]`

// codexBody is a responses request shaped as Codex sends it (docs/agents.md):
// message items with ids, the system prompt as a developer message, no
// instructions and no max_output_tokens, a reasoning item with encrypted
// content, a function call round trip, reasoning, include, store,
// prompt_cache_key, client_metadata, text.verbosity and an unknown field.
// TOOLS is codexTools or a subset; the last user turn asks for exec_command.
const codexBody = `{
  "model": "MODEL",
  "input": [
    {"type": "message", "id": "msg_dev1", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex. Be terse."}]},
    {"type": "message", "id": "msg_user1", "role": "user", "content": [{"type": "input_text", "text": "List the files. NONCE"}]},
    {"type": "reasoning", "id": "rs_0001", "summary": [{"type": "summary_text", "text": "Run ls."}], "encrypted_content": "gAAAAABencrypted=="},
    {"type": "function_call", "id": "fc_0001", "call_id": "call_ls1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_ls1", "output": "a.txt\nb.txt"},
    {"type": "message", "id": "msg_asst1", "role": "assistant", "content": [{"type": "output_text", "text": "Two files."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "[sim:cached=5,reasoning=4] Use the exec_command tool to run: echo done"}]}
  ],
  "tools": TOOLS,
  "tool_choice": "auto",
  "parallel_tool_calls": false,
  "reasoning": {"effort": "medium", "summary": "auto"},
  "store": false,
  "stream": false,
  "include": ["reasoning.encrypted_content"],
  "prompt_cache_key": "0199a1b2-c3d4-session",
  "client_metadata": {"originator": "codex_exec"},
  "text": {"verbosity": "low"},
  "x_tollgate_future": true
}`

// codexHeaders are Codex's headers besides its key.
var codexHeaders = map[string]string{
	"session_id":              "0199a1b2-c3d4-session",
	"session-id":              "0199a1b2-c3d4-session",
	"thread-id":               "0199a1b2-c3d4-thread",
	"originator":              "codex_exec",
	"x-codex-turn-metadata":   `{"turn":1}`,
	"x-codex-beta-features":   "unified_exec",
	"x-client-request-id":     "0199a1b2-c3d4-request",
	"User-Agent":              "codex_exec/0.169.0",
	"anthropic-version":       "2023-06-01",
	"openai-beta":             "responses=experimental",
	"x-stainless-os":          "Linux",
	"x-stainless-arch":        "x64",
	"x-stainless-lang":        "rust",
	"x-stainless-retry-count": "0",
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

var nonces atomic.Int64

// withModel fills in a template's model and replaces its NONCE with a
// token unique to the call, by which the upstream request is found again.
func withModel(body, model string) string {
	body = strings.Replace(body, `"MODEL"`, `"`+model+`"`, 1)
	return strings.Replace(body, "NONCE", "nonce-"+strconv.FormatInt(nonces.Add(1), 10), 1)
}

// nonceOf returns the token withModel put into body.
func nonceOf(body string) string {
	i := strings.Index(body, "nonce-")
	j := i + len("nonce-")
	for j < len(body) && body[j] >= '0' && body[j] <= '9' {
		j++
	}
	return body[i:j]
}

// sentFor returns the upstream request on path that carried the client
// body's nonce (parallel cases share the upstream).
func sentFor(t *testing.T, up *upstream, path, clientBody string) vendorsim.Request {
	t.Helper()
	nonce := nonceOf(clientBody)
	reqs := up.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Path == path && strings.Contains(string(reqs[i].Body), nonce+`"`) {
			return reqs[i]
		}
	}
	t.Fatalf("no upstream call on %s carried %s", path, nonce)
	return vendorsim.Request{}
}

func codex(model, tools string) string {
	return strings.Replace(withModel(codexBody, model), "TOOLS", tools, 1)
}

// onlyFunctionTool is codexTools without the namespace and web_search tools.
var onlyFunctionTool = "[" + gjson.Get(codexTools, "0").Raw + "]"

// del deletes top-level fields from a JSON text.
func del(t *testing.T, body string, fields ...string) string {
	t.Helper()
	for _, f := range fields {
		var err error
		if body, err = sjson.Delete(body, f); err != nil {
			t.Fatal(err)
		}
	}
	return body
}

// Issue 6, point 2: on a channel speaking the client's protocol, the body
// goes upstream verbatim but for the model id and an omitted max tokens;
// anthropic-beta goes to Anthropic; the upstream gets its vendor's auth
// and version headers and none of the client's.
func TestAgentsPassThrough(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, "")

	t.Run("messages: Claude Code's body verbatim, model id replaced", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		for _, stream := range []bool{false, true} {
			body := withModel(claudeCodeBody, "ag-claude-up")
			if stream {
				body = strings.Replace(body, `"stream": false`, `"stream": true`, 1)
			}
			h := with(claudeCodeHeaders, "x-api-key", w.key, "anthropic-version", "2099-01-01")
			var c call
			if stream {
				st, hdr, evs, err := rawStream(t, g.URL+"/v1/messages?beta=true", h, body)
				if st != 200 || err != nil {
					t.Fatalf("stream: %d %v %s", st, err, evs[0].Data)
				}
				c = call{Status: st, Header: hdr}
			} else {
				c = do(t, "POST", g.URL+"/v1/messages?beta=true", h, body)
				if c.Status != 200 {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
			}
			if c.Header.Get("X-Protocol-Translation") != "" || c.Header.Get("X-Protocol-Warning") != "" {
				t.Fatalf("a native call translated or warned: %v", c.Header)
			}
			sent := sentFor(t, up, "/v1/messages", body)
			sameExcept(t, []byte(body), sent.Body, "model")
			if m := gjson.GetBytes(sent.Body, "model").String(); m != "claude-upstream-1" {
				t.Errorf("upstream model %q, want the channel's claude-upstream-1", m)
			}
			if got := sent.Header.Get("Anthropic-Beta"); got != claudeCodeHeaders["anthropic-beta"] {
				t.Errorf("anthropic-beta upstream %q, want the client's %q", got, claudeCodeHeaders["anthropic-beta"])
			}
			if got := sent.Header.Values("Anthropic-Version"); len(got) != 1 || got[0] != "2023-06-01" {
				t.Errorf("anthropic-version upstream %v, want the plugin's 2023-06-01 only", got)
			}
			if got := sent.Header.Get("X-Api-Key"); got != upstreamKey {
				t.Errorf("x-api-key upstream %q, want the channel's key", got)
			}
			noClientHeaders(t, sent, w.key)
			if !stream {
				// The answer comes back as the upstream gave it.
				ans := replay(t, sent, protocol.AnthropicMessages)
				sameExcept(t, []byte(ans.Raw), c.Body, "model")
			}
		}
		w.settled(t, 2)
	})

	// The messages protocol requires max_tokens (the gateway refuses a body
	// without it, as Anthropic does); the other three may omit it.
	t.Run("completions: an omitted max_tokens raised to the model's max_output_tokens, the rest verbatim", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := withModel(`{"model":"MODEL","messages":[{"role":"user","content":"Hi NONCE"}],"metadata":{"k":"v"},"store":false,"x_tollgate_future":1}`, "ag-gpt-up")
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), body)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		sent := sentFor(t, up, "/v1/chat/completions", body)
		sameExcept(t, []byte(body), sent.Body, "model", "max_tokens")
		if mt := gjson.GetBytes(sent.Body, "max_tokens").Int(); mt != 100000 {
			t.Errorf("upstream max_tokens %d, want max_output_tokens 100000: %s", mt, sent.Body)
		}
	})

	t.Run("responses: Codex's body verbatim but for model, instructions and max_output_tokens", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		for _, stream := range []bool{false, true} {
			body := codex("ag-gpt-up", onlyFunctionTool)
			if stream {
				body = strings.Replace(body, `"stream": false`, `"stream": true`, 1)
			}
			h := with(codexHeaders, "Authorization", "Bearer "+w.key)
			var c call
			if stream {
				st, hdr, evs, err := rawStream(t, g.URL+"/v1/responses", h, body)
				if st != 200 || err != nil {
					t.Fatalf("stream: %d %v %s", st, err, evs[0].Data)
				}
				c = call{Status: st, Header: hdr}
			} else {
				c = do(t, "POST", g.URL+"/v1/responses", h, body)
				if c.Status != 200 {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
			}
			if c.Header.Get("X-Protocol-Translation") != "" || c.Header.Get("X-Protocol-Warning") != "" {
				t.Fatalf("a native call translated or warned: %v", c.Header)
			}
			sent := sentFor(t, up, "/v1/responses", body)
			// PRODUCT.md §7: an omitted instructions goes up as "", an
			// omitted max_output_tokens as the model's ceiling.
			sameExcept(t, []byte(body), sent.Body, "model", "instructions", "max_output_tokens")
			up := gjson.ParseBytes(sent.Body)
			if up.Get("model").String() != "gpt-upstream-1" || up.Get("instructions").Raw != `""` || up.Get("max_output_tokens").Int() != 100000 {
				t.Errorf("upstream model %s, instructions %s, max_output_tokens %s; want gpt-upstream-1, \"\", 100000",
					up.Get("model").Raw, up.Get("instructions").Raw, up.Get("max_output_tokens").Raw)
			}
			if got := sent.Header.Get("Authorization"); got != "Bearer "+upstreamKey {
				t.Errorf("authorization upstream %q, want the channel's key", got)
			}
			for _, h := range []string{"Anthropic-Version", "Anthropic-Beta", "Openai-Beta"} {
				if v := sent.Header.Get(h); v != "" {
					t.Errorf("the client's %s reached the upstream: %q", h, v)
				}
			}
			noClientHeaders(t, sent, w.key)
			if !stream {
				ans := replay(t, sent, protocol.OpenAIResponses)
				sameExcept(t, []byte(ans.Raw), c.Body, "model")
			}
		}
		w.settled(t, 2)
	})

	t.Run("generate-content: unknown fields, thought signatures and thinkingConfig verbatim", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		tmpl := `{"contents":[{"role":"user","parts":[{"text":"Hi NONCE"}]},
  {"role":"model","parts":[{"text":"Hello.","thoughtSignature":"c2lnbmF0dXJl"}]},
  {"role":"user","parts":[{"text":"Say more [sim:words=5]"}]}],
 "systemInstruction":{"parts":[{"text":"Be brief."}]},
 "generationConfig":{"temperature":0.2,"maxOutputTokens":300,"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}},
 "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],
 "cachedContent":"cachedContents/abc","x_tollgate_future":{"a":1}}`
		path := "/v1beta/models/ag-gemini:generateContent"
		for _, omit := range []bool{false, true} {
			body := withModel(tmpl, "")
			if omit {
				body = del(t, body, "generationConfig.maxOutputTokens")
			}
			c := do(t, "POST", g.URL+path, map[string]string{"x-goog-api-key": w.key, "x-goog-api-client": "genai-js/1.0"}, body)
			if c.Status != 200 || c.Header.Get("X-Protocol-Warning") != "" {
				t.Fatalf("%d %v %s", c.Status, c.Header, c.Body)
			}
			sent := sentFor(t, up, path, body)
			if !omit {
				sameExcept(t, []byte(body), sent.Body)
			} else {
				sameExcept(t, []byte(body), sent.Body, "generationConfig")
				gc := gjson.GetBytes(sent.Body, "generationConfig")
				wantJSON(t, "upstream generationConfig", gc, `{"temperature":0.2,"maxOutputTokens":4096,"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}}`)
			}
			if got := sent.Header.Get("X-Goog-Api-Key"); got != upstreamKey {
				t.Errorf("x-goog-api-key upstream %q, want the channel's key", got)
			}
			noClientHeaders(t, sent, w.key)
			if !omit {
				ans := replay(t, sent, protocol.GeminiNative)
				sameExcept(t, []byte(ans.Raw), c.Body)
			}
		}
		w.settled(t, 2)
	})

	// The same through the official Go SDKs: what they put on the wire is
	// what the upstream gets.
	t.Run("anthropic SDK: betas, thinking blocks, cache_control and metadata verbatim", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		wl := &wire{}
		c := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(w.key), anthropicopt.WithMaxRetries(0),
			anthropicopt.WithMiddleware(wl.middleware), anthropicopt.WithHeader("x-claude-code-session-id", "s-1"))
		nonce := withModel("NONCE", "")
		msg, err := c.Beta.Messages.New(t.Context(), anthropic.BetaMessageNewParams{
			Model: "ag-claude", MaxTokens: 2048,
			Betas:    []anthropic.AnthropicBeta{"interleaved-thinking-2025-05-14", "context-management-2025-06-27"},
			System:   []anthropic.BetaTextBlockParam{{Text: "Be brief. " + nonce, CacheControl: anthropic.NewBetaCacheControlEphemeralParam()}},
			Thinking: anthropic.BetaThinkingConfigParamOfEnabled(1024),
			Metadata: anthropic.BetaMetadataParam{UserID: anthropic.String(`{"session_id":"s-1"}`)},
			Messages: []anthropic.BetaMessageParam{
				anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("List the files.")),
				{Role: anthropic.BetaMessageParamRoleAssistant, Content: []anthropic.BetaContentBlockParamUnion{
					anthropic.NewBetaThinkingBlock("EqQBCkYIBxgCKkBsignature==", "Nothing to run."), anthropic.NewBetaTextBlock("None.")}},
				anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Say hi [sim:words=4]")),
			},
		}, anthropicopt.WithJSONSet("context_management", map[string]any{"edits": []any{map[string]any{"type": "clear_thinking_20251015"}}}))
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 1 || msg.Content[0].Text == "" || msg.StopReason != "end_turn" {
			t.Fatalf("answer %+v", msg)
		}
		hdr, body := wl.last()
		sent := sentFor(t, up, "/v1/messages", string(body))
		sameExcept(t, body, sent.Body)
		if got, want := sent.Header.Get("Anthropic-Beta"), hdr.Get("Anthropic-Beta"); got != want || want == "" {
			t.Errorf("anthropic-beta upstream %q, the SDK sent %q", got, want)
		}
		noClientHeaders(t, sent, w.key)
		w.settled(t, 1)
	})

	t.Run("openai SDK: reasoning, include, store and prompt_cache_key verbatim", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		wl := &wire{}
		c := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(w.key), option.WithMaxRetries(0), option.WithMiddleware(wl.middleware))
		resp, err := c.Responses.New(t.Context(), responses.ResponseNewParams{
			Model:           "ag-gpt",
			Instructions:    openai.String("Be brief."),
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hi " + withModel("NONCE", ""))},
			Include:         []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
			Reasoning:       shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryAuto},
			Store:           openai.Bool(false),
			PromptCacheKey:  openai.String("pck-1"),
			MaxOutputTokens: openai.Int(256),
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.OutputText() == "" || resp.Status != "completed" {
			t.Fatalf("answer %+v", resp)
		}
		_, body := wl.last()
		sent := sentFor(t, up, "/v1/responses", string(body))
		// A string input goes up in the message-array form (PRODUCT.md §7).
		sameExcept(t, body, sent.Body, "input")
		wantJSON(t, "upstream input", gjson.GetBytes(sent.Body, "input"),
			`[{"role":"user","content":[{"type":"input_text","text":`+gjson.GetBytes(body, "input").Raw+`}]}]`)
		w.settled(t, 1)
	})
}

// Issue 6, point 3: the same agents on a model whose channel speaks another
// protocol. Each field the upstream cannot carry is dropped and named, as
// sent, in X-Protocol-Warning (request order, "; "-joined); what has a
// mapping is mapped: system, tool calls and results with their ids, tool
// schemas (cleaned for generate-content, lower-cased from it), metadata's
// user id, cached and reasoning tokens; stop reasons and usage map exactly.
func TestAgentsTranslation(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, "")

	t.Run("Claude Code on a completions upstream", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := withModel(claudeCodeBody, "ag-chat")
		c := do(t, "POST", g.URL+"/v1/messages?beta=true", with(claudeCodeHeaders, "x-api-key", w.key, "anthropic-version", "2023-06-01"), body)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if got := c.Header.Get("X-Protocol-Translation"); got != "anthropic_messages_to_openai_chat" {
			t.Errorf("X-Protocol-Translation %q", got)
		}
		// anthropic-beta is a header, so it comes first.
		const wantWarn = "anthropic-beta; cache_control; messages.content.thinking; messages.content.is_error; thinking; context_management; output_config; top_k; x_tollgate_future"
		if got := c.Header.Get("X-Protocol-Warning"); got != wantWarn {
			t.Errorf("X-Protocol-Warning\n got  %q\n want %q", got, wantWarn)
		}

		sent := sentFor(t, up, "/v1/chat/completions", body)
		u := gjson.ParseBytes(sent.Body)
		if got := strings.Join(keysOf(u), ","); got != "max_tokens,messages,model,stop,temperature,tool_choice,tools,user" {
			t.Errorf("upstream fields %s", got)
		}
		for _, gone := range []string{"cache_control", "signature", "thinking", "context_management", "output_config", "top_k", "x_tollgate_future", "is_error"} {
			if strings.Contains(string(sent.Body), gone) {
				t.Errorf("%q reached the completions upstream: %s", gone, sent.Body)
			}
		}
		wantJSON(t, "upstream model, max_tokens, stop, temperature, user", gjson.Parse(`{"model":`+u.Get("model").Raw+`,"max_tokens":`+u.Get("max_tokens").Raw+
			`,"stop":`+u.Get("stop").Raw+`,"temperature":`+u.Get("temperature").Raw+`,"user":`+u.Get("user").Raw+`}`),
			`{"model":"ag-chat","max_tokens":32000,"stop":["\n\nHuman:"],"temperature":1,"user":"{\"device_id\":\"d-1\",\"session_id\":\"s-1\"}"}`)
		nonce := nonceOf(body)
		wantJSON(t, "upstream messages", u.Get("messages"), `[
			{"role":"system","content":"You are Claude Code, Anthropic's official CLI for Claude.\nWork in /tmp/project."},
			{"role":"user","content":[{"type":"text","text":"<system-reminder>The date is 2026-01-01.</system-reminder>"},{"type":"text","text":"List the files. `+nonce+`"}]},
			{"role":"system","content":"Environment: linux, cwd /tmp/project"},
			{"role":"assistant","content":"Running ls.","tool_calls":[{"id":"toolu_01ABCDEF","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"ls\", \"description\": \"List files\"}"}}]},
			{"role":"tool","tool_call_id":"toolu_01ABCDEF","content":"a.txt\nb.txt"},
			{"role":"assistant","content":"Two files."},
			{"role":"user","content":[{"type":"text","text":"[sim:cached=7,reasoning=3] Use the Bash tool to run: echo done"}]}]`)
		wantJSON(t, "upstream tools", u.Get("tools"), `[{"type":"function","function":{"name":"Bash","description":"Run a shell command",
			"parameters":`+gjson.Get(body, "tools.0.input_schema").Raw+`}}]`)
		wantJSON(t, "upstream tool_choice", u.Get("tool_choice"), `"auto"`)
		if h := sent.Header; h.Get("Anthropic-Beta") != "" || h.Get("Anthropic-Version") != "" || h.Get("Authorization") != "Bearer "+upstreamKey {
			t.Errorf("upstream headers %v", h)
		}
		noClientHeaders(t, sent, w.key)

		// The answer: the upstream's tool call id, the arguments as input,
		// tool_calls as tool_use, cached tokens out of input_tokens.
		ua := replay(t, sent, protocol.OpenAIChat)
		a := gjson.ParseBytes(c.Body)
		call := ua.Get("choices.0.message.tool_calls.0")
		if ua.Get("choices.0.finish_reason").String() != "tool_calls" || !call.Exists() {
			t.Fatalf("the upstream did not call a tool: %s", ua.Raw)
		}
		wantJSON(t, "content", a.Get("content"), `[{"type":"tool_use","id":`+call.Get("id").Raw+`,"name":"Bash","input":{"command":"echo done"}}]`)
		if a.Get("stop_reason").String() != "tool_use" || a.Get("role").String() != "assistant" || a.Get("model").String() != "ag-chat" {
			t.Errorf("answer %s", c.Body)
		}
		pt, ct := ua.Get("usage.prompt_tokens").Int(), ua.Get("usage.completion_tokens").Int()
		if ua.Get("usage.prompt_tokens_details.cached_tokens").Int() != 7 || ua.Get("usage.completion_tokens_details.reasoning_tokens").Int() != 3 {
			t.Fatalf("upstream usage %s", ua.Get("usage").Raw)
		}
		wantJSON(t, "usage", a.Get("usage"), `{"input_tokens":`+itoa(int(pt-7))+`,"output_tokens":`+itoa(int(ct))+`,"cache_read_input_tokens":7,"cache_creation_input_tokens":0}`)
		w.settled(t, 1)
	})

	t.Run("Codex on a completions upstream", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := codex("ag-chat", codexTools)
		c := do(t, "POST", g.URL+"/v1/responses", with(codexHeaders, "Authorization", "Bearer "+w.key), body)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if got := c.Header.Get("X-Protocol-Translation"); got != "openai_responses_to_openai_chat" {
			t.Errorf("X-Protocol-Translation %q", got)
		}
		const wantWarn = "input.id; input.reasoning; input.status; tools.namespace; tools.web_search; reasoning; store; include; prompt_cache_key; client_metadata; text.verbosity; x_tollgate_future"
		if got := c.Header.Get("X-Protocol-Warning"); got != wantWarn {
			t.Errorf("X-Protocol-Warning\n got  %q\n want %q", got, wantWarn)
		}
		sent := sentFor(t, up, "/v1/chat/completions", body)
		u := gjson.ParseBytes(sent.Body)
		if got := strings.Join(keysOf(u), ","); got != "max_tokens,messages,model,parallel_tool_calls,tool_choice,tools" {
			t.Errorf("upstream fields %s", got)
		}
		for _, gone := range []string{"encrypted", "rs_0001", "fc_0001", "msg_dev1", "web_search", "namespace", "prompt_cache_key", "verbosity"} {
			if strings.Contains(string(sent.Body), gone) {
				t.Errorf("%q reached the completions upstream: %s", gone, sent.Body)
			}
		}
		if u.Get("model").String() != "ag-chat" || u.Get("max_tokens").Int() != 4096 || u.Get("tool_choice").String() != "auto" || u.Get("parallel_tool_calls").Raw != "false" {
			t.Errorf("upstream model, max_tokens (the model's ceiling), tool_choice, parallel_tool_calls: %s", sent.Body)
		}
		nonce := nonceOf(body)
		wantJSON(t, "upstream messages", u.Get("messages"), `[
			{"role":"system","content":"You are Codex. Be terse."},
			{"role":"user","content":[{"type":"text","text":"List the files. `+nonce+`"}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_ls1","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\":\"ls\"}"}}]},
			{"role":"tool","tool_call_id":"call_ls1","content":"a.txt\nb.txt"},
			{"role":"assistant","content":"Two files."},
			{"role":"user","content":[{"type":"text","text":"[sim:cached=5,reasoning=4] Use the exec_command tool to run: echo done"}]}]`)
		wantJSON(t, "upstream tools", u.Get("tools"), `[{"type":"function","function":{"name":"exec_command","description":"Runs a command in a PTY",
			"parameters":`+gjson.Get(codexTools, "0.parameters").Raw+`,"strict":false}}]`)
		noClientHeaders(t, sent, w.key)

		ua := replay(t, sent, protocol.OpenAIChat)
		call := ua.Get("choices.0.message.tool_calls.0")
		a := gjson.ParseBytes(c.Body)
		if a.Get("status").String() != "completed" || a.Get("output.#").Int() != 1 {
			t.Fatalf("answer %s", c.Body)
		}
		fc := a.Get("output.0")
		if fc.Get("type").String() != "function_call" || fc.Get("call_id").String() != call.Get("id").String() || call.Get("id").String() == "" ||
			fc.Get("name").String() != "exec_command" || !jsonEq(fc.Get("arguments").String(), `{"cmd":"echo done"}`) {
			t.Errorf("function_call %s, upstream call %s", fc.Raw, call.Raw)
		}
		pt, ct := ua.Get("usage.prompt_tokens").Int(), ua.Get("usage.completion_tokens").Int()
		wantJSON(t, "usage", a.Get("usage"), `{"input_tokens":`+itoa(int(pt))+`,"input_tokens_details":{"cached_tokens":5},"output_tokens":`+itoa(int(ct))+
			`,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":`+itoa(int(pt+ct))+`}`)
		w.settled(t, 1)
	})

	t.Run("generate-content client on a completions upstream: upper-case schema types lower-cased", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := withModel(`{"contents":[
  {"role":"user","parts":[{"text":"What is the weather? NONCE"}]},
  {"role":"model","parts":[{"text":"Let me check.","thoughtSignature":"c2lnbmF0dXJl"},{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"C"}}}]},
  {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":21}}}]},
  {"role":"user","parts":[{"text":"[sim:reasoning=2] Use the get_weather tool for: Berlin"}]}],
 "systemInstruction":{"parts":[{"text":"Be brief."}]},
 "tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather","parameters":{"type":"OBJECT","properties":{
   "city":{"type":"STRING","description":"City"},"unit":{"type":"STRING","enum":["C","F"]},"days":{"type":"INTEGER","nullable":true},
   "tags":{"type":"ARRAY","items":{"type":"STRING"}}},"required":["city","unit"],"propertyOrdering":["city","unit","days","tags"]}}]},
  {"googleSearch":{}}],
 "toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},
 "generationConfig":{"maxOutputTokens":300,"temperature":0.5,"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true},"topK":40},
 "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`, "")
		c := do(t, "POST", g.URL+"/v1beta/models/ag-chat:generateContent", map[string]string{"x-goog-api-key": w.key}, body)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if got := c.Header.Get("X-Protocol-Translation"); got != "gemini_native_to_openai_chat" {
			t.Errorf("X-Protocol-Translation %q", got)
		}
		const wantWarn = "contents.parts.thoughtSignature; tools.googleSearch; generationConfig.thinkingConfig; generationConfig.topK; safetySettings"
		if got := c.Header.Get("X-Protocol-Warning"); got != wantWarn {
			t.Errorf("X-Protocol-Warning\n got  %q\n want %q", got, wantWarn)
		}
		sent := sentFor(t, up, "/v1/chat/completions", body)
		u := gjson.ParseBytes(sent.Body)
		wantJSON(t, "upstream tools", u.Get("tools"), `[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{
			"city":{"type":"string","description":"City"},"unit":{"type":"string","enum":["C","F"]},"days":{"type":["integer","null"]},
			"tags":{"type":"array","items":{"type":"string"}}},"required":["city","unit"]}}}]`)
		// The call without an id is given call_0, and the response without
		// one answers it.
		wantJSON(t, "upstream messages", u.Get("messages"), `[
			{"role":"system","content":"Be brief."},
			{"role":"user","content":[{"type":"text","text":"What is the weather? `+nonceOf(body)+`"}]},
			{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"C\"}"}}]},
			{"role":"tool","tool_call_id":"call_0","content":"{\"temp_c\":21}"},
			{"role":"user","content":[{"type":"text","text":"[sim:reasoning=2] Use the get_weather tool for: Berlin"}]}]`)
		if u.Get("max_tokens").Int() != 300 || u.Get("temperature").Float() != 0.5 || u.Get("tool_choice").String() != "auto" {
			t.Errorf("upstream max_tokens, temperature, tool_choice: %s", sent.Body)
		}

		ua := replay(t, sent, protocol.OpenAIChat)
		call := ua.Get("choices.0.message.tool_calls.0")
		a := gjson.ParseBytes(c.Body)
		fc := a.Get("candidates.0.content.parts.0.functionCall")
		if fc.Get("name").String() != "get_weather" || fc.Get("id").String() != call.Get("id").String() || !jsonEq(fc.Get("args").Raw, call.Get("function.arguments").String()) {
			t.Errorf("functionCall %s, upstream call %s", fc.Raw, call.Raw)
		}
		var args map[string]any
		_ = json.Unmarshal([]byte(fc.Get("args").Raw), &args)
		if args["city"] != "Berlin" || args["unit"] != "C" {
			t.Errorf("args %v, want city Berlin (after the prompt's colon) and the enum's first value", args)
		}
		if got := a.Get("candidates.0.finishReason").String(); got != "STOP" {
			t.Errorf("finishReason %q", got)
		}
		pt, ct := ua.Get("usage.prompt_tokens").Int(), ua.Get("usage.completion_tokens").Int()
		um := a.Get("usageMetadata")
		if um.Get("promptTokenCount").Int() != pt || um.Get("candidatesTokenCount").Int() != ct-2 || um.Get("thoughtsTokenCount").Int() != 2 || um.Get("totalTokenCount").Int() != pt+ct {
			t.Errorf("usageMetadata %s, upstream usage %s", um.Raw, ua.Get("usage").Raw)
		}
		w.settled(t, 1)
	})

	t.Run("completions client on a generate-content upstream: schemas cleaned, ids kept", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		schema := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"properties":{
  "city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
  "when":{"type":["string","null"],"format":"date-time"},
  "opts":{"type":"object","additionalProperties":{"type":"string"},"properties":{"x":{"type":"integer","exclusiveMinimum":0}}}},
  "required":["city","unit"]}`
		tools := `[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":` + schema + `}}]`

		// A history with a call and its result: the upstream gets the
		// cleaned schema, the call and the result under the call's name.
		body := withModel(`{"model":"ag-gemini","messages":[
  {"role":"system","content":"Be brief."},
  {"role":"user","content":"[sim:reasoning=3] What is the weather in Paris? NONCE"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]},
  {"role":"tool","tool_call_id":"call_abc","content":"{\"temp_c\":21}"}],
 "tools":`+tools+`,"reasoning_effort":"high","max_tokens":200}`, "")
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), body)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if c.Header.Get("X-Protocol-Translation") != "openai_chat_to_gemini_native" || c.Header.Get("X-Protocol-Warning") != "reasoning_effort" {
			t.Errorf("translation %q, warning %q", c.Header.Get("X-Protocol-Translation"), c.Header.Get("X-Protocol-Warning"))
		}
		sent := sentFor(t, up, "/v1beta/models/ag-gemini:generateContent", body)
		for _, gone := range []string{"$schema", "additionalProperties", "exclusiveMinimum", "reasoning_effort"} {
			if strings.Contains(string(sent.Body), gone) {
				t.Errorf("%q reached the generate-content upstream: %s", gone, sent.Body)
			}
		}
		u := gjson.ParseBytes(sent.Body)
		wantJSON(t, "upstream parameters", u.Get("tools.0.functionDeclarations.0.parameters"), `{"type":"object","properties":{
			"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
			"when":{"type":"string","format":"date-time","nullable":true},
			"opts":{"type":"object","properties":{"x":{"type":"integer"}}}},"required":["city","unit"]}`)
		if fc := u.Get("contents.1.parts.0.functionCall"); fc.Get("name").String() != "get_weather" || !jsonEq(fc.Get("args").Raw, `{"city":"Paris","unit":"celsius"}`) {
			t.Errorf("upstream functionCall %s", u.Get("contents").Raw)
		}
		if fr := u.Get("contents.2.parts.0.functionResponse"); fr.Get("name").String() != "get_weather" || !jsonEq(fr.Get("response").Raw, `{"temp_c":21}`) {
			t.Errorf("upstream functionResponse %s", u.Get("contents").Raw)
		}
		if u.Get("generationConfig.maxOutputTokens").Int() != 200 || u.Get("systemInstruction.parts.0.text").String() != "Be brief." {
			t.Errorf("upstream generationConfig, systemInstruction: %s", sent.Body)
		}
		// Text answer: STOP is stop; thoughts are counted in completion
		// tokens and reported as reasoning tokens.
		um := replay(t, sent, protocol.GeminiNative).Get("usageMetadata")
		a := gjson.ParseBytes(c.Body)
		if a.Get("choices.0.finish_reason").String() != "stop" || !strings.HasPrefix(a.Get("choices.0.message.content").String(), "Tool result received:") {
			t.Errorf("answer %s", c.Body)
		}
		want := `{"prompt_tokens":` + um.Get("promptTokenCount").Raw + `,"completion_tokens":` + itoa(int(um.Get("candidatesTokenCount").Int()+3)) +
			`,"total_tokens":` + um.Get("totalTokenCount").Raw + `,"reasoning_tokens":3}`
		got := `{"prompt_tokens":` + a.Get("usage.prompt_tokens").Raw + `,"completion_tokens":` + a.Get("usage.completion_tokens").Raw +
			`,"total_tokens":` + a.Get("usage.total_tokens").Raw + `,"reasoning_tokens":` + a.Get("usage.completion_tokens_details.reasoning_tokens").Raw + `}`
		if !jsonEq(got, want) || um.Get("thoughtsTokenCount").Int() != 3 {
			t.Errorf("usage %s, upstream usageMetadata %s", a.Get("usage").Raw, um.Raw)
		}

		// A call: the client gets an id, finish_reason tool_calls, the
		// upstream's arguments.
		ask := withModel(`{"model":"ag-gemini","messages":[{"role":"user","content":"Use the get_weather tool for: Rome NONCE"}],"tools":`+tools+`}`, "")
		c = do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), ask)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		ua := replay(t, sentFor(t, up, "/v1beta/models/ag-gemini:generateContent", ask), protocol.GeminiNative)
		ufc := ua.Get("candidates.0.content.parts.0.functionCall")
		call := gjson.GetBytes(c.Body, "choices.0.message.tool_calls.0")
		if gjson.GetBytes(c.Body, "choices.0.finish_reason").String() != "tool_calls" || call.Get("function.name").String() != "get_weather" ||
			!jsonEq(call.Get("function.arguments").String(), ufc.Get("args").Raw) || call.Get("id").String() == "" {
			t.Fatalf("answer %s, upstream %s", c.Body, ua.Raw)
		}
		if ufc.Get("id").Exists() && ufc.Get("id").String() != call.Get("id").String() {
			t.Errorf("the upstream's call id %s became %s", ufc.Get("id").Raw, call.Get("id").Raw)
		}

		// The result for that id goes up as that call's functionResponse.
		next := withModel(`{"model":"ag-gemini","messages":[{"role":"user","content":"Use the get_weather tool for: Rome NONCE"},
  {"role":"assistant","content":null,"tool_calls":[`+call.Raw+`]},
  {"role":"tool","tool_call_id":`+call.Get("id").Raw+`,"content":"sunny"}],"tools":`+tools+`}`, "")
		c = do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), next)
		if c.Status != 200 || gjson.GetBytes(c.Body, "choices.0.finish_reason").String() != "stop" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		u = gjson.ParseBytes(sentFor(t, up, "/v1beta/models/ag-gemini:generateContent", next).Body)
		if fr := u.Get("contents.2.parts.0.functionResponse"); fr.Get("name").String() != "get_weather" || !jsonEq(fr.Get("response").Raw, `{"content":"sunny"}`) {
			t.Errorf("upstream functionResponse %s", u.Get("contents").Raw)
		}
		w.settled(t, 3)
	})

	// A string content is as valid as blocks for any role; it is mapped and
	// warns nothing.
	t.Run("string contents of system and assistant messages warn nothing", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key), `{"model":"ag-chat","max_tokens":50,"messages":[
  {"role":"user","content":"Hi"},{"role":"system","content":"Env: linux"},{"role":"assistant","content":"Hello."},{"role":"user","content":"More"}]}`)
		if c.Status != 200 || c.Header.Get("X-Protocol-Translation") == "" {
			t.Fatalf("%d %v %s", c.Status, c.Header, c.Body)
		}
		if got, ok := c.Header["X-Protocol-Warning"]; ok {
			t.Errorf("messages client: X-Protocol-Warning %q for a body that drops nothing", got)
		}
		c = do(t, "POST", g.URL+"/v1/responses", bearer(w.key), `{"model":"ag-chat","input":[
  {"role":"user","content":"Hi"},{"role":"developer","content":"Env: linux"},{"role":"assistant","content":"Hello."},{"role":"user","content":"More"}]}`)
		if c.Status != 200 || c.Header.Get("X-Protocol-Translation") == "" {
			t.Fatalf("%d %v %s", c.Status, c.Header, c.Body)
		}
		if got, ok := c.Header["X-Protocol-Warning"]; ok {
			t.Errorf("responses client: X-Protocol-Warning %q for a body that drops nothing", got)
		}
		w.settled(t, 2)
	})

	t.Run("Claude Code streaming on a completions upstream: blocks, stop reason and usage", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := strings.Replace(withModel(claudeCodeBody, "ag-chat"), `"stream": false`, `"stream": true`, 1)
		st, h, evs, err := rawStream(t, g.URL+"/v1/messages?beta=true", with(claudeCodeHeaders, "x-api-key", w.key, "anthropic-version", "2023-06-01"), body)
		if st != 200 || err != nil {
			t.Fatalf("%d %v %s", st, err, evs[0].Data)
		}
		if h.Get("X-Protocol-Translation") != "anthropic_messages_to_openai_chat" || !warned(h, "thinking") || !warned(h, "cache_control") {
			t.Errorf("headers %v", h)
		}
		m := checkMessagesStream(t, evs)
		sent := sentFor(t, up, "/v1/chat/completions", body)
		if !gjson.GetBytes(sent.Body, "stream_options.include_usage").Bool() {
			t.Errorf("the streaming upstream call does not ask for usage: %s", sent.Body)
		}
		// The same conversation unstreamed gives the same call and usage.
		ua := replay(t, vendorsim.Request{Body: []byte(del(t, string(sent.Body), "stream", "stream_options"))}, protocol.OpenAIChat)
		if m.stop != "tool_use" || len(m.blocks) != 1 || m.blocks[0]["type"] != "tool_use" || m.blocks[0]["name"] != "Bash" ||
			!jsonEq(mustJSON(m.blocks[0]["input"]), `{"command":"echo done"}`) {
			t.Errorf("stream answer %+v stop %s", m.blocks, m.stop)
		}
		if id, _ := m.blocks[0]["id"].(string); id == "" {
			t.Errorf("tool_use without id: %+v", m.blocks[0])
		}
		pt, ct := ua.Get("usage.prompt_tokens").Int(), ua.Get("usage.completion_tokens").Int()
		wantJSON(t, "message_delta usage", m.usage, `{"input_tokens":`+itoa(int(pt-7))+`,"output_tokens":`+itoa(int(ct))+`,"cache_read_input_tokens":7,"cache_creation_input_tokens":0}`)
		w.settled(t, 1)
	})

	// Through the official Go SDKs: genai sends upper-case schema types and
	// a thinkingConfig; the anthropic SDK thinking, betas and cache_control.
	t.Run("genai SDK: upper-case types lower-cased, thinkingConfig warned, the call decoded", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		wl := &wire{}
		c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: w.key, Backend: genai.BackendGeminiAPI,
			HTTPOptions: genai.HTTPOptions{BaseURL: g.URL}, HTTPClient: &http.Client{Transport: wl}})
		if err != nil {
			t.Fatal(err)
		}
		nonce := withModel("NONCE", "")
		resp, err := c.Models.GenerateContent(t.Context(), "ag-chat", genai.Text("Use the get_weather tool for: Oslo "+nonce), &genai.GenerateContentConfig{
			ThinkingConfig: &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](512)},
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_weather", Description: "Weather",
				Parameters: &genai.Schema{Type: genai.TypeObject, Required: []string{"city"}, Properties: map[string]*genai.Schema{
					"city": {Type: genai.TypeString}, "days": {Type: genai.TypeInteger, Nullable: genai.Ptr(true)}}}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if h := resp.SDKHTTPResponse.Headers; h.Get("X-Protocol-Translation") != "gemini_native_to_openai_chat" || h.Get("X-Protocol-Warning") != "generationConfig.thinkingConfig" {
			t.Errorf("headers %v", h)
		}
		fcs := resp.FunctionCalls()
		if len(fcs) != 1 || fcs[0].Name != "get_weather" || fcs[0].ID == "" || fcs[0].Args["city"] == nil {
			t.Fatalf("function calls %+v", fcs)
		}
		_, body := wl.last()
		sent := sentFor(t, up, "/v1/chat/completions", string(body))
		wantJSON(t, "upstream parameters", gjson.GetBytes(sent.Body, "tools.0.function.parameters"),
			`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":["integer","null"]}},"required":["city"]}`)
		if id := replay(t, sent, protocol.OpenAIChat).Get("choices.0.message.tool_calls.0.id").String(); id != fcs[0].ID {
			t.Errorf("call id %q, the upstream's %q", fcs[0].ID, id)
		}
		w.settled(t, 1)
	})

	t.Run("anthropic SDK: thinking and cache_control warned, betas not sent, tool_use decoded", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		var hr *http.Response
		c := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(w.key), anthropicopt.WithMaxRetries(0))
		nonce := withModel("NONCE", "")
		stream := c.Beta.Messages.NewStreaming(t.Context(), anthropic.BetaMessageNewParams{
			Model: "ag-chat", MaxTokens: 2048,
			Betas:    []anthropic.AnthropicBeta{"interleaved-thinking-2025-05-14"},
			System:   []anthropic.BetaTextBlockParam{{Text: "Be brief. " + nonce, CacheControl: anthropic.NewBetaCacheControlEphemeralParam()}},
			Thinking: anthropic.BetaThinkingConfigParamOfEnabled(1024),
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Use the Bash tool to run: echo sdk"))},
			Tools: []anthropic.BetaToolUnionParam{{OfTool: &anthropic.BetaToolParam{Name: "Bash",
				InputSchema: anthropic.BetaToolInputSchemaParam{Properties: map[string]any{"command": map[string]any{"type": "string"}}, Required: []string{"command"}}}}},
		}, anthropicopt.WithResponseInto(&hr))
		var msg anthropic.BetaMessage
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if got := hr.Header.Get("X-Protocol-Warning"); got != "anthropic-beta; cache_control; thinking" {
			t.Errorf("X-Protocol-Warning %q, want %q", got, "anthropic-beta; cache_control; thinking")
		}
		if msg.StopReason != "tool_use" || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "Bash" ||
			!jsonEq(string(msg.Content[0].Input), `{"command":"echo sdk"}`) || msg.Usage.OutputTokens == 0 {
			t.Fatalf("message %+v", msg)
		}
		sent := sentFor(t, up, "/v1/chat/completions", `"`+nonce+`"`)
		if v := sent.Header.Get("Anthropic-Beta"); v != "" {
			t.Errorf("anthropic-beta reached the completions upstream: %q", v)
		}
		w.settled(t, 1)
	})
}

// Issue 6, point 4: on a native responses channel, built-in or unknown tool
// types the model's channel does not offer are dropped and warned instead
// of refused, and reasoning and include are dropped and warned for a model
// without caps { reasoning }; everything else still goes up verbatim.
func TestAgentsResponsesToolsAndReasoning(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, "")

	cases := []struct {
		name, model string
		kept        string // the tools that must go up, by type
		dropped     []string
		warning     string
	}{
		{"no reasoning caps: namespace, web_search, reasoning and include dropped", "ag-gpt-plain", "function",
			[]string{"reasoning", "include"}, "tools.namespace; tools.web_search; reasoning; include"},
		{"reasoning caps: only the tools dropped", "ag-gpt", "function", nil, "tools.namespace; tools.web_search"},
		{"web_search in caps: kept, namespace dropped", "ag-gpt-web", "function,web_search",
			[]string{"reasoning", "include"}, "tools.namespace; reasoning; include"},
		{"web_search narrowed away by the channel: dropped", "ag-gpt-narrow", "function",
			[]string{"reasoning", "include"}, "tools.namespace; tools.web_search; reasoning; include"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			body := codex(tc.model, codexTools)
			c := do(t, "POST", g.URL+"/v1/responses", with(codexHeaders, "Authorization", "Bearer "+w.key), body)
			if c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
			if got := c.Header.Get("X-Protocol-Warning"); got != tc.warning {
				t.Errorf("X-Protocol-Warning\n got  %q\n want %q", got, tc.warning)
			}
			if got := c.Header.Get("X-Protocol-Translation"); got != "" {
				t.Errorf("a native call translated: %q", got)
			}
			sent := sentFor(t, up, "/v1/responses", body)
			ignore := append([]string{"model", "instructions", "max_output_tokens", "tools"}, tc.dropped...)
			sameExcept(t, []byte(body), sent.Body, ignore...)
			var types []string
			gjson.GetBytes(sent.Body, "tools").ForEach(func(_, v gjson.Result) bool {
				types = append(types, v.Get("type").String())
				if v.Get("type").String() == "function" && !jsonEq(v.Raw, gjson.Get(codexTools, "0").Raw) {
					t.Errorf("the function tool changed: %s", v.Raw)
				}
				if v.Get("type").String() == "web_search" && !jsonEq(v.Raw, gjson.Get(codexTools, "2").Raw) {
					t.Errorf("web_search changed: %s", v.Raw)
				}
				return true
			})
			if got := strings.Join(types, ","); got != tc.kept {
				t.Errorf("upstream tools %s, want %s", got, tc.kept)
			}
			for _, f := range []string{"reasoning", "include"} {
				gone := !gjson.GetBytes(sent.Body, f).Exists()
				if want := strings.Contains(tc.warning, "; "+f) || strings.HasPrefix(tc.warning, f); gone != want {
					t.Errorf("%s upstream: dropped %v, want dropped %v: %s", f, gone, want, sent.Body)
				}
			}
			// The call is served: the function tool is called.
			if fc := gjson.GetBytes(c.Body, "output.0"); fc.Get("type").String() != "function_call" || fc.Get("name").String() != "exec_command" {
				t.Errorf("answer %s", c.Body)
			}
			w.settled(t, 1)
		})
	}

	t.Run("only built-in tools: tools and tool_choice both dropped", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := withModel(`{"model":"MODEL","input":"Hello NONCE","tools":[{"type":"web_search"},{"type":"namespace","name":"ns","tools":[]}],"tool_choice":"auto","reasoning":{"effort":"low"}}`, "ag-gpt-plain")
		c := do(t, "POST", g.URL+"/v1/responses", bearer(w.key), body)
		if c.Status != 200 || c.Header.Get("X-Protocol-Warning") != "tools.web_search; tools.namespace; reasoning" {
			t.Fatalf("%d %q %s", c.Status, c.Header.Get("X-Protocol-Warning"), c.Body)
		}
		u := gjson.ParseBytes(sentFor(t, up, "/v1/responses", body).Body)
		if u.Get("tools").Exists() || u.Get("tool_choice").Exists() || u.Get("reasoning").Exists() {
			t.Errorf("upstream body %s", u.Raw)
		}
		w.settled(t, 1)
	})

	// PRODUCT.md §7: warning names come in request order.
	t.Run("warnings in request order when reasoning comes before tools", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := withModel(`{"model":"MODEL","reasoning":{"effort":"low"},"input":"Hello NONCE","tools":[{"type":"web_search"}],"include":["reasoning.encrypted_content"]}`, "ag-gpt-plain")
		c := do(t, "POST", g.URL+"/v1/responses", bearer(w.key), body)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if got, want := c.Header.Get("X-Protocol-Warning"), "reasoning; tools.web_search; include"; got != want {
			t.Errorf("X-Protocol-Warning %q, want %q", got, want)
		}
		w.settled(t, 1)
	})

	t.Run("streaming: dropped the same way, the stream served", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		body := gjson.Get(strings.Replace(codex("ag-gpt-plain", codexTools), `"stream": false`, `"stream": true`, 1), "@ugly").Raw
		st, h, evs, err := rawStream(t, g.URL+"/v1/responses", with(codexHeaders, "Authorization", "Bearer "+w.key), body)
		if st != 200 || err != nil {
			t.Fatalf("%d %v %s", st, err, evs[0].Data)
		}
		if got := h.Get("X-Protocol-Warning"); got != "tools.namespace; tools.web_search; reasoning; include" {
			t.Errorf("X-Protocol-Warning %q", got)
		}
		resp := checkResponsesStream(t, evs)
		if resp.Get("status").String() != "completed" || resp.Get("output.0.type").String() != "function_call" {
			t.Errorf("final response %s", resp.Raw)
		}
		w.settled(t, 1)
	})

	t.Run("openai SDK: web_search and reasoning on a model without them", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		var hr *http.Response
		c := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(w.key), option.WithMaxRetries(0))
		resp, err := c.Responses.New(t.Context(), responses.ResponseNewParams{
			Model:     "ag-gpt-plain",
			Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("Search the web for tolls")},
			Tools:     []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}},
			Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortHigh},
			Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		}, option.WithResponseInto(&hr))
		if err != nil {
			t.Fatal(err)
		}
		// The order is the skipped case's above; here, the names.
		got := warnings(hr.Header)
		sort.Strings(got)
		if strings.Join(got, "; ") != "include; reasoning; tools.web_search" {
			t.Errorf("X-Protocol-Warning %q", hr.Header.Get("X-Protocol-Warning"))
		}
		if resp.Status != "completed" || resp.OutputText() == "" {
			t.Errorf("answer %+v", resp)
		}
		w.settled(t, 1)
	})

	// The completions-style rules of the spec stay: a built-in tool there
	// is still refused when the model lacks it.
	t.Run("completions: web_search still refused without caps", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("ag-gpt-plain", "Search", `"stream":true,"tools":[{"type":"web_search"}]`))
		wantErr(t, c, 400, "tool_not_supported", "invalid_request_error")
	})
}

// streamedEvent is one SSE event as a client read it.
type streamedEvent struct {
	name string
	data string
}

// readStream reads a stream line by line, calling each with every event
// as soon as its data line is read.
func readStream(t *testing.T, url string, headers map[string]string, body string, each func(streamedEvent)) []streamedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp, br := openStream(t, ctx, url, headers, body)
	defer resp.Body.Close()
	var out []streamedEvent
	name := ""
	for {
		line, err := br.ReadString('\n')
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "event: "); ok {
			name = v
		}
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			ev := streamedEvent{name: name, data: v}
			out = append(out, ev)
			each(ev)
			name = ""
		}
		if err != nil {
			return out
		}
	}
}

// Issue 6, point 5: streams as the agents' SDKs read them, native and
// translated, text and tool calls; each event flushed as it comes; the
// trace id in x-request-id.
func TestAgentsStreams(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, "")

	for _, model := range []string{"ag-claude", "ag-chat"} {
		t.Run("messages/"+model+"/text", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			st, h, evs, err := rawStream(t, g.URL+"/v1/messages?beta=true", msgHeaders(w.key),
				`{"model":"`+model+`","max_tokens":500,"stream":true,"messages":[{"role":"user","content":"Stream me six words [sim:words=6]"}]}`)
			if st != 200 || err != nil {
				t.Fatalf("%d %v %s", st, err, evs[0].Data)
			}
			m := checkMessagesStream(t, evs)
			if len(m.blocks) != 1 || m.blocks[0]["type"] != "text" || len(strings.Fields(m.blocks[0]["text"].(string))) != 6 {
				t.Errorf("blocks %+v", m.blocks)
			}
			if m.stop != "end_turn" || m.usage.Get("output_tokens").Int() != 6 || m.usage.Get("input_tokens").Int() == 0 && m.start.Get("usage.input_tokens").Int() == 0 {
				t.Errorf("stop %s usage %s (start %s)", m.stop, m.usage.Raw, m.start.Get("usage").Raw)
			}
			checkTrace(t, h, w.last(t, 1))
			w.settled(t, 1)
		})
		t.Run("messages/"+model+"/tool call", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			st, _, evs, err := rawStream(t, g.URL+"/v1/messages", msgHeaders(w.key), `{"model":"`+model+`","max_tokens":500,"stream":true,
 "messages":[{"role":"user","content":"Use the Bash tool to run: echo streamed"}],
 "tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}}]}`)
			if st != 200 || err != nil {
				t.Fatalf("%d %v %s", st, err, evs[0].Data)
			}
			m := checkMessagesStream(t, evs)
			b := m.blocks[len(m.blocks)-1]
			if m.stop != "tool_use" || b["type"] != "tool_use" || b["name"] != "Bash" || b["id"] == "" || !jsonEq(mustJSON(b["input"]), `{"command":"echo streamed"}`) {
				t.Errorf("stop %s blocks %+v", m.stop, m.blocks)
			}
			if m.usage.Get("output_tokens").Int() == 0 {
				t.Errorf("usage %s", m.usage.Raw)
			}
			w.settled(t, 1)
		})
	}

	for _, model := range []string{"ag-gpt", "ag-chat"} {
		t.Run("responses/"+model+"/text", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			st, h, evs, err := rawStream(t, g.URL+"/v1/responses", bearer(w.key),
				`{"model":"`+model+`","stream":true,"input":"Stream me five words [sim:words=5]"}`)
			if st != 200 || err != nil {
				t.Fatalf("%d %v %s", st, err, evs[0].Data)
			}
			checkResponsesEvents(t, evs)
			resp := checkResponsesStream(t, evs)
			deltas := ""
			for _, ev := range evs {
				if ev.Name == "response.output_text.delta" {
					deltas += gjson.GetBytes(ev.Data, "delta").String()
				}
			}
			if text := resp.Get("output.0.content.0.text").String(); text != deltas || len(strings.Fields(text)) != 5 {
				t.Errorf("deltas %q, final text %q", deltas, text)
			}
			if resp.Get("status").String() != "completed" || resp.Get("usage.output_tokens").Int() != 5 ||
				resp.Get("usage.total_tokens").Int() != resp.Get("usage.input_tokens").Int()+5 {
				t.Errorf("final response %s", resp.Raw)
			}
			checkTrace(t, h, w.last(t, 1))
			w.settled(t, 1)
		})
		t.Run("responses/"+model+"/function call", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			st, _, evs, err := rawStream(t, g.URL+"/v1/responses", bearer(w.key), `{"model":"`+model+`","stream":true,
 "input":"Use the exec_command tool to run: echo streamed","tools":`+gjson.Get(onlyFunctionTool, "@ugly").Raw+`}`)
			if st != 200 || err != nil {
				t.Fatalf("%d %v %s", st, err, evs[0].Data)
			}
			resp := checkResponsesStream(t, evs)
			fc := resp.Get("output.0")
			args := ""
			for _, ev := range evs {
				if ev.Name == "response.function_call_arguments.delta" {
					args += gjson.GetBytes(ev.Data, "delta").String()
				}
			}
			if fc.Get("type").String() != "function_call" || fc.Get("call_id").String() == "" || fc.Get("name").String() != "exec_command" ||
				!jsonEq(fc.Get("arguments").String(), `{"cmd":"echo streamed"}`) || args != fc.Get("arguments").String() {
				t.Errorf("function_call %s, argument deltas %q", fc.Raw, args)
			}
			if resp.Get("status").String() != "completed" || resp.Get("usage.output_tokens").Int() == 0 {
				t.Errorf("final response status %s, usage %s", resp.Get("status").Raw, resp.Get("usage").Raw)
			}
			w.settled(t, 1)
		})
	}

	// The upstream writes each text delta only once the client has read
	// the one before (deltaGate): a delta the gateway held back instead of
	// flushing it never reaches the client, and the upstream's wait for it
	// runs out.
	flush := []struct{ name, path, body string }{
		{"messages native", "/v1/messages", `{"model":"ag-claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"one at a time @GATE@ [sim:words=4]"}]}`},
		{"messages translated", "/v1/messages", `{"model":"ag-chat","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"one at a time @GATE@ [sim:words=4]"}]}`},
		{"responses native", "/v1/responses", `{"model":"ag-gpt","stream":true,"input":"one at a time @GATE@ [sim:words=4]"}`},
		{"responses translated", "/v1/responses", `{"model":"ag-chat","stream":true,"input":"one at a time @GATE@ [sim:words=4]"}`},
	}
	for _, f := range flush {
		t.Run("each event flushed/"+f.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			h := bearer(w.key)
			if strings.HasPrefix(f.path, "/v1/messages") {
				h = msgHeaders(w.key)
			}
			gate := up.gate(t)
			deltas := 0
			evs := readStream(t, g.URL+f.path, h, strings.Replace(f.body, "@GATE@", gate.mark, 1), func(ev streamedEvent) {
				if ev.name == "content_block_delta" || ev.name == "response.output_text.delta" {
					deltas++
					gate.clientRead()
				}
			})
			sent, stalled := gate.outcome()
			for _, n := range stalled {
				t.Errorf("text delta %d had not reached the client %s after the upstream wrote it: held back, not flushed", n, gateWait)
			}
			if deltas != 4 || sent != 4 {
				t.Fatalf("the upstream wrote %d text deltas, the client read %d: %+v", sent, deltas, evs)
			}
			w.settled(t, 1)
		})
	}

	// A request's JSON may have newlines between its tokens; the simulated
	// OpenAI upstream echoes the raw tools in its response events.
	t.Run("pretty-printed tools: the native stream's response.completed is valid JSON", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		_, _, evs, err := rawStream(t, g.URL+"/v1/responses", bearer(w.key), `{"model":"ag-gpt","stream":true,
 "input":"Use the exec_command tool to run: echo streamed","tools":`+onlyFunctionTool+`}`)
		if err != nil || len(evs) == 0 {
			t.Fatalf("%v %d events", err, len(evs))
		}
		if last := evs[len(evs)-1]; !json.Valid(last.Data) {
			t.Errorf("%s is not JSON: %.200s", last.Name, last.Data)
		}
		w.settled(t, 1)
	})

	t.Run("x-request-id is the trace id on every answer", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		calls := []struct {
			path    string
			headers map[string]string
			body    string
			status  int
		}{
			{"/v1/chat/completions", bearer(w.key), chatBody("ag-gpt", "Hi", ""), 200},
			{"/v1/messages", msgHeaders(w.key), msgBody("ag-claude", "Hi", ""), 200},
			{"/v1/responses", bearer(w.key), `{"model":"ag-gpt","input":"Hi"}`, 200},
			{"/v1beta/models/ag-gemini:generateContent", map[string]string{"x-goog-api-key": w.key}, `{"contents":[{"parts":[{"text":"Hi"}]}]}`, 200},
			{"/v1/responses", bearer(w.key), `{"model":"ag-gpt","input":"fail [sim:error=500]"}`, 500},
			{"/v1/responses", bearer(w.key), `{"model":"no-such-model","input":"Hi"}`, 400},
			{"/v1/messages", msgHeaders("sk-tollgate-nope"), msgBody("ag-claude", "Hi", ""), 401},
		}
		seen := map[string]bool{}
		for _, c := range calls {
			r := do(t, "POST", g.URL+c.path, c.headers, c.body)
			if r.Status != c.status {
				t.Fatalf("%s: %d, want %d: %s", c.path, r.Status, c.status, r.Body)
			}
			tr, rid := r.Header.Get("x-gateway-trace"), r.Header.Get("x-request-id")
			if tr == "" || rid != tr || seen[tr] {
				t.Errorf("%s %d: x-request-id %q, x-gateway-trace %q (seen before: %v)", c.path, c.status, rid, tr, seen[tr])
			}
			seen[tr] = true
		}
		// The ids are the rows' request_id (the 401 has no row: its key is unknown).
		rows := w.rows(t, 6)
		for _, row := range rows {
			if !seen[str(row["request_id"])] {
				t.Errorf("row %v has a request_id no answer carried", row["request_id"])
			}
		}
	})
}

// checkTrace checks that x-request-id equals x-gateway-trace and the row's
// request_id.
func checkTrace(t *testing.T, h http.Header, row map[string]any) {
	t.Helper()
	tr := h.Get("x-gateway-trace")
	if tr == "" || h.Get("x-request-id") != tr || str(row["request_id"]) != tr {
		t.Errorf("x-request-id %q, x-gateway-trace %q, row request_id %v", h.Get("x-request-id"), tr, row["request_id"])
	}
}

// Issue 6, point 6: a model's and a channel's timeout each end a hanging
// call after their own duration, a channel's longer one included; a stream
// gets an idle timeout; and an agent's retries of a failing call are each
// settled exactly once, fast.
func TestAgentsTimeoutsAndRetries(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, `
channel "idle" {
  vendor       = "openai"
  base_url     = "@UP@"
  api_key      = "`+upstreamKey+`"
  protocols    = ["openai_chat", "openai_responses"]
  models       = ["ag-idle"]
}
channel "idlech" {
  vendor       = "openai"
  base_url     = "@UP@"
  api_key      = "`+upstreamKey+`"
  protocols    = ["openai_chat", "openai_responses"]
  models       = ["ag-idlech"]
  idle_timeout = "2s"
}
model "ag-idle" {
  idle_timeout = "1s"
  price {
    input  = "3"
    output = "15"
  }
}
model "ag-idlech" {
  idle_timeout = "10s"
  price {
    input  = "3"
    output = "15"
  }
}
`)

	hangs := []struct {
		name, model, path, body string
		min, max                time.Duration
	}{
		{"the model's 1s timeout (completions)", "ag-slow", "/v1/chat/completions", chatBody("ag-slow", "wait [sim:hang]", ""), time.Second, 2500 * time.Millisecond},
		{"the model's 1s timeout (responses stream)", "ag-slow", "/v1/responses", `{"model":"ag-slow","stream":true,"input":"wait [sim:hang]"}`, time.Second, 2500 * time.Millisecond},
		{"the channel's 1s timeout (model 180s)", "ag-slowch", "/v1/chat/completions", chatBody("ag-slowch", "wait [sim:hang]", ""), time.Second, 2500 * time.Millisecond},
		{"the channel's 3s timeout over the model's 1s", "ag-longch", "/v1/chat/completions", chatBody("ag-longch", "wait [sim:hang]", ""), 3 * time.Second, 4500 * time.Millisecond},
		{"the channel's 3s timeout over the model's 1s (responses stream)", "ag-longch", "/v1/responses", `{"model":"ag-longch","stream":true,"input":"wait [sim:hang]"}`, 3 * time.Second, 4500 * time.Millisecond},
	}
	for _, h := range hangs {
		t.Run("a hang ends at "+h.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			start := time.Now()
			c := do(t, "POST", g.URL+h.path, bearer(w.key), h.body)
			took := time.Since(start)
			wantErr(t, c, 504, "upstream_timeout", "api_error")
			if took < h.min || took > h.max {
				t.Errorf("answered after %s, want %s to %s", took, h.min, h.max)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "upstream_timeout", attempts: 1})
			w.settled(t, 1)
		})
	}

	t.Run("a channel's timeout longer than the model's lets a 2s answer through", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		start := time.Now()
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("ag-longch", "take your time [sim:latency=2s]", ""))
		if c.Status != 200 || time.Since(start) < 2*time.Second {
			t.Fatalf("%d after %s: %s", c.Status, time.Since(start), c.Body)
		}
		checkRow(t, w.last(t, 1), rowWant{status: "success", attempts: 1, billed: true})
		w.settled(t, 1)
	})

	// A stream whose upstream goes silent ends at the idle timeout (the
	// model's or its channel's; 120 s by default), without its terminator.
	for _, tc := range []struct {
		name, model string
		limit       time.Duration
	}{
		{"the model's", "ag-idle", time.Second},
		{"the channel's", "ag-idlech", 2 * time.Second},
	} {
		t.Run("a silent stream ends at "+tc.name+" idle timeout", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			start := time.Now()
			resp, br := openStream(t, ctx, g.URL+"/v1/responses", bearer(w.key), `{"model":"`+tc.model+`","stream":true,"input":"then silence [sim:words=3,slow=20s]"}`)
			defer resp.Body.Close()
			var names []string
			for {
				line, err := br.ReadString('\n')
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
					names = append(names, v)
				}
				if err != nil {
					break
				}
			}
			took := time.Since(start)
			if took < tc.limit || took > tc.limit+3*time.Second {
				t.Errorf("the stream ended after %s, want about the %s idle timeout", took, tc.limit)
			}
			if len(names) == 0 || names[0] != "response.created" || slices.Contains(names, "response.completed") {
				t.Errorf("events %v: want a started stream without response.completed", names)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "upstream_timeout", attempts: 1, billed: true})
			w.settled(t, 1)
		})
	}

	// Claude Code retries 529 and 5xx; every attempt is a call of its own:
	// answered at once, one row each, nothing held, the balance exact.
	t.Run("raw retries of an overloaded upstream, then success", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		for i := 0; i < 4; i++ {
			start := time.Now()
			c := do(t, "POST", g.URL+"/v1/messages?beta=true", msgHeaders(w.key), msgBody("ag-claude", "busy? [sim:error=529]", ""))
			if took := time.Since(start); took > time.Second {
				t.Errorf("attempt %d answered after %s", i, took)
			}
			if c.Status != 529 || c.Header.Get("Retry-After") != "1" || gjson.GetBytes(c.Body, "type").String() != "error" {
				t.Fatalf("attempt %d: %d %v %s", i, c.Status, c.Header, c.Body)
			}
		}
		c := do(t, "POST", g.URL+"/v1/messages?beta=true", msgHeaders(w.key), msgBody("ag-claude", "and now?", ""))
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		rows := w.rows(t, 5)
		checkRow(t, rows[0], rowWant{status: "success", attempts: 1, billed: true})
		for _, r := range rows[1:] {
			checkRow(t, r, rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
		}
		w.settled(t, 5)
	})

	t.Run("raw retries of a stream the upstream breaks", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		for i := 0; i < 3; i++ {
			st, _, evs, _ := rawStream(t, g.URL+"/v1/responses", bearer(w.key), `{"model":"ag-gpt","stream":true,"input":"a long story [sim:cut=4]"}`)
			if st != 200 || len(evs) == 0 || evs[len(evs)-1].Name == "response.completed" {
				t.Fatalf("attempt %d: %d, %d events", i, st, len(evs))
			}
		}
		for _, r := range w.rows(t, 3) {
			checkRow(t, r, rowWant{status: "error", code: "upstream_error", attempts: 1, billed: true})
		}
		w.settled(t, 3)
	})

	t.Run("ten concurrent failing calls", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := tryDo("POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("ag-gpt", "fail [sim:error=503]", ""))
				if err != nil {
					t.Error(err)
				} else if c.Status != 503 {
					t.Errorf("%d %s", c.Status, c.Body)
				}
			}()
		}
		wg.Wait()
		for _, r := range w.rows(t, 10) {
			checkRow(t, r, rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
		}
		w.settled(t, 10)
	})

	// The official SDKs retry on their own (honouring retry-after): each of
	// their attempts reaches the upstream once and is one row.
	t.Run("anthropic SDK retrying 529 three times", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := anthropic.NewClient(anthropicopt.WithBaseURL(g.URL), anthropicopt.WithAPIKey(w.key), anthropicopt.WithMaxRetries(3))
		nonce := withModel("NONCE", "")
		_, err := c.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "ag-claude", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("busy? [sim:error=529] " + nonce))}})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
			t.Fatalf("want the 529 after the retries, got %v", err)
		}
		n := 0
		for _, r := range up.requests() {
			if strings.Contains(string(r.Body), nonce+" ") || strings.Contains(string(r.Body), nonce+`"`) {
				n++
			}
		}
		if n != 4 {
			t.Errorf("the upstream saw %d attempts, want 4", n)
		}
		for _, r := range w.rows(t, 4) {
			checkRow(t, r, rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
		}
		w.settled(t, 4)
	})

	t.Run("openai SDK retrying a 503 twice on responses", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(w.key), option.WithMaxRetries(2))
		_, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "ag-gpt",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("busy? [sim:error=503]")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
			t.Fatalf("want the 503 after the retries, got %v", err)
		}
		rows := w.rows(t, 3)
		for _, r := range rows {
			checkRow(t, r, rowWant{status: "error", code: "upstream_error", attempts: 1, failed: 1})
		}
		w.settled(t, 3)
	})
}

// agentModelIDs are the ids Claude Code and Codex use by default
// (PRODUCT.md §7), which the embedded default's sim serves.
var agentModelIDs = []string{"claude-sonnet-4-5", "claude-sonnet-5", "claude-opus-4-8", "claude-haiku-4-5-20251001", "gpt-5-codex"}

// simAsk is one call in each protocol with one tool offered; it returns the
// tool called ("" for none), its arguments, and the answer's text.
func simAsk(t *testing.T, g *testgw.Gateway, key, p, model, prompt, tool, schema string) (name, args, text string) {
	t.Helper()
	var c call
	switch p {
	case "openai_chat":
		c = do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), `{"model":"`+model+`","messages":[{"role":"user","content":`+strconv.Quote(prompt)+`}],
 "tools":[{"type":"function","function":{"name":"`+tool+`","parameters":`+schema+`}}]}`)
	case "anthropic_messages":
		c = do(t, "POST", g.URL+"/v1/messages", msgHeaders(key), `{"model":"`+model+`","max_tokens":500,"messages":[{"role":"user","content":`+strconv.Quote(prompt)+`}],
 "tools":[{"name":"`+tool+`","input_schema":`+schema+`}]}`)
	case "openai_responses":
		c = do(t, "POST", g.URL+"/v1/responses", bearer(key), `{"model":"`+model+`","input":`+strconv.Quote(prompt)+`,
 "tools":[{"type":"function","name":"`+tool+`","parameters":`+schema+`}]}`)
	case "gemini_native":
		c = do(t, "POST", g.URL+"/v1beta/models/"+model+":generateContent", map[string]string{"x-goog-api-key": key},
			`{"contents":[{"role":"user","parts":[{"text":`+strconv.Quote(prompt)+`}]}],"tools":[{"functionDeclarations":[{"name":"`+tool+`","parameters":`+schema+`}]}]}`)
	}
	if c.Status != 200 {
		t.Fatalf("%s %s: %d %s", p, model, c.Status, c.Body)
	}
	a := gjson.ParseBytes(c.Body)
	switch p {
	case "openai_chat":
		m := a.Get("choices.0.message")
		if tc := m.Get("tool_calls.0.function"); tc.Exists() {
			return tc.Get("name").String(), tc.Get("arguments").String(), m.Get("content").String()
		}
		return "", "", m.Get("content").String()
	case "anthropic_messages":
		for _, b := range a.Get("content").Array() {
			if b.Get("type").String() == "tool_use" {
				return b.Get("name").String(), b.Get("input").Raw, ""
			}
		}
		return "", "", a.Get("content.0.text").String()
	case "openai_responses":
		for _, it := range a.Get("output").Array() {
			if it.Get("type").String() == "function_call" {
				return it.Get("name").String(), it.Get("arguments").String(), ""
			}
		}
		return "", "", a.Get("output.0.content.0.text").String()
	default:
		for _, part := range a.Get("candidates.0.content.parts").Array() {
			if fc := part.Get("functionCall"); fc.Exists() {
				return fc.Get("name").String(), fc.Get("args").Raw, ""
			}
		}
		return "", "", a.Get("candidates.0.content.parts.0.text").String()
	}
}

var allProtocols = []string{"openai_chat", "anthropic_messages", "openai_responses", "gemini_native"}

// bashSchema is Claude Code's Bash tool's schema, in short.
const bashSchema = `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"description":{"type":"string"},"run_in_background":{"type":"boolean"}},"required":["command"],"additionalProperties":false}`

// Issue 6, point 7: the embedded default serves the agents: its sim answers
// for the agents' default ids on every protocol, calls a tool only when the
// prompt asks for one, with arguments valid against the tool's schema, and
// answers a tool result with text.
func TestAgentsEmbeddedDefault(t *testing.T) {
	t.Parallel()
	// No vendor key: sim serves everything.
	g := startGateway(t, testgw.Options{Env: []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "GEMINI_API_KEY="}})

	t.Run("the agents' ids are listed, owned by sim", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := do(t, "GET", g.URL+"/v1/models", bearer(w.key), "")
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		owned := map[string]string{}
		gjson.GetBytes(c.Body, "data").ForEach(func(_, m gjson.Result) bool {
			owned[m.Get("id").String()] = m.Get("owned_by").String()
			return true
		})
		for _, id := range agentModelIDs {
			if owned[id] != "sim" {
				t.Errorf("%s: owned_by %q, want sim (listed: %v)", id, owned[id], owned)
			}
		}
	})

	for _, id := range agentModelIDs {
		t.Run(id+"/text unless a tool is asked for, on every protocol", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			for _, p := range allProtocols {
				// A lower-case "bash" and "Bashful" name no tool.
				name, _, text := simAsk(t, g, w.key, p, id, "Say hello from a bash shell, Bashful.", "Bash", bashSchema)
				if name != "" || !strings.HasPrefix(text, "Tollgate sim reply to: Say hello") {
					t.Errorf("%s: tool %q, text %q", p, name, text)
				}
				name, args, _ := simAsk(t, g, w.key, p, id, "Use the Bash tool to run: echo hello", "Bash", bashSchema)
				if name != "Bash" || !jsonEq(args, `{"command":"echo hello"}`) {
					t.Errorf("%s: tool %q, arguments %s; want Bash {\"command\":\"echo hello\"}", p, name, args)
				}
			}
			w.settled(t, 2*len(allProtocols))
		})
	}

	// Required fields only, recursively, each valid: enums, consts, bounds,
	// lengths, arrays, $ref, anyOf; the prompt's text after its last colon
	// in the first string filled.
	schema := `{"type":"object","additionalProperties":false,
 "properties":{
  "path":{"type":"string","minLength":3},
  "mode":{"type":"string","enum":["fast","safe"]},
  "kind":{"const":"patch"},
  "count":{"type":"integer","minimum":3,"maximum":9},
  "ratio":{"type":"number","minimum":0.5},
  "tags":{"type":"array","items":{"type":"string","maxLength":4},"minItems":2},
  "opts":{"type":"object","additionalProperties":false,"properties":{"dry":{"type":"boolean"},"level":{"type":["integer","null"],"minimum":1}},"required":["dry","level"]},
  "target":{"$ref":"#/$defs/target"},
  "either":{"anyOf":[{"type":"null"},{"type":"string","enum":["x","y"]}]},
  "note":{"type":"string"}},
 "required":["path","mode","kind","count","ratio","tags","opts","target","either"],
 "$defs":{"target":{"type":"object","properties":{"host":{"type":"string","format":"uri"},"port":{"type":"integer","maximum":65535}},"required":["host","port"]}}}`
	for _, p := range []string{"openai_chat", "anthropic_messages", "openai_responses"} {
		t.Run("arguments valid against the tool's schema/"+p, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			for _, prompt := range []string{"Use the configure tool on: /srv/app", "Please call a tool for: /srv/app"} {
				name, args, _ := simAsk(t, g, w.key, p, "claude-sonnet-4-5", prompt, "configure", schema)
				var root, v any
				_ = json.Unmarshal([]byte(schema), &root)
				if err := json.Unmarshal([]byte(args), &v); err != nil || name != "configure" {
					t.Fatalf("tool %q arguments %q: %v", name, args, err)
				}
				if why := validArgs(root, root, v); why != "" {
					t.Errorf("%q: arguments %s do not fit the schema: %s", prompt, args, why)
				}
				m := v.(map[string]any)
				if _, ok := m["note"]; ok || len(m) != 9 || m["path"] != "/srv/app" {
					t.Errorf("%q: arguments %s: want the nine required fields only, path from the prompt", prompt, args)
				}
			}
			w.settled(t, 2)
		})
	}

	t.Run("a tool result is answered with text", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key), `{"model":"claude-opus-4-8","max_tokens":200,
 "messages":[{"role":"user","content":"Use the Bash tool to run: echo hello"},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"echo hello"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hello"}]}],
 "tools":[{"name":"Bash","input_schema":`+bashSchema+`}]}`)
		a := gjson.ParseBytes(c.Body)
		if c.Status != 200 || a.Get("stop_reason").String() != "end_turn" || !strings.HasPrefix(a.Get("content.0.text").String(), "Tool result received: hello") {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		w.settled(t, 1)
	})

	t.Run("Claude Code's and Codex's own requests complete a tool turn", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		for _, id := range agentModelIDs[:4] {
			c := do(t, "POST", g.URL+"/v1/messages?beta=true", with(claudeCodeHeaders, "x-api-key", w.key, "anthropic-version", "2023-06-01"), withModel(claudeCodeBody, id))
			a := gjson.ParseBytes(c.Body)
			if c.Status != 200 || a.Get("stop_reason").String() != "tool_use" || a.Get("content.0.name").String() != "Bash" ||
				!jsonEq(a.Get("content.0.input").Raw, `{"command":"echo done"}`) || c.Header.Get("X-Protocol-Warning") != "" {
				t.Errorf("%s: %d %v %s", id, c.Status, c.Header.Get("X-Protocol-Warning"), c.Body)
			}
		}
		c := do(t, "POST", g.URL+"/v1/responses", with(codexHeaders, "Authorization", "Bearer "+w.key), codex("gpt-5-codex", codexTools))
		fc := gjson.GetBytes(c.Body, "output.0")
		if c.Status != 200 || fc.Get("name").String() != "exec_command" || !jsonEq(fc.Get("arguments").String(), `{"cmd":"echo done"}`) {
			t.Errorf("gpt-5-codex: %d %s", c.Status, c.Body)
		}
		// gpt-5-codex has reasoning but no built-in tools in the default.
		if got := c.Header.Get("X-Protocol-Warning"); got != "tools.namespace; tools.web_search" {
			t.Errorf("gpt-5-codex: X-Protocol-Warning %q", got)
		}
		w.settled(t, 5)
	})

	t.Run("the official Go SDKs complete a plain and a tool turn", func(t *testing.T) {
		t.Parallel()
		for _, id := range agentModelIDs {
			kinds := []string{"anthropic v1", "anthropic v2"}
			if strings.HasPrefix(id, "gpt") {
				kinds = []string{"openai responses", "openai chat"}
			}
			for _, kind := range kinds {
				w := newWallet(g)
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				c := newSDK(t, kind, g.URL, w.key, id)
				tr, err := c.ask(ctx, "Hello! No tools, please.", true, true)
				if err != nil || tr.toolName != "" || tr.text == "" || tr.finish != textFinish[kind] {
					t.Fatalf("%s %s plain: %+v %v", kind, id, tr, err)
				}
				tr, err = c.ask(ctx, "Use the get_weather tool for Paris.", true, true)
				if err != nil {
					t.Fatalf("%s %s: %v", kind, id, err)
				}
				checkToolCall(t, tr)
				if tr, err = c.answer(ctx, `{"temp_c": 21}`, true); err != nil || tr.toolName != "" || tr.finish != textFinish[kind] {
					t.Fatalf("%s %s after the result: %+v %v", kind, id, tr, err)
				}
				cancel()
				w.settled(t, 3)
			}
		}
	})
}

// Issue 6, point 3, for a reasoning model: through translation the
// reasoning fields are mapped where a mapping exists (responses
// reasoning.effort and messages thinking budgets become completions
// reasoning_effort); what has none is still dropped and named.
func TestAgentsTranslationMapsReasoning(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, `
channel "chatonly-r" {
  vendor    = "openai"
  base_url  = "`+"@UP@"+`"
  api_key   = "`+upstreamKey+`"
  protocols = ["openai_chat"]
  models    = ["ag-chat-r"]
}
model "ag-chat-r" {
  translate_from = ["anthropic_messages", "openai_responses"]
  caps {
    reasoning = true
  }
  price {
    input  = "3"
    output = "15"
  }
}
`)
	w := newWallet(g)
	for _, tc := range []struct {
		name, path, body, warn, effort string
		headers                        map[string]string
	}{
		{"responses reasoning.effort", "/v1/responses",
			`{"model":"ag-chat-r","input":"hi NONCE","reasoning":{"effort":"high","summary":"auto"}}`,
			"reasoning.summary", "high", bearer(w.key)},
		{"messages thinking budget", "/v1/messages",
			`{"model":"ag-chat-r","max_tokens":64,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi NONCE"}]}`,
			"", "medium", msgHeaders(w.key)},
	} {
		body := withModel(tc.body, "ag-chat-r")
		c := do(t, "POST", g.URL+tc.path, tc.headers, body)
		if c.Status != 200 {
			t.Fatalf("%s: %d %s", tc.name, c.Status, c.Body)
		}
		if got := c.Header.Get("X-Protocol-Warning"); got != tc.warn {
			t.Errorf("%s: X-Protocol-Warning %q, want %q", tc.name, got, tc.warn)
		}
		sent := sentFor(t, up, "/v1/chat/completions", body)
		if got := gjson.GetBytes(sent.Body, "reasoning_effort").String(); got != tc.effort {
			t.Errorf("%s: upstream reasoning_effort %q, want %q: %s", tc.name, got, tc.effort, sent.Body)
		}
	}
}
