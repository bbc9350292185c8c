package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// agentTool is one tool definition of a coding agent, as captured.
type agentTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// loadTools reads a captured tools array (messages-style input_schema or
// responses-style parameters) and keeps the function tools.
func loadTools(t *testing.T, file string) []agentTool {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var out []agentTool
	for _, r := range raw {
		s := r.InputSchema
		if s == nil {
			s = r.Parameters
		}
		if s == nil || r.Type != "" && r.Type != "function" {
			continue // built-in and namespace tools are not the sim's to call
		}
		out = append(out, agentTool{Name: r.Name, Description: r.Description, Schema: s})
	}
	if len(out) == 0 {
		t.Fatalf("no tools in %s", file)
	}
	return out
}

const agentCwd = "/work/demo"

// agentBody is a request in protocol p offering tools, with the agent's
// context (its working directory, as Claude Code and Codex tell it) before
// the user's words.
func agentBody(p protocol.ID, tools []agentTool, prompt string) []byte {
	q, _ := json.Marshal(prompt)
	ctx, _ := json.Marshal("<system-reminder>\n# Environment\n - Primary working directory: " + agentCwd + "\n</system-reminder>")
	codexCtx, _ := json.Marshal("<environment_context>\n  <cwd>" + agentCwd + "</cwd>\n</environment_context>")
	var ts []string
	for _, t := range tools {
		d, _ := json.Marshal(t.Description)
		switch p {
		case protocol.OpenAIChat:
			ts = append(ts, fmt.Sprintf(`{"type":"function","function":{"name":%q,"description":%s,"parameters":%s}}`, t.Name, d, t.Schema))
		case protocol.AnthropicMessages:
			ts = append(ts, fmt.Sprintf(`{"name":%q,"description":%s,"input_schema":%s}`, t.Name, d, t.Schema))
		case protocol.OpenAIResponses:
			ts = append(ts, fmt.Sprintf(`{"type":"function","name":%q,"description":%s,"strict":false,"parameters":%s}`, t.Name, d, t.Schema))
		case protocol.GeminiNative:
			ts = append(ts, fmt.Sprintf(`{"name":%q,"description":%s,"parametersJsonSchema":%s}`, t.Name, d, t.Schema))
		}
	}
	all := strings.Join(ts, ",")
	switch p {
	case protocol.OpenAIChat:
		return fmt.Appendf(nil, `{"model":"m","messages":[{"role":"system","content":%s},{"role":"user","content":%s}],"tools":[%s]}`, ctx, q, all)
	case protocol.AnthropicMessages:
		return fmt.Appendf(nil, `{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}],"tools":[%s]}`, ctx, q, all)
	case protocol.OpenAIResponses:
		return fmt.Appendf(nil, `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]},{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}],"tools":[%s]}`, codexCtx, q, all)
	default:
		return fmt.Appendf(nil, `{"systemInstruction":{"parts":[{"text":%s}]},"contents":[{"role":"user","parts":[{"text":%s}]}],"tools":[{"functionDeclarations":[%s]}]}`, ctx, q, all)
	}
}

