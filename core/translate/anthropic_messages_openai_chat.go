package translate

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// messagesToChat lets messages clients reach completions upstreams (enabled
// per model by translate_from).
type messagesToChat struct{}

func (messagesToChat) From() protocol.ID { return protocol.AnthropicMessages }
func (messagesToChat) To() protocol.ID   { return protocol.OpenAIChat }

// chatBody collects the pieces of an upstream completions body.
type chatBody struct {
	model    string
	system   []byte // raw inside of the system prompt string
	msgs     []byte // comma-separated message objects
	extra    []byte // further fields, comma-separated
	maxToken int64
}

func (c *chatBody) message(m []byte) { c.msgs = append(sep(c.msgs), m...) }

func (c *chatBody) build(opts RequestOptions, sizeHint int) []byte {
	out := make([]byte, 0, sizeHint+256)
	out = append(out, '{')
	out = keyStr(out, "model", c.model)
	out = append(key(out, "messages"), '[')
	if len(c.system) > 0 {
		out = append(out, `{"role":"system","content":"`...)
		out = append(out, c.system...)
		out = append(out, `"}`...)
	}
	if len(c.msgs) > 0 {
		out = append(sep(out), c.msgs...)
	}
	out = append(out, ']')
	mt := c.maxToken
	if mt <= 0 {
		mt = opts.MaxTokens
	}
	if mt > 0 {
		out = keyInt(out, "max_tokens", mt)
	}
	if len(c.extra) > 0 {
		out = append(sep(out), c.extra...)
	}
	if opts.Stream {
		out = append(key(out, "stream"), "true"...)
		out = append(key(out, "stream_options"), `{"include_usage":true}`...)
	}
	return append(out, '}')
}

// appendSystemText adds raw text to a system prompt, a newline apart.
func appendSystemText(b []byte, raw string) []byte {
	if raw == "" {
		return b
	}
	if len(b) > 0 {
		b = append(b, `\n`...)
	}
	return append(b, raw...)
}

func (messagesToChat) Request(body []byte, opts RequestOptions) ([]byte, []string, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, nil, err
	}
	var (
		w          warnings
		c          = chatBody{model: opts.Model}
		tools      []byte
		toolChoice gjson.Result
		firstErr   error
	)
	root.ForEach(func(k, v gjson.Result) bool {
		if !present(v) {
			return true
		}
		switch k.Str {
		case "model":
			if c.model == "" {
				c.model = v.Str
			}
		case "max_tokens":
			c.maxToken = v.Int()
		case "system":
			if v.Type == gjson.String {
				c.system = appendSystemText(c.system, inner(v))
				return true
			}
			v.ForEach(func(_, b gjson.Result) bool {
				if present(b.Get("cache_control")) {
					w.add("cache_control")
				}
				c.system = appendSystemText(c.system, inner(b.Get("text")))
				return true
			})
		case "messages":
			firstErr = messagesToChatMessages(v, &c, &w)
		case "stop_sequences":
			if s := appendStopArray(nil, v); len(s) > 0 {
				c.extra = append(key(c.extra, "stop"), s...)
			}
		case "temperature", "top_p":
			c.extra = keyRaw(c.extra, k.Str, v.Raw)
		case "stream":
		case "tools":
			tools, firstErr = messagesToolsToChat(v, &w)
		case "tool_choice":
			toolChoice = v
		case "thinking":
			// Extended thinking's budget as the completions API's effort,
			// by the budgets commonly used for each effort (1024, 2048,
			// 4096 tokens); disabled thinking asks for nothing.
			switch v.Get("type").Str {
			case "enabled":
				if !opts.Reasoning {
					w.add(k.Str)
					break
				}
				c.extra = keyRaw(c.extra, "reasoning_effort", `"`+effortOf(v.Get("budget_tokens").Int())+`"`)
			case "disabled":
			default:
				w.add(k.Str)
			}
		case "metadata":
			v.ForEach(func(mk, mv gjson.Result) bool {
				if mk.Str == "user_id" && mv.Type == gjson.String {
					c.extra = keyRaw(c.extra, "user", mv.Raw)
				} else if present(mv) {
					w.add("metadata." + mk.Str)
				}
				return true
			})
		default:
			w.add(k.Str)
		}
		return firstErr == nil
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if len(tools) > 0 {
		c.extra = append(key(c.extra, "tools"), '[')
		c.extra = append(c.extra, tools...)
		c.extra = append(c.extra, ']')
		if isObject(toolChoice) {
			c.extra = appendChatToolChoice(c.extra, toolChoice)
		}
	}
	return c.build(opts, len(body)), w, nil
}

func appendChatToolChoice(b []byte, tc gjson.Result) []byte {
	switch tc.Get("type").Str {
	case "auto":
		b = keyStr(b, "tool_choice", "auto")
	case "any":
		b = keyStr(b, "tool_choice", "required")
	case "none":
		b = keyStr(b, "tool_choice", "none")
	case "tool":
		b = append(key(b, "tool_choice"), `{"type":"function","function":{"name":`...)
		b = append(b, rawString(tc.Get("name"))...)
		b = append(b, "}}"...)
	}
	if tc.Get("disable_parallel_tool_use").Type == gjson.True {
		b = append(key(b, "parallel_tool_calls"), "false"...)
	}
	return b
}

func messagesToolsToChat(v gjson.Result, w *warnings) ([]byte, error) {
	var out []byte
	var err error
	v.ForEach(func(_, t gjson.Result) bool {
		if typ := t.Get("type").Str; typ != "" && typ != "custom" {
			w.add("tools." + typ)
			return true
		}
		name := t.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = invalid("every tool needs a name")
			return false
		}
		if present(t.Get("cache_control")) {
			w.add("cache_control")
		}
		out = sep(out)
		out = append(out, `{"type":"function","function":{"name":`...)
		out = append(out, name.Raw...)
		if d := t.Get("description"); d.Type == gjson.String {
			out = keyRaw(out, "description", d.Raw)
		}
		if s := t.Get("input_schema"); isObject(s) {
			out = keyRaw(out, "parameters", s.Raw)
		}
		out = append(out, "}}"...)
		return true
	})
	return out, err
}

