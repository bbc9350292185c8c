package sim

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// conv is what the engine reads from a request body. Its strings point into
// the body, which stays unchanged for the duration of a call.
type conv struct {
	model        string
	inputBytes   int64  // bytes of the conversation's raw JSON values (the usage rule)
	userText     string // text of the last message when it is the user's
	lastIsUser   bool
	hasResult    bool   // the last message carries a tool result
	result       string // that result, as text or raw JSON
	tools        gjson.Result
	body         string       // the whole request, searched for the agent's working directory
	instructions gjson.Result // responses: echoed in the response object
	maxTokens    int64
	includeUsage bool // completions: stream_options.include_usage
}

// toolDef is one offered function tool.
type toolDef struct {
	name   string
	desc   string
	schema gjson.Result
}

// contextBlock reports whether a text block is context an agent adds to a
// user turn, not what the user asked: Claude Code's reminders, and Codex's
// environment context (its own user message, which lands in the user's
// turn when a call is translated to a protocol whose turns alternate).
func contextBlock(t string) bool {
	return strings.HasPrefix(t, "<system-reminder>") || strings.HasPrefix(t, "<environment_context>")
}

// readConv parses body in protocol p and applies the markers found in the
// conversation to k.
func readConv(p protocol.ID, body string, k *Knobs) conv {
	c := conv{body: body}
	root := gjson.Parse(body)
	var last gjson.Result
	switch p {
	case protocol.OpenAIChat:
		msgs := root.Get("messages")
		c.count(msgs, k)
		last = lastTurn(msgs)
		switch last.Get("role").Str {
		case "tool":
			c.hasResult, c.result = true, chatText(last.Get("content"))
		case "user":
			c.lastIsUser, c.userText = true, chatText(last.Get("content"))
		}
		c.tools = root.Get("tools")
		c.maxTokens = root.Get("max_completion_tokens").Int()
		if c.maxTokens == 0 {
			c.maxTokens = root.Get("max_tokens").Int()
		}
		c.includeUsage = root.Get("stream_options.include_usage").Bool()
	case protocol.AnthropicMessages:
		msgs := root.Get("messages")
		c.count(msgs, k)
		c.count(root.Get("system"), k)
		last = lastTurn(msgs)
		if last.Get("role").Str == "user" {
			c.messagesUser(last.Get("content"))
		}
		c.tools = root.Get("tools")
		c.maxTokens = root.Get("max_tokens").Int()
	case protocol.OpenAIResponses:
		in := root.Get("input")
		c.count(in, k)
		c.count(root.Get("instructions"), k)
		if in.Type == gjson.String {
			c.lastIsUser, c.userText = true, in.Str
		} else {
			last = lastElem(in)
			switch {
			case last.Get("type").Str == "function_call_output":
				c.hasResult, c.result = true, chatText(last.Get("output"))
			case last.Get("role").Str == "user":
				c.lastIsUser, c.userText = true, chatText(last.Get("content"))
			}
		}
		c.tools = root.Get("tools")
		c.instructions = root.Get("instructions")
		c.maxTokens = root.Get("max_output_tokens").Int()
	case protocol.GeminiNative:
		contents := root.Get("contents")
		c.count(contents, k)
		c.count(root.Get("systemInstruction"), k)
		c.count(root.Get("system_instruction"), k)
		last = lastElem(contents)
		if r := last.Get("role").Str; r == "user" || r == "" {
			c.geminiUser(last.Get("parts"))
		}
		c.tools = root.Get("tools")
		c.maxTokens = root.Get("generationConfig.maxOutputTokens").Int()
	}
	if p != protocol.GeminiNative {
		c.model = root.Get("model").Str
	}
	return c
}

// count adds a conversation field to the usage count and reads its markers.
func (c *conv) count(v gjson.Result, k *Knobs) {
	if !v.Exists() || v.Type == gjson.Null {
		return
	}
	c.inputBytes += int64(len(v.Raw))
	scanMarkers(v.Raw, k)
}

func lastElem(arr gjson.Result) gjson.Result {
	if !arr.IsArray() {
		return gjson.Result{}
	}
	var last gjson.Result
	arr.ForEach(func(_, v gjson.Result) bool {
		last = v
		return true
	})
	return last
}