// A plain-words request gets the tool a model would call, with arguments
// that do what was asked and that fit the tool's schema, for the tools
// Claude Code and Codex really send, on all four protocols.
func TestToolForPlainRequest(t *testing.T) {
	claude := loadTools(t, "claude-code-2.1.330-tools.json")
	classic := loadTools(t, "claude-code-classic-tools.json")
	codex := loadTools(t, "codex-0.169.0-tools.json")
	codexClassic := loadTools(t, "codex-classic-tools.json")
	weather := []agentTool{{Name: "get_weather", Description: "Get the current weather for a city.",
		Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`)}}
	// The knowledge base's MCP tools, as Claude Code names an HTTP MCP
	// server's tools (mcp__<server>__<tool>).
	wiki := []agentTool{
		{Name: "mcp__tollgate__search_wiki", Description: "Search the knowledge base (BM25 over titles, aliases, summaries, tags and bodies; any language).",
			Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"what to search for"},"limit":{"type":"integer"},"offset":{"type":"integer"}},"required":["q"],"additionalProperties":false}`)},
		{Name: "mcp__tollgate__read_page", Description: "Read one page by id: its Markdown body and its outgoing links.",
			Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"a page id"}},"required":["id"],"additionalProperties":false}`)},
	}
	claudeWiki := append(append([]agentTool{}, claude...), wiki...)
	classicWiki := append(append([]agentTool{}, classic...), wiki...)
	cases := []struct {
		desc   string
		tools  []agentTool
		prompt string
		tool   string // "" = a text answer
		args   string // exact arguments, when set
	}{
		// Claude Code 2.1.330: Bash, Read, Write, Edit and agent tools; no Glob, Grep or LS.
		{"claude code: list the files", claude, "list the files of the current directory", "Bash", `{"command":"ls"}`},
		{"claude code: what files are here", claude, "What files are in this folder?", "Bash", `{"command":"ls"}`},
		{"claude code: read a file", claude, "read README.md", "Read", `{"file_path":"/work/demo/README.md"}`},
		{"claude code: show a file's contents", claude, "Show me the contents of docs/notes.txt please", "Read", `{"file_path":"/work/demo/docs/notes.txt"}`},
		{"claude code: create a file", claude, "Create a file hello.txt containing hi there", "Write", `{"file_path":"/work/demo/hello.txt","content":"hi there"}`},
		{"claude code: edit a file", claude, "In notes.txt replace foo with bar", "Edit", `{"file_path":"/work/demo/notes.txt","old_string":"foo","new_string":"bar"}`},
		{"claude code: search the code", claude, "search for TODO in the code", "Bash", `{"command":"grep -rn TODO ."}`},
		{"claude code: find files", claude, "find all *.go files", "Bash", `{"command":"find . -name '*.go'"}`},
		{"claude code: run a quoted command", claude, "run `go version` for me", "Bash", `{"command":"go version"}`},
		{"claude code: run a named program", claude, "please run git status", "Bash", `{"command":"git status"}`},
		{"claude code: where am I", claude, "what is the working directory?", "Bash", `{"command":"pwd"}`},
		{"claude code: plain question", claude, "Reply with one short sentence about toll roads.", "", ""},
		{"claude code: a poem is text", claude, "Write a short poem about toll roads", "", ""},
		{"claude code: a question is text", claude, "What is a toll road?", "", ""},
		{"claude code: explain is text", claude, "Explain how to list files in bash", "", ""},
		// Claude Code's classic set: LS, Glob, Grep, WebFetch, WebSearch too.
		{"classic: list the files", classic, "list the files of the current directory", "LS", `{"path":"/work/demo"}`},
		{"classic: list a directory", classic, "list the files in src/", "LS", `{"path":"/work/demo/src"}`},
		{"classic: find files", classic, "find all *.go files", "Glob", `{"pattern":"**/*.go"}`},
		{"classic: find files by extension", classic, "find all .md files", "Glob", `{"pattern":"**/*.md"}`},
		{"classic: search the code", classic, `search for "func main" in the code`, "Grep", `{"pattern":"func main"}`},
		{"classic: read a file", classic, "open main.go", "Read", `{"file_path":"/work/demo/main.go"}`},
		{"classic: fetch a page", classic, "fetch https://example.com/page and summarize it", "WebFetch", `{"url":"https://example.com/page","prompt":"sim"}`},
		{"classic: search the web", classic, "search the web for tollgate", "WebSearch", `{"query":"tollgate"}`},
		{"classic: create a file", classic, "create a file notes/todo.md with the text buy milk", "Write", `{"file_path":"/work/demo/notes/todo.md","content":"buy milk"}`},
		// Codex 0.169.0: exec_command, write_stdin, view_image, goals.
		{"codex: list the files", codex, "list the files of the current directory", "exec_command", `{"cmd":"ls"}`},
		{"codex: read a file", codex, "read README.md", "exec_command", `{"cmd":"cat README.md"}`},
		{"codex: create a file", codex, "create a file hello.txt containing hi", "exec_command", `{"cmd":"printf '%s\\n' hi > hello.txt"}`},
		{"codex: run a command", codex, "run: echo tollgate", "exec_command", `{"cmd":"echo tollgate"}`},
		{"codex: view an image", codex, "open diagram.png", "exec_command", `{"cmd":"cat diagram.png"}`},
		{"codex: plain question", codex, "Reply with one short sentence about toll roads.", "", ""},
		// Codex's classic set: shell takes an argv, apply_patch a patch.
		{"codex classic: list the files", codexClassic, "list the files of the current directory", "shell", `{"command":["bash","-lc","ls"]}`},
		{"codex classic: create a file", codexClassic, "create a file hello.txt containing hi", "apply_patch",
			`{"input":"*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}`},
		// A knowledge base's MCP server: "the wiki" picks its search, not a grep.
		{"claude code + wiki: search the wiki", claudeWiki, "Search the wiki for billing", "mcp__tollgate__search_wiki", `{"q":"billing"}`},
		{"classic + wiki: search the knowledge base", classicWiki, "search the knowledge base for idempotency", "mcp__tollgate__search_wiki", `{"q":"idempotency"}`},
		{"classic + wiki: the code is still grepped", classicWiki, `search for "func main" in the code`, "Grep", `{"pattern":"func main"}`},
		// Any tool: what the request is about.
		{"a topic tool", weather, "What's the weather in Paris?", "get_weather", `{"city":"Paris"}`},
		{"no tool for another topic", weather, "What is a toll road?", "", ""},
	}
	for _, p := range protocol.All {
		for _, tc := range cases {
			t.Run(string(p)+"/"+tc.desc, func(t *testing.T) {
				a := decodeBody(t, p, mustChat(t, call(p, agentBody(p, tc.tools, tc.prompt))).Body)
				if a.tool != tc.tool {
					t.Fatalf("called %q (%s), want %q; text %q", a.tool, a.args, tc.tool, a.text)
				}
				if tc.tool == "" {
					return
				}
				if tc.args != "" && !jsonEqual(a.args, tc.args) {
					t.Fatalf("args %s, want %s", a.args, tc.args)
				}
				for _, tool := range tc.tools {
					if tool.Name != tc.tool {
						continue
					}
					var schema map[string]any
					var v any
					if err := json.Unmarshal(tool.Schema, &schema); err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal([]byte(a.args), &v); err != nil {
						t.Fatalf("args not JSON: %s", a.args)
					}
					if err := validate(schema, v, "$"); err != nil {
						t.Fatalf("%v: %s", err, a.args)
					}
				}
			})
		}
	}
}

