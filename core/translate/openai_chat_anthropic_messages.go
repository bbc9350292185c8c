package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// chatToMessages lets completions clients reach messages upstreams.
type chatToMessages struct{}

func (chatToMessages) From() protocol.ID { return protocol.OpenAIChat }
func (chatToMessages) To() protocol.ID   { return protocol.AnthropicMessages }

// defaultAnthropicMaxTokens is sent when neither the client nor the
// pipeline gave max tokens, which the messages protocol requires.
const defaultAnthropicMaxTokens = 4096

// turn is one message being built: its role and its comma-separated blocks.
type turn struct {
	role   string
	blocks []byte
}

// turns merges consecutive messages of one role, as the target protocols
// expect strictly alternating turns.
type turns []turn

func (t *turns) add(role string, block []byte) {
	if n := len(*t); n > 0 && (*t)[n-1].role == role {
		last := &(*t)[n-1]
		last.blocks = append(append(last.blocks, ','), block...)
		return
	}
	*t = append(*t, turn{role: role, blocks: append([]byte(nil), block...)})
}

func (chatToMessages) Request(body []byte, opts RequestOptions) ([]byte, []string, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, nil, err
	}
	var (
		w               warnings
		system          []byte
		msgs            turns
		maxTokens       int64
		temperature     string
		topP            string
		stop            []byte
		tools           []byte
		toolChoice      gjson.Result
		disableParallel bool
		user            string
		model           = opts.Model
		firstErr        error
		scratch         []byte
	)
	root.ForEach(func(k, v gjson.Result) bool {
		if !present(v) {
			return true
		}
		switch k.Str {
		case "model":
			if model == "" {
				model = v.Str
			}
		case "messages":
			system, msgs, firstErr = chatMessagesToAnthropic(v, &w)
		case "max_tokens", "max_completion_tokens":
			maxTokens = v.Int()
		case "temperature":
			temperature = v.Raw
			if v.Float() > 1 {
				temperature = "1"
			}
		case "top_p":
			topP = v.Raw
		case "stop":
			stop = appendStopArray(stop[:0], v)
		case "stream", "stream_options":
			// Streaming comes from opts; include_usage is honoured by the
			// translated stream itself.
		case "tools":
			tools, firstErr = chatToolsToAnthropic(v, &w)
		case "tool_choice":
			toolChoice = v
		case "parallel_tool_calls":
			disableParallel = v.Type == gjson.False
		case "user":
			user = rawString(v)
		case "response_format":
			if v.Get("type").Str != "text" {
				w.add(k.Str)
			}
		case "n":
			if v.Int() != 1 {
				w.add(k.Str)
			}
		default:
			w.add(k.Str)
		}
		return firstErr == nil
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if len(msgs) == 0 {
		return nil, nil, invalid("the conversation has no user or assistant message to send")
	}
	if maxTokens <= 0 {
		maxTokens = opts.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	out := make([]byte, 0, len(body)+256)
	out = append(out, '{')
	out = keyStr(out, "model", model)
	out = keyInt(out, "max_tokens", maxTokens)
	if len(system) > 0 {
		out = append(key(out, "system"), '[')
		out = append(out, system...)
		out = append(out, ']')
	}
	out = append(key(out, "messages"), '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"role":"`...)
		out = append(out, m.role...)
		out = append(out, `","content":[`...)
		out = append(out, m.blocks...)
		out = append(out, "]}"...)
	}
	out = append(out, ']')
	if temperature != "" {
		out = keyRaw(out, "temperature", temperature)
	}
	if topP != "" {
		out = keyRaw(out, "top_p", topP)
	}
	if len(stop) > 0 {
		out = append(key(out, "stop_sequences"), stop...)
	}
	if len(tools) > 0 {
		out = append(key(out, "tools"), '[')
		out = append(out, tools...)
		out = append(out, ']')
		scratch = anthropicToolChoice(scratch, toolChoice, disableParallel)
		if len(scratch) > 0 {
			out = append(key(out, "tool_choice"), scratch...)
		}
	}
	if user != "" {
		out = append(key(out, "metadata"), `{"user_id":`...)
		out = append(out, user...)
		out = append(out, '}')
	}
	if opts.Stream {
		out = append(key(out, "stream"), "true"...)
	}
	out = append(out, '}')
	return out, w, nil
}

// appendStopArray appends a stop value (string or array) as a JSON array.
func appendStopArray(b []byte, v gjson.Result) []byte {
	if v.Type == gjson.String {
		if v.Str == "" {
			return b
		}
		return append(append(append(b, '['), v.Raw...), ']')
	}
	if !isArray(v) {
		return b
	}
	b = append(b, '[')
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type == gjson.String && s.Str != "" {
			b = append(sep(b), s.Raw...)
		}
		return true
	})
	if len(b) == 1 || b[len(b)-1] == '[' {
		return b[:len(b)-1]
	}
	return append(b, ']')
}

