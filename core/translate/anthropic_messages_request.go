package translate

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The messages protocol's request side.

var messagesSide = side{
	id:        protocol.AnthropicMessages,
	decode:    decodeMessages,
	encode:    encodeMessages,
	read:      readMessages,
	write:     writeMessages,
	newReader: func(rs *readers) reader { return &rs.messages },
	newStream: streamFor[messagesWriter],
}

// defaultAnthropicMaxTokens is sent when neither the client nor the
// pipeline gave max tokens, which the messages protocol requires.
const defaultAnthropicMaxTokens = 4096

func decodeMessages(root gjson.Result, t target, c *conv) error {
	w := &c.warn
	err := eachField(root, func(k, v gjson.Result) error {
		switch k.Str {
		case "model":
			c.model = v.Str
		case "stream":
		case "max_tokens":
			c.maxTokens = v.Int()
		case "system":
			if v.Type == gjson.String {
				if s := inner(v); s != "" {
					c.system = append(c.system, s)
				}
				return nil
			}
			eachElement(v, func(b gjson.Result) bool {
				if present(b.Get("cache_control")) {
					w.add("cache_control")
				}
				if s := inner(b.Get("text")); s != "" {
					c.system = append(c.system, s)
				}
				return true
			})
		case "messages":
			return messagesIn(v, c, t, w)
		case "stop_sequences":
			if t.can(featStop) {
				c.stop = appendStops(c.stop[:0], v)
			} else {
				w.add(k.Str)
			}
		case "temperature":
			c.temperature = v.Raw
		case "top_p":
			c.topP = v.Raw
		case "top_k":
			if t.can(featTopK) {
				c.topK = v.Raw
			} else {
				w.add(k.Str)
			}
		case "tools":
			return messagesToolsIn(v, c, w)
		case "tool_choice":
			switch typ := v.Get("type").Str; typ {
			case "auto", "none":
				c.choice.mode = typ
			case "any":
				c.choice.mode = "required"
			case "tool":
				c.choice = toolChoice{mode: "tool", name: inner(v.Get("name"))}
			}
			if v.Get("disable_parallel_tool_use").Type == gjson.True {
				if t.can(featParallel) {
					c.noParallel = true
				} else {
					w.add("tool_choice.disable_parallel_tool_use")
				}
			}
		case "thinking":
			// Extended thinking's budget as an effort, by the budgets
			// commonly used for each effort; disabled asks for nothing.
			switch v.Get("type").Str {
			case "enabled":
				if !t.can(featReasoning) {
					w.add(k.Str)
					break
				}
				c.budget = v.Get("budget_tokens").Int()
				c.effort = effortOf(c.budget)
			case "disabled":
			default:
				w.add(k.Str)
			}
		case "metadata":
			v.ForEach(func(mk, mv gjson.Result) bool {
				switch {
				case !present(mv):
				case mk.Str == "user_id" && mv.Type == gjson.String && t.can(featUser):
					c.user = mv.Raw
				default:
					w.add("metadata." + mk.Str)
				}
				return true
			})
		default:
			w.add(k.Str)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return nil
}

func messagesToolsIn(v gjson.Result, c *conv, w *warnings) error {
	var err error
	eachElement(v, func(tl gjson.Result) bool {
		if typ := tl.Get("type").Str; typ != "" && typ != "custom" {
			w.add("tools." + typ)
			return true
		}
		name := tl.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = invalid("every tool needs a name")
			return false
		}
		tt := tool{name: inner(name)}
		tl.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "name", "type":
			case "description":
				tt.desc = stringRaw(f)
			case "input_schema":
				if isObject(f) {
					tt.params = f.Raw
				}
			case "cache_control":
				if present(f) {
					w.add("cache_control")
				}
			default:
				if present(f) {
					w.add("tools." + k.Str)
				}
			}
			return true
		})
		c.tools = append(c.tools, tt)
		return true
	})
	return err
}