// messagesToChatMessages converts the messages array. A user turn's
// tool_result blocks become tool messages placed first, as completions
// requires them right after the assistant's tool calls.
func messagesToChatMessages(v gjson.Result, c *chatBody, w *warnings) error {
	var (
		err   error
		parts []byte // user content parts
		text  []byte // assistant text, raw inside
		calls []byte // assistant tool_calls
		m     []byte
	)
	v.ForEach(func(_, msg gjson.Result) bool {
		role := msg.Get("role").Str
		content := msg.Get("content")
		switch role {
		case "user":
			if content.Type == gjson.String {
				m = append(m[:0], `{"role":"user","content":`...)
				m = append(m, content.Raw...)
				c.message(append(m, '}'))
				return true
			}
			parts = parts[:0]
			content.ForEach(func(_, b gjson.Result) bool {
				if present(b.Get("cache_control")) {
					w.add("cache_control")
				}
				if b.Get("type").Str == "tool_result" {
					var media []byte
					m, media, err = toolResultMessage(m[:0], b, w)
					if err == nil {
						c.message(m)
						if len(media) > 0 {
							parts = append(sep(parts), media...)
						}
					}
					return err == nil
				}
				parts, err = chatPartFromBlock(parts, b, w)
				return err == nil
			})
			if err == nil && len(parts) > 0 {
				m = append(m[:0], `{"role":"user","content":[`...)
				m = append(m, parts...)
				c.message(append(m, "]}"...))
			}
		case "assistant":
			text, calls = text[:0], calls[:0]
			if content.Type == gjson.String {
				text = append(text, inner(content)...)
			}
			eachElement(content, func(b gjson.Result) bool {
				if present(b.Get("cache_control")) {
					w.add("cache_control")
				}
				switch typ := b.Get("type").Str; typ {
				case "text":
					text = append(text, inner(b.Get("text"))...)
				case "tool_use":
					calls = sep(calls)
					calls = append(calls, `{"id":`...)
					calls = append(calls, rawString(b.Get("id"))...)
					calls = append(calls, `,"type":"function","function":{"name":`...)
					calls = append(calls, rawString(b.Get("name"))...)
					in := b.Get("input")
					args := "{}"
					if isObject(in) {
						args = in.Raw
					}
					calls = appendStr(append(calls, `,"arguments":`...), args)
					calls = append(calls, "}}"...)
				default:
					w.add("messages.content." + typ)
				}
				return true
			})
			m = append(m[:0], `{"role":"assistant","content":`...)
			if len(text) > 0 || len(calls) == 0 {
				m = append(append(append(m, '"'), text...), '"')
			} else {
				m = append(m, "null"...)
			}
			if len(calls) > 0 {
				m = append(append(append(m, `,"tool_calls":[`...), calls...), ']')
			}
			c.message(append(m, '}'))
		case "system":
			// A mid-conversation system message (Claude Code sends them)
			// stays a system message where it stands.
			text = text[:0]
			if content.Type == gjson.String {
				text = append(text, inner(content)...)
			}
			eachElement(content, func(b gjson.Result) bool {
				if present(b.Get("cache_control")) {
					w.add("cache_control")
				}
				if typ := b.Get("type").Str; typ != "text" {
					w.add("messages.content." + typ)
					return true
				}
				if len(text) > 0 {
					text = append(text, `\n\n`...)
				}
				text = append(text, inner(b.Get("text"))...)
				return true
			})
			m = append(m[:0], `{"role":"system","content":"`...)
			m = append(m, text...)
			c.message(append(m, `"}`...))
		default:
			err = invalid("the message role %q cannot be translated", role)
		}
		return err == nil
	})
	return err
}