func anthropicToolChoice(b []byte, tc gjson.Result, disableParallel bool) []byte {
	b = b[:0]
	typ := "auto"
	name := ""
	switch {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "none":
			typ = "none"
		case "required":
			typ = "any"
		}
	case isObject(tc):
		if n := tc.Get("function.name"); n.Type == gjson.String {
			typ, name = "tool", n.Raw
		}
	case !disableParallel:
		return b
	}
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, '"')
	if name != "" {
		b = keyRaw(b, "name", name)
	}
	if disableParallel && typ != "none" {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}

func chatToolsToAnthropic(v gjson.Result, w *warnings) ([]byte, error) {
	var out []byte
	var err error
	v.ForEach(func(_, t gjson.Result) bool {
		typ := t.Get("type").Str
		if typ != "function" {
			w.add("tools." + typ)
			return true
		}
		fn := t.Get("function")
		name := fn.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = invalid("every function tool needs a name")
			return false
		}
		out = sep(out)
		out = append(out, `{"name":`...)
		out = append(out, name.Raw...)
		if d := fn.Get("description"); d.Type == gjson.String {
			out = keyRaw(out, "description", d.Raw)
		}
		if p := fn.Get("parameters"); isObject(p) {
			out = keyRaw(out, "input_schema", p.Raw)
		} else {
			out = append(out, `,"input_schema":{"type":"object","properties":{}}`...)
		}
		out = append(out, '}')
		if s := fn.Get("strict"); present(s) {
			w.add("tools.function.strict")
		}
		return true
	})
	return out, err
}

// chatMessagesToAnthropic splits completions messages into the top-level
// system blocks and alternating user/assistant turns.
func chatMessagesToAnthropic(v gjson.Result, w *warnings) ([]byte, turns, error) {
	var (
		system []byte
		msgs   turns
		block  []byte
		err    error
	)
	v.ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").Str
		m.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "role", "content", "tool_calls", "tool_call_id":
			default:
				if present(f) {
					w.add("messages." + k.Str)
				}
			}
			return true
		})
		content := m.Get("content")
		switch role {
		case "system", "developer":
			err = eachTextPart(content, func(raw string) {
				system = sep(system)
				system = append(system, `{"type":"text","text":"`...)
				system = append(system, raw...)
				system = append(system, `"}`...)
			})
		case "user":
			err = eachChatPart(content, w, func(part gjson.Result) error {
				block, err = anthropicPart(block[:0], part)
				if err == nil && len(block) > 0 {
					msgs.add("user", block)
				}
				return err
			})
		case "assistant":
			err = eachTextPart(content, func(raw string) {
				block = append(block[:0], `{"type":"text","text":"`...)
				block = append(block, raw...)
				block = append(block, `"}`...)
				msgs.add("assistant", block)
			})
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				fn := tc.Get("function")
				args, ok := jsonObjectString(fn.Get("arguments").Str)
				if !ok {
					err = invalid("the arguments of tool call %s are not a JSON object", tc.Get("id").Str)
					return false
				}
				block = append(block[:0], `{"type":"tool_use","id":`...)
				block = append(block, rawString(tc.Get("id"))...)
				block = keyRaw(block, "name", rawString(fn.Get("name")))
				block = keyRaw(block, "input", args)
				block = append(block, '}')
				msgs.add("assistant", block)
				return true
			})
		case "tool":
			block = append(block[:0], `{"type":"tool_result","tool_use_id":`...)
			block = append(block, rawString(m.Get("tool_call_id"))...)
			block = append(block, `,"content":`...)
			if content.Type == gjson.String {
				block = append(block, content.Raw...)
			} else {
				block = append(block, '[')
				err = eachTextPart(content, func(raw string) {
					block = sep(block)
					block = append(block, `{"type":"text","text":"`...)
					block = append(block, raw...)
					block = append(block, `"}`...)
				})
				block = append(block, ']')
			}
			block = append(block, '}')
			msgs.add("user", block)
		default:
			err = invalid("the message role %q cannot be translated", role)
		}
		return err == nil
	})
	return system, msgs, err
}