// The tool turn of a plain request streams like any other call, and the
// tool's result ends the turn with text.
func TestPlainRequestToolTurnStreams(t *testing.T) {
	codex := loadTools(t, "codex-0.169.0-tools.json")
	for _, p := range protocol.All {
		t.Run(string(p), func(t *testing.T) {
			sink := mustStream(t, call(p, agentBody(p, codex, "list the files of the current directory")))
			var b strings.Builder
			for _, ev := range sink.events {
				b.Write(ev.Data)
			}
			if !strings.Contains(b.String(), "exec_command") {
				t.Fatalf("no exec_command call streamed: %s", b.String())
			}
		})
	}
}

// A Codex turn translated to a protocol whose turns alternate carries its
// environment context in the same user turn as the request: the context
// (here with a quoted "managed") is not what the user asked.
func TestToolForPlainRequestBesideCodexContext(t *testing.T) {
	codex := loadTools(t, "codex-0.169.0-tools.json")
	var ts []string
	for _, tl := range codex {
		d, _ := json.Marshal(tl.Description)
		ts = append(ts, fmt.Sprintf(`{"name":%q,"description":%s,"input_schema":%s}`, tl.Name, d, tl.Schema))
	}
	ctx, _ := json.Marshal(`<environment_context>
  <cwd>` + agentCwd + `</cwd>
  <filesystem><permission_profile type="managed"><entry access="write"><path>` + agentCwd + `</path></entry></permission_profile></filesystem>
</environment_context>`)
	body := fmt.Appendf(nil, `{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":"list the files of the current directory"}]}],"tools":[%s]}`,
		ctx, strings.Join(ts, ","))
	a := decodeBody(t, protocol.AnthropicMessages, mustChat(t, call(protocol.AnthropicMessages, body)).Body)
	if a.tool != "exec_command" || !jsonEqual(a.args, `{"cmd":"ls"}`) {
		t.Fatalf("called %q (%s), want exec_command ls", a.tool, a.args)
	}
}
