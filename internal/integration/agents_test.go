package integration

// Issue 6, points 2 to 7: what Claude Code, Codex and the official SDKs
// send and need, against the real binary and the real vendor plugins over
// the in-repo vendor simulators (agentsConfig), or the embedded default.

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
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
    {"role": "system", "content": "Environment: linux, cwd /tmp/project"},
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