// eachTextPart calls fn with the raw inside of every non-empty text of a
// string content or an array of text (or refusal) parts.
func eachTextPart(content gjson.Result, fn func(raw string)) error {
	if content.Type == gjson.String {
		if s := inner(content); s != "" {
			fn(s)
		}
		return nil
	}
	if !isArray(content) {
		return nil
	}
	var err error
	content.ForEach(func(_, p gjson.Result) bool {
		switch p.Get("type").Str {
		case "text":
			if s := inner(p.Get("text")); s != "" {
				fn(s)
			}
		case "refusal":
			if s := inner(p.Get("refusal")); s != "" {
				fn(s)
			}
		default:
			err = invalid("a %q content part can only appear in a user message", p.Get("type").Str)
		}
		return err == nil
	})
	return err
}

// eachChatPart calls fn with each part of a user content, a string content
// becoming one text part.
func eachChatPart(content gjson.Result, w *warnings, fn func(gjson.Result) error) error {
	if content.Type == gjson.String {
		if content.Str == "" {
			return nil
		}
		return fn(content)
	}
	var err error
	content.ForEach(func(_, p gjson.Result) bool {
		if d := p.Get("image_url.detail"); present(d) {
			w.add("messages.content.image_url.detail")
		}
		err = fn(p)
		return err == nil
	})
	return err
}

// anthropicPart converts one user content part (or a plain string) to a
// content block; empty text gives no block.
func anthropicPart(b []byte, p gjson.Result) ([]byte, error) {
	if p.Type == gjson.String {
		b = append(b, `{"type":"text","text":`...)
		b = append(b, p.Raw...)
		return append(b, '}'), nil
	}
	switch typ := p.Get("type").Str; typ {
	case "text":
		t := p.Get("text")
		if t.Type != gjson.String || t.Str == "" {
			return b, nil
		}
		b = append(b, `{"type":"text","text":`...)
		b = append(b, t.Raw...)
		return append(b, '}'), nil
	case "image_url":
		return anthropicMedia(b, p.Get("image_url.url").Str)
	case "file":
		f := p.Get("file")
		if fd := f.Get("file_data").Str; fd != "" {
			if !strings.HasPrefix(fd, "data:") {
				fd = "data:application/pdf;base64," + fd
			}
			return anthropicMedia(b, fd)
		}
		return nil, invalid("a file part must carry file_data; file ids cannot be sent to this model's upstream")
	default:
		return nil, invalid("a %q content part cannot be sent to this model's upstream", typ)
	}
}

// anthropicMedia builds an image (or PDF document) block from a data: or
// http(s) URL.
func anthropicMedia(b []byte, u string) ([]byte, error) {
	if mime, data, ok := dataURL(u); ok {
		kind := "image"
		if mime == "application/pdf" {
			kind = "document"
		}
		b = append(b, `{"type":"`...)
		b = append(b, kind...)
		b = append(b, `","source":{"type":"base64","media_type":"`...)
		b = append(b, mime...)
		b = append(b, `","data":`...)
		b = appendStr(b, data)
		return append(b, "}}"...), nil
	}
	if isHTTPURL(u) {
		kind := "image"
		if mimeFromURL(u) == "application/pdf" {
			kind = "document"
		}
		b = append(b, `{"type":"`...)
		b = append(b, kind...)
		b = append(b, `","source":{"type":"url","url":`...)
		b = appendStr(b, u)
		return append(b, "}}"...), nil
	}
	return nil, invalid("an image must be an http(s) URL or a base64 data: URL")
}