// toolResultMessage builds a tool message; images of the result come back
// as user content parts, since tool messages carry text only.
func toolResultMessage(m []byte, b gjson.Result, w *warnings) ([]byte, []byte, error) {
	var media []byte
	var err error
	if present(b.Get("is_error")) && b.Get("is_error").Type == gjson.True {
		w.add("messages.content.is_error")
	}
	m = append(m, `{"role":"tool","tool_call_id":`...)
	m = append(m, rawString(b.Get("tool_use_id"))...)
	m = append(m, `,"content":"`...)
	content := b.Get("content")
	if content.Type == gjson.String {
		m = append(m, inner(content)...)
	} else {
		first := true
		content.ForEach(func(_, cb gjson.Result) bool {
			if present(cb.Get("cache_control")) {
				w.add("cache_control")
			}
			switch cb.Get("type").Str {
			case "text":
				if !first {
					m = append(m, `\n`...)
				}
				first = false
				m = append(m, inner(cb.Get("text"))...)
			default:
				media, err = chatPartFromBlock(media, cb, w)
			}
			return err == nil
		})
	}
	return append(m, `"}`...), media, err
}

// chatPartFromBlock appends the completions content part of a messages
// user block.
func chatPartFromBlock(parts []byte, b gjson.Result, w *warnings) ([]byte, error) {
	switch typ := b.Get("type").Str; typ {
	case "text":
		parts = append(sep(parts), `{"type":"text","text":`...)
		parts = append(parts, rawString(b.Get("text"))...)
		return append(parts, '}'), nil
	case "image", "document":
		src := b.Get("source")
		switch src.Get("type").Str {
		case "base64":
			mime := src.Get("media_type").Str
			if typ == "image" {
				parts = append(sep(parts), `{"type":"image_url","image_url":{"url":"data:`...)
			} else {
				parts = append(sep(parts), `{"type":"file","file":{"filename":"document.pdf","file_data":"data:`...)
			}
			parts = appendEscaped(parts, mime)
			parts = append(parts, ";base64,"...)
			parts = append(parts, inner(src.Get("data"))...)
			return append(parts, `"}}`...), nil
		case "url":
			if typ == "image" {
				parts = append(sep(parts), `{"type":"image_url","image_url":{"url":`...)
				parts = append(parts, rawString(src.Get("url"))...)
				return append(parts, "}}"...), nil
			}
		case "text":
			parts = append(sep(parts), `{"type":"text","text":`...)
			parts = append(parts, rawString(src.Get("data"))...)
			return append(parts, '}'), nil
		}
		return nil, invalid("a %s with a %q source cannot be sent to this model's upstream", typ, src.Get("type").Str)
	default:
		w.add("messages.content." + typ)
		return parts, nil
	}
}