func messagesIn(v gjson.Result, c *conv, t target, w *warnings) error {
	var err error
	eachElement(v, func(m gjson.Result) bool {
		role := m.Get("role").Str
		content := m.Get("content")
		mm := msg{plain: content.Type == gjson.String}
		switch role {
		case "user":
			mm.role = roleUser
		case "assistant":
			mm.role = roleAssistant
		case "system":
			// A mid-conversation system message (Claude Code sends them)
			// stays where it is where the upstream has such messages.
			mm.role = roleSystem
		default:
			err = invalid("the message role %q cannot be translated", role)
			return false
		}
		if content.Type == gjson.String {
			if s := inner(content); s != "" {
				mm.parts = c.addPart(mm.parts, part{text: s})
			}
		}
		eachElement(content, func(b gjson.Result) bool {
			if present(b.Get("cache_control")) {
				w.add("cache_control")
			}
			typ := b.Get("type").Str
			switch {
			case typ == "text":
				if s := inner(b.Get("text")); s != "" {
					mm.parts = c.addPart(mm.parts, part{text: s})
				}
			case typ == "tool_use" && mm.role == roleAssistant:
				in := b.Get("input")
				args := "{}"
				if isObject(in) {
					args = in.Raw
				}
				mm.parts = append(mm.parts, part{kind: kindCall, id: inner(b.Get("id")), name: inner(b.Get("name")), args: args})
			case typ == "tool_result" && mm.role == roleUser:
				var r part
				r, err = toolResultIn(b, t, w)
				mm.parts = append(mm.parts, r)
			case (typ == "image" || typ == "document") && mm.role == roleUser:
				var p part
				var ok bool
				p, ok, err = messagesMediaIn(b, typ, t)
				if ok {
					mm.parts = append(mm.parts, p)
				}
			default:
				w.add("messages.content." + typ)
			}
			return err == nil
		})
		if err == nil && len(mm.parts) > 0 {
			c.msgs = append(c.msgs, mm)
		}
		return err == nil
	})
	return err
}

// toolResultIn reads a tool_result block: its text and media.
func toolResultIn(b gjson.Result, t target, w *warnings) (part, error) {
	r := part{kind: kindResult, id: inner(b.Get("tool_use_id"))}
	if b.Get("is_error").Type == gjson.True {
		w.add("messages.content.is_error")
	}
	content := b.Get("content")
	if content.Type == gjson.String {
		r.plain = true
		r.content = []part{{text: inner(content)}}
		return r, nil
	}
	var err error
	eachElement(content, func(cb gjson.Result) bool {
		if present(cb.Get("cache_control")) {
			w.add("cache_control")
		}
		switch typ := cb.Get("type").Str; typ {
		case "text":
			r.content = append(r.content, part{text: inner(cb.Get("text"))})
		case "image", "document":
			var p part
			var ok bool
			p, ok, err = messagesMediaIn(cb, typ, t)
			if ok {
				r.content = append(r.content, p)
			}
		default:
			w.add("messages.content." + typ)
		}
		return err == nil
	})
	return r, err
}

// messagesMediaIn reads an image or document block; a plain-text document
// becomes text.
func messagesMediaIn(b gjson.Result, typ string, t target) (part, bool, error) {
	src := b.Get("source")
	kind := mediaImage
	if typ == "document" {
		kind = mediaPDF
	}
	switch st := src.Get("type").Str; st {
	case "base64":
		m := media{kind: kind, mime: src.Get("media_type").Str, data: src.Get("data").Str}
		if typ == "document" {
			m.name = b.Get("title").Str
		}
		return part{kind: kindMedia, m: m}, true, nil
	case "url":
		u := src.Get("url").Str
		if !isHTTPURL(u) {
			break
		}
		m := media{kind: kind, url: u, mime: mimeFromURL(u)}
		if kind == mediaPDF && m.mime == "" {
			m.mime = "application/pdf"
		}
		if err := checkMedia(m, t); err != nil {
			return part{}, false, invalid("%s with a %q source cannot be sent to this model's upstream", english.A(typ), st)
		}
		return part{kind: kindMedia, m: m}, true, nil
	case "text":
		if typ == "document" {
			s := inner(src.Get("data"))
			return part{text: s}, s != "", nil
		}
	case "content":
		if typ == "document" {
			var raw []byte
			eachElement(src.Get("content"), func(cb gjson.Result) bool {
				if s := inner(cb.Get("text")); s != "" {
					if len(raw) > 0 {
						raw = append(raw, `\n`...)
					}
					raw = append(raw, s...)
				}
				return true
			})
			return part{text: string(raw)}, len(raw) > 0, nil
		}
	}
	return part{}, false, invalid("%s with a %q source cannot be sent to this model's upstream", english.A(typ), src.Get("type").Str)
}