// lastTurn is the last message that is not a system message: Claude Code
// appends system-role notes after the user's turn for some models.
func lastTurn(arr gjson.Result) gjson.Result {
	if !arr.IsArray() {
		return gjson.Result{}
	}
	var last gjson.Result
	arr.ForEach(func(_, v gjson.Result) bool {
		if r := v.Get("role").Str; r != "system" && r != "developer" {
			last = v
		}
		return true
	})
	return last
}

// chatText is the text of a content value: a string, or the text of its
// parts (completions text parts, responses input_text/output_text parts).
func chatText(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	if !v.IsArray() {
		return v.Raw
	}
	return joinTexts(v, func(part gjson.Result) (string, bool) {
		t := part.Get("text")
		return t.Str, t.Type == gjson.String
	})
}

// joinTexts joins the texts pick finds in arr, skipping system reminders;
// one text is returned without copying.
func joinTexts(arr gjson.Result, pick func(gjson.Result) (string, bool)) string {
	var first string
	var b *strings.Builder
	n := 0
	arr.ForEach(func(_, part gjson.Result) bool {
		t, ok := pick(part)
		if !ok || contextBlock(t) {
			return true
		}
		switch n {
		case 0:
			first = t
		case 1:
			b = &strings.Builder{}
			b.WriteString(first)
			fallthrough
		default:
			b.WriteByte('\n')
			b.WriteString(t)
		}
		n++
		return true
	})
	if b != nil {
		return b.String()
	}
	return first
}

func (c *conv) messagesUser(content gjson.Result) {
	if content.Type == gjson.String {
		c.lastIsUser, c.userText = true, content.Str
		return
	}
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_result" {
			c.hasResult, c.result = true, chatText(b.Get("content"))
			return false
		}
		return true
	})
	if c.hasResult {
		return
	}
	c.lastIsUser = true
	c.userText = joinTexts(content, func(b gjson.Result) (string, bool) {
		return b.Get("text").Str, b.Get("type").Str == "text"
	})
}

func (c *conv) geminiUser(parts gjson.Result) {
	parts.ForEach(func(_, p gjson.Result) bool {
		if fr := p.Get("functionResponse"); fr.Exists() {
			c.hasResult, c.result = true, fr.Get("response").Raw
			return false
		}
		return true
	})
	if c.hasResult {
		return
	}
	c.lastIsUser = true
	c.userText = joinTexts(parts, func(p gjson.Result) (string, bool) {
		t := p.Get("text")
		return t.Str, t.Type == gjson.String
	})
}

// eachTool calls fn for every function tool offered, in order, until fn
// returns false.
func eachTool(p protocol.ID, tools gjson.Result, fn func(toolDef) bool) {
	tools.ForEach(func(_, t gjson.Result) bool {
		switch p {
		case protocol.OpenAIChat:
			if ty := t.Get("type").Str; ty == "function" || ty == "" {
				f := t.Get("function")
				return fn(toolDef{name: f.Get("name").Str, desc: f.Get("description").Str, schema: f.Get("parameters")})
			}
		case protocol.AnthropicMessages:
			// Server tools (web_search_...) have a type and no input_schema.
			if s := t.Get("input_schema"); s.Exists() {
				return fn(toolDef{name: t.Get("name").Str, desc: t.Get("description").Str, schema: s})
			}
		case protocol.OpenAIResponses:
			if t.Get("type").Str == "function" {
				return fn(toolDef{name: t.Get("name").Str, desc: t.Get("description").Str, schema: t.Get("parameters")})
			}
		case protocol.GeminiNative:
			cont := true
			decls := t.Get("functionDeclarations")
			if !decls.Exists() {
				decls = t.Get("function_declarations")
			}
			decls.ForEach(func(_, d gjson.Result) bool {
				s := d.Get("parameters")
				if !s.Exists() {
					s = d.Get("parametersJsonSchema")
				}
				cont = fn(toolDef{name: d.Get("name").Str, desc: d.Get("description").Str, schema: s})
				return cont
			})
			return cont
		}
		return true
	})
}