// chatFinishToAnthropic maps a finish_reason to a stop_reason.
func chatFinishToAnthropic(s string) string {
	switch s {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

func appendAnthropicUsage(b []byte, u usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, max(u.input-u.cached-u.cacheWrite, 0), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.output, 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, u.cached, 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, u.cacheWrite, 10)
	return append(b, '}')
}

func messageID(o ResponseOptions) string { return "msg_" + o.RequestID }

// argsObject turns a raw JSON string of tool arguments into an object text.
func argsObject(raw string) string {
	if s, ok := jsonObjectString(unescape(raw)); ok {
		return s
	}
	return "{}"
}

func (messagesToChat) Response(body []byte, o ResponseOptions) ([]byte, error) {
	res, err := readChatCompletion(body)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(body)+256)
	b = append(b, `{"id":`...)
	b = appendStr(b, messageID(o))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendStr(b, o.Model)
	b = append(b, `,"content":[`...)
	if res.text != "" {
		b = append(b, `{"type":"text","text":"`...)
		b = append(b, res.text...)
		b = append(b, `"}`...)
	}
	for _, c := range res.calls {
		b = append(sep(b), `{"type":"tool_use","id":`...)
		b = append(b, c.id...)
		b = append(b, `,"name":`...)
		b = append(b, c.name...)
		b = append(b, `,"input":`...)
		b = append(b, argsObject(inner(gjson.Parse(c.args)))...)
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = appendStr(b, chatFinishToAnthropic(res.finish))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendAnthropicUsage(b, res.usage)
	return append(b, '}'), nil
}

func (messagesToChat) NewStream(o ResponseOptions) Stream {
	return &chatToMessagesStream{opts: o}
}

// chatToMessagesStream turns completions chunks into messages events.
// Blocks open in index order and close before the next one opens, which
// is what the SDKs' accumulators require.
type chatToMessagesStream struct {
	opts     ResponseOptions
	d        chatDelta
	started  bool
	open     bool  // a block is open
	openIdx  int   // its index
	next     int   // index of the next block
	tools    []int // completions tool index -> block index, -1 before it starts
	textOpen bool
	finish   string
	usage    usage
}

func emitNamed(emit func(protocol.Event) error, name string, b []byte) error {
	return emit(protocol.Event{Name: name, Data: b})
}

func (s *chatToMessagesStream) start(emit func(protocol.Event) error) error {
	if s.started {
		return nil
	}
	s.started = true
	b := make([]byte, 0, 256)
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = appendStr(b, messageID(s.opts))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendStr(b, s.opts.Model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`...)
	return emitNamed(emit, "message_start", b)
}

func (s *chatToMessagesStream) closeBlock(emit func(protocol.Event) error) error {
	if !s.open {
		return nil
	}
	s.open, s.textOpen = false, false
	b := make([]byte, 0, 48)
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(s.openIdx), 10)
	return emitNamed(emit, "content_block_stop", append(b, '}'))
}

func (s *chatToMessagesStream) openBlock(emit func(protocol.Event) error, block []byte) error {
	if err := s.closeBlock(emit); err != nil {
		return err
	}
	s.open, s.openIdx = true, s.next
	s.next++
	b := make([]byte, 0, 64+len(block))
	b = append(b, `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(s.openIdx), 10)
	b = append(b, `,"content_block":`...)
	b = append(b, block...)
	return emitNamed(emit, "content_block_start", append(b, '}'))
}

func (s *chatToMessagesStream) delta(emit func(protocol.Event) error, idx int, kind, field, raw string) error {
	b := make([]byte, 0, 96+len(raw))
	b = append(b, `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":"`...)
	b = append(b, raw...)
	return emitNamed(emit, "content_block_delta", append(b, `"}}`...))
}

func (s *chatToMessagesStream) Event(ev protocol.Event, emit func(protocol.Event) error) error {
	d := &s.d
	if err := readChatChunk(ev.Data, d); err != nil {
		return err
	}
	if d.done {
		return nil
	}
	if d.hasUsage {
		s.usage = d.usage
	}
	if err := s.start(emit); err != nil {
		return err
	}
	if d.text != "" {
		if !s.textOpen {
			if err := s.openBlock(emit, []byte(`{"type":"text","text":""}`)); err != nil {
				return err
			}
			s.textOpen = true
		}
		if err := s.delta(emit, s.openIdx, "text_delta", "text", d.text); err != nil {
			return err
		}
	}
	for _, t := range d.tools {
		if t.index < 0 || t.index > 1<<10 {
			continue
		}
		for len(s.tools) <= t.index {
			s.tools = append(s.tools, -1)
		}
		if s.tools[t.index] < 0 {
			id := t.id
			if id == "" {
				id = `"` + syntheticCallID(t.index) + `"`
			}
			name := t.name
			if name == "" {
				name = `""`
			}
			block := make([]byte, 0, 64+len(id)+len(name))
			block = append(block, `{"type":"tool_use","id":`...)
			block = append(block, id...)
			block = append(block, `,"name":`...)
			block = append(block, name...)
			block = append(block, `,"input":{}}`...)
			if err := s.openBlock(emit, block); err != nil {
				return err
			}
			s.tools[t.index] = s.openIdx
		}
		if t.args != "" {
			if err := s.delta(emit, s.tools[t.index], "input_json_delta", "partial_json", t.args); err != nil {
				return err
			}
		}
	}
	if d.finish != "" && s.finish == "" {
		s.finish = d.finish
		return s.closeBlock(emit)
	}
	return nil
}

func (s *chatToMessagesStream) End(emit func(protocol.Event) error) error {
	if err := s.start(emit); err != nil {
		return err
	}
	if err := s.closeBlock(emit); err != nil {
		return err
	}
	b := make([]byte, 0, 224)
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendStr(b, chatFinishToAnthropic(s.finish))
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = appendAnthropicUsage(b, s.usage)
	if err := emitNamed(emit, "message_delta", append(b, '}')); err != nil {
		return err
	}
	return emitNamed(emit, "message_stop", []byte(`{"type":"message_stop"}`))
}

// effortOf is the reasoning effort closest to a thinking budget.
func effortOf(budget int64) string {
	switch {
	case budget <= 1024:
		return "low"
	case budget <= 2048:
		return "medium"
	}
	return "high"
}