// messagesTurns writes messages content blocks.
var messagesTurns = turnWriter{
	text:  appendTextBlock,
	media: messagesMediaOut,
	call: func(b []byte, p part) []byte {
		b = append(b, `{"type":"tool_use","id":"`...)
		b = append(b, p.id...)
		b = append(b, `","name":"`...)
		b = append(b, p.name...)
		b = append(b, `","input":`...)
		b = append(b, argsObject(p.args)...)
		return append(b, '}')
	},
	result: func(b, rest []byte, p part) ([]byte, []byte, error) {
		return toolResultOut(b, p), rest, nil
	},
}

func encodeMessages(c *conv, opts RequestOptions, sizeHint int) ([]byte, error) {
	system, turns, err := buildTurns(c, messagesTurns)
	if err != nil {
		return nil, err
	}
	maxTokens := maxTokensOr(c, opts)
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	b := make([]byte, 0, sizeHint+256)
	b = append(b, '{')
	b = keyStr(b, "model", orStr(opts.Model, c.model))
	b = keyInt(b, "max_tokens", maxTokens)
	if len(system) > 0 {
		b = append(key(b, "system"), '[')
		b = append(append(b, system...), ']')
	}
	b = appendTurns(key(b, "messages"), turns, "assistant", "content")
	if c.temperature != "" {
		// The messages protocol's temperature goes up to 1.
		if f, err := strconv.ParseFloat(c.temperature, 64); err == nil && f > 1 {
			b = keyRaw(b, "temperature", "1")
		} else {
			b = keyRaw(b, "temperature", c.temperature)
		}
	}
	if c.topP != "" {
		b = keyRaw(b, "top_p", c.topP)
	}
	if c.topK != "" {
		b = keyRaw(b, "top_k", c.topK)
	}
	if len(c.stop) > 0 {
		b = appendRawList(key(b, "stop_sequences"), c.stop)
	}
	if len(c.tools) > 0 {
		b = append(key(b, "tools"), '[')
		for _, t := range c.tools {
			b = append(sep(b), `{"name":"`...)
			b = append(b, t.name...)
			b = append(b, '"')
			if t.desc != "" {
				b = keyRaw(b, "description", t.desc)
			}
			b = keyRaw(b, "input_schema", orRaw(t.params, emptySchema))
			b = append(b, '}')
		}
		b = append(b, ']')
		b = appendMessagesChoice(b, c.choice, c.noParallel)
	}
	if c.user != "" {
		b = append(key(b, "metadata"), `{"user_id":`...)
		b = append(append(b, c.user...), '}')
	}
	if opts.Stream {
		b = append(key(b, "stream"), "true"...)
	}
	return append(b, '}'), nil
}

func appendTextBlock(b []byte, raw string) []byte {
	b = append(b, `{"type":"text","text":"`...)
	b = append(b, raw...)
	return append(b, `"}`...)
}

func appendMessagesChoice(b []byte, tc toolChoice, noParallel bool) []byte {
	typ := tc.mode
	switch typ {
	case "":
		if !noParallel {
			return b
		}
		typ = "auto"
	case "required":
		typ = "any"
	}
	b = append(key(b, "tool_choice"), `{"type":"`...)
	b = append(b, typ...)
	b = append(b, '"')
	if typ == "tool" {
		b = append(b, `,"name":"`...)
		b = append(append(b, tc.name...), '"')
	}
	if noParallel && typ != "none" {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}

func toolResultOut(b []byte, p part) []byte {
	b = append(b, `{"type":"tool_result","tool_use_id":"`...)
	b = append(b, p.id...)
	b = append(b, `","content":`...)
	if p.plain && len(p.content) == 1 && p.content[0].kind == kindText {
		b = append(append(append(b, '"'), p.content[0].text...), '"')
		return append(b, '}')
	}
	b = append(b, '[')
	for _, cp := range p.content {
		if cp.kind == kindText {
			b = appendTextBlock(sep(b), cp.text)
		} else {
			b = messagesMediaOut(sep(b), cp.m)
		}
	}
	return append(b, "]}"...)
}

// messagesMediaOut writes an image or document block.
func messagesMediaOut(b []byte, m media) []byte {
	kind := "image"
	if m.kind != mediaImage {
		kind = "document"
	}
	b = append(b, `{"type":"`...)
	b = append(b, kind...)
	if m.url != "" {
		b = append(b, `","source":{"type":"url","url":`...)
		b = appendStr(b, m.url)
		return append(b, "}}"...)
	}
	b = append(b, `","source":{"type":"base64","media_type":`...)
	b = appendStr(b, m.mime)
	b = append(b, `,"data":`...)
	b = appendStr(b, m.data)
	return append(b, "}}"...)
}