// anthropicStopToChat maps a messages stop_reason to a finish_reason.
func anthropicStopToChat(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func readAnthropicUsage(u gjson.Result, into *usage) {
	base := into.input - into.cached - into.cacheWrite
	if x := u.Get("input_tokens"); x.Exists() {
		base = x.Int()
	}
	if x := u.Get("cache_read_input_tokens"); x.Exists() {
		into.cached = x.Int()
	}
	if x := u.Get("cache_creation_input_tokens"); x.Exists() {
		into.cacheWrite = x.Int()
	}
	into.input = base + into.cached + into.cacheWrite
	if x := u.Get("output_tokens"); x.Exists() {
		into.output = x.Int()
	}
}

func (chatToMessages) Response(body []byte, o ResponseOptions) ([]byte, error) {
	r, err := parseEvent(body)
	if err != nil {
		return nil, err
	}
	var (
		text  []byte
		calls []toolCall
		u     usage
	)
	r.Get("content").ForEach(func(_, c gjson.Result) bool {
		switch c.Get("type").Str {
		case "text":
			text = append(text, inner(c.Get("text"))...)
		case "tool_use":
			in := c.Get("input")
			args := "{}"
			if isObject(in) {
				args = in.Raw
			}
			calls = append(calls, toolCall{
				id:   rawString(c.Get("id")),
				name: rawString(c.Get("name")),
				args: string(appendStr(nil, args)),
			})
		}
		return true
	})
	readAnthropicUsage(r.Get("usage"), &u)
	finish := anthropicStopToChat(r.Get("stop_reason").Str)
	out := make([]byte, 0, len(body)+256)
	return appendChatCompletion(out, o, bstr(text), false, calls, finish, u), nil
}

func (chatToMessages) NewStream(o ResponseOptions) Stream {
	return &messagesToChatStream{out: newChatOut(o)}
}

// messagesToChatStream turns messages events into completions chunks.
type messagesToChatStream struct {
	out    chatOut
	blocks []int // messages block index -> tool call index, -1 for others
	tools  int
}

func (s *messagesToChatStream) Event(ev protocol.Event, emit func(protocol.Event) error) error {
	r, err := parseEvent(ev.Data)
	if err != nil {
		return err
	}
	switch r.Get("type").Str {
	case "message_start":
		readAnthropicUsage(r.Get("message.usage"), &s.out.usage)
		return s.out.role(emit)
	case "content_block_start":
		idx := int(r.Get("index").Int())
		cb := r.Get("content_block")
		for len(s.blocks) <= idx && idx < 1<<16 {
			s.blocks = append(s.blocks, -1)
		}
		switch cb.Get("type").Str {
		case "tool_use":
			if idx >= len(s.blocks) {
				return nil
			}
			s.blocks[idx] = s.tools
			s.tools++
			return s.out.toolStart(emit, s.blocks[idx], rawString(cb.Get("id")), rawString(cb.Get("name")), `""`)
		case "text":
			return s.out.text(emit, inner(cb.Get("text")))
		}
	case "content_block_delta":
		d := r.Get("delta")
		switch d.Get("type").Str {
		case "text_delta":
			return s.out.text(emit, inner(d.Get("text")))
		case "input_json_delta":
			idx := int(r.Get("index").Int())
			if idx < 0 || idx >= len(s.blocks) || s.blocks[idx] < 0 {
				return nil
			}
			return s.out.toolArgs(emit, s.blocks[idx], inner(d.Get("partial_json")))
		}
	case "message_delta":
		readAnthropicUsage(r.Get("usage"), &s.out.usage)
		if sr := r.Get("delta.stop_reason"); sr.Type == gjson.String {
			return s.out.finish(emit, anthropicStopToChat(sr.Str))
		}
	}
	return nil
}

func (s *messagesToChatStream) End(emit func(protocol.Event) error) error {
	return s.out.end(emit)
}
