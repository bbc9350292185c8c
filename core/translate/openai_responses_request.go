package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The responses protocol's request side.

var responsesSide = side{
	id:        protocol.OpenAIResponses,
	decode:    decodeResponses,
	encode:    encodeResponses,
	read:      readResponses,
	write:     writeResponses,
	newReader: func(rs *readers) reader { return &rs.responses },
	newStream: streamFor[responsesWriter],
}

func decodeResponses(root gjson.Result, t target, c *conv) error {
	w := &c.warn
	err := eachField(root, func(k, v gjson.Result) error {
		switch k.Str {
		case "model":
			c.model = v.Str
		case "stream", "stream_options":
		case "instructions":
			if s := inner(v); s != "" {
				c.system = append(c.system, s)
			}
		case "input":
			return responsesInputIn(v, c, t, w)
		case "max_output_tokens":
			c.maxTokens = v.Int()
		case "temperature":
			c.temperature = v.Raw
		case "top_p":
			c.topP = v.Raw
		case "presence_penalty", "frequency_penalty":
			switch {
			case !t.can(featPenalty):
				w.add(k.Str)
			case k.Str == "presence_penalty":
				c.presence = v.Raw
			default:
				c.frequency = v.Raw
			}
		case "parallel_tool_calls":
			if t.can(featParallel) {
				c.noParallel = v.Type == gjson.False
			} else {
				w.add(k.Str)
			}
		case "user":
			if t.can(featUser) && v.Type == gjson.String {
				c.user = v.Raw
			} else {
				w.add(k.Str)
			}
		case "tools":
			eachElement(v, func(tl gjson.Result) bool {
				if typ := tl.Get("type").Str; typ != "function" {
					w.add("tools." + typ)
					return true
				}
				tt := tool{name: inner(tl.Get("name")), desc: stringRaw(tl.Get("description"))}
				if p := tl.Get("parameters"); isObject(p) {
					tt.params = p.Raw
				}
				if s := tl.Get("strict"); present(s) {
					if t.can(featStrict) {
						tt.strict = boolRaw(s)
					} else if s.Type == gjson.True {
						w.add("tools.strict")
					}
				}
				c.tools = append(c.tools, tt)
				return true
			})
		case "tool_choice":
			switch {
			case v.Type == gjson.String && (v.Str == "auto" || v.Str == "none" || v.Str == "required"):
				c.choice.mode = v.Str
			case v.Get("type").Str == "function":
				c.choice = toolChoice{mode: "tool", name: inner(v.Get("name"))}
			default:
				w.add(k.Str)
			}
		case "reasoning":
			if !t.can(featReasoning) {
				w.add(k.Str)
				break
			}
			v.ForEach(func(rk, rv gjson.Result) bool {
				switch {
				case !present(rv):
				case rk.Str == "effort" && rv.Type == gjson.String:
					c.effort = rv.Str
				default:
					w.add("reasoning." + rk.Str)
				}
				return true
			})
		case "text":
			v.ForEach(func(tk, tv gjson.Result) bool {
				if !present(tv) {
					return true
				}
				if tk.Str != "format" {
					w.add("text." + tk.Str)
					return true
				}
				switch typ := tv.Get("type").Str; {
				case typ == "text":
				case (typ == "json_object" || typ == "json_schema") && t.can(featJSON):
					c.format = respFormat{kind: typ, name: stringRaw(tv.Get("name")), desc: stringRaw(tv.Get("description")), strict: boolRaw(tv.Get("strict"))}
					if s := tv.Get("schema"); isObject(s) {
						c.format.schema = s.Raw
					}
				default:
					w.add("text.format")
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

// responsesInputIn reads input items. An assistant message and the
// function calls after it make one assistant message.
func responsesInputIn(v gjson.Result, c *conv, t target, w *warnings) error {
	if v.Type == gjson.String {
		if s := inner(v); s != "" {
			c.msgs = append(c.msgs, msg{role: roleUser, plain: true, parts: []part{{text: s}}})
		}
		return nil
	}
	var err error
	// assistant returns the assistant message to add to: the last one,
	// unless calls is set and text would follow calls.
	assistant := func(text bool) *msg {
		if n := len(c.msgs); n > 0 && c.msgs[n-1].role == roleAssistant {
			last := &c.msgs[n-1]
			if !text || last.parts[len(last.parts)-1].kind == kindText {
				return last
			}
		}
		c.msgs = append(c.msgs, msg{role: roleAssistant})
		return &c.msgs[len(c.msgs)-1]
	}
	eachElement(v, func(it gjson.Result) bool {
		typ := it.Get("type").Str
		if typ == "" && it.Get("role").Exists() {
			typ = "message"
		}
		if typ == "message" || typ == "function_call" || typ == "function_call_output" {
			if present(it.Get("id")) {
				w.add("input.id")
			}
			if present(it.Get("status")) {
				w.add("input.status")
			}
		}
		switch typ {
		case "message":
			content := it.Get("content")
			switch role := it.Get("role").Str; role {
			case "assistant":
				var texts []part
				if s := inner(content); s != "" {
					texts = append(texts, part{text: s})
				}
				eachElement(content, func(p gjson.Result) bool {
					switch pt := p.Get("type").Str; pt {
					case "output_text", "input_text", "text":
						if s := inner(p.Get("text")); s != "" {
							texts = append(texts, part{text: s})
						}
					case "refusal":
						if s := inner(p.Get("refusal")); s != "" {
							texts = append(texts, part{text: s})
						}
					default:
						w.add("input.content." + pt)
					}
					return true
				})
				if len(texts) > 0 {
					m := assistant(true)
					m.parts = append(m.parts, texts...)
				}
			case "system", "developer":
				m := msg{role: roleSystem}
				if s := inner(content); s != "" {
					m.parts = c.addPart(m.parts, part{text: s})
				}
				eachElement(content, func(p gjson.Result) bool {
					if s := inner(p.Get("text")); s != "" {
						m.parts = c.addPart(m.parts, part{text: s})
					}
					return true
				})
				if len(m.parts) > 0 {
					c.msgs = append(c.msgs, m)
				}
			case "user":
				m := msg{role: roleUser, plain: content.Type == gjson.String}
				if s := inner(content); s != "" {
					m.parts = c.addPart(m.parts, part{text: s})
				}
				eachElement(content, func(p gjson.Result) bool {
					var pt part
					var ok bool
					pt, ok, err = responsesPartIn(p, t, w)
					if ok {
						m.parts = append(m.parts, pt)
					}
					return err == nil
				})
				if len(m.parts) > 0 {
					c.msgs = append(c.msgs, m)
				}
			default:
				err = invalid("the input role %q cannot be translated", role)
			}
		case "function_call":
			m := assistant(false)
			m.parts = append(m.parts, part{kind: kindCall, id: inner(it.Get("call_id")), name: inner(it.Get("name")), args: it.Get("arguments").Str})
		case "function_call_output":
			r := part{kind: kindResult, id: inner(it.Get("call_id"))}
			out := it.Get("output")
			if out.Type == gjson.String {
				r.plain = true
				r.content = []part{{text: inner(out)}}
			}
			eachElement(out, func(p gjson.Result) bool {
				var pt part
				var ok bool
				pt, ok, err = responsesPartIn(p, t, w)
				if ok {
					r.content = append(r.content, pt)
				}
				return err == nil
			})
			c.msgs = append(c.msgs, msg{role: roleUser, parts: []part{r}})
		default:
			w.add("input." + typ)
		}
		return err == nil
	})
	return err
}

// responsesPartIn reads one content part of a user message or a function
// output; ok is false for what is dropped.
func responsesPartIn(p gjson.Result, t target, w *warnings) (part, bool, error) {
	switch typ := p.Get("type").Str; typ {
	case "input_text", "text", "output_text":
		s := inner(p.Get("text"))
		return part{text: s}, s != "", nil
	case "input_image":
		u := p.Get("image_url").Str
		if u == "" {
			return part{}, false, invalid("an input_image must carry image_url; file ids cannot be sent to this model's upstream")
		}
		m, err := mediaFromURL(u)
		if err != nil {
			return part{}, false, err
		}
		m.kind = mediaImage
		if d := p.Get("detail"); present(d) && d.Str != "auto" {
			if t.can(featDetail) {
				m.detail = d.Str
			} else {
				w.add("input.content.detail")
			}
		}
		return part{kind: kindMedia, m: m}, true, nil
	case "input_file":
		name := p.Get("filename").Str
		if fd := p.Get("file_data").Str; fd != "" {
			if !strings.HasPrefix(fd, "data:") {
				fd = "data:" + orStr(mimeFromURL(name), "application/pdf") + ";base64," + fd
			}
			m, err := mediaFromURL(fd)
			m.name = name
			return part{kind: kindMedia, m: m}, err == nil, err
		}
		if id := p.Get("file_id").Str; id != "" && t.can(featFileID) {
			return part{kind: kindMedia, m: media{kind: mediaFile, fileID: id, name: name}}, true, nil
		}
		if u := p.Get("file_url").Str; isHTTPURL(u) && t.can(featPDFURL) {
			return part{kind: kindMedia, m: media{kind: mediaPDF, url: u, mime: orStr(mimeFromURL(u), "application/pdf"), name: name}}, true, nil
		}
		return part{}, false, invalid("an input_file must carry file_data; file ids and file URLs cannot be sent to this model's upstream")
	default:
		w.add("input.content." + typ)
		return part{}, false, nil
	}
}

func encodeResponses(c *conv, opts RequestOptions, sizeHint int) ([]byte, error) {
	b := make([]byte, 0, sizeHint+256)
	b = append(b, '{')
	b = keyStr(b, "model", orStr(opts.Model, c.model))
	// The upstream requires instructions (PRODUCT.md §7).
	b = append(key(b, "instructions"), '"')
	b = appendJoined(b, c.system, `\n`)
	b = append(b, '"')
	b = append(key(b, "input"), '[')
	for i := range c.msgs {
		b = responsesItemsOut(b, &c.msgs[i])
	}
	b = append(b, ']')
	if mt := maxTokensOr(c, opts); mt > 0 {
		b = keyInt(b, "max_output_tokens", mt)
	}
	b = appendSampling(b, c, "top_p", "presence_penalty", "frequency_penalty")
	if len(c.tools) > 0 {
		b = append(key(b, "tools"), '[')
		for _, t := range c.tools {
			b = append(sep(b), `{"type":"function","name":"`...)
			b = append(b, t.name...)
			b = append(b, '"')
			if t.desc != "" {
				b = keyRaw(b, "description", t.desc)
			}
			b = keyRaw(b, "parameters", orRaw(t.params, emptySchema))
			// Function tools are strict by default here, unlike elsewhere.
			b = keyRaw(b, "strict", orRaw(t.strict, "false"))
			b = append(b, '}')
		}
		b = append(b, ']')
		switch c.choice.mode {
		case "auto", "none", "required":
			b = keyStr(b, "tool_choice", c.choice.mode)
		case "tool":
			b = append(key(b, "tool_choice"), `{"type":"function","name":"`...)
			b = append(b, c.choice.name...)
			b = append(b, `"}`...)
		}
		if c.noParallel {
			b = append(key(b, "parallel_tool_calls"), "false"...)
		}
	}
	if c.user != "" {
		b = keyRaw(b, "user", c.user)
	}
	switch c.format.kind {
	case "json_object":
		b = append(key(b, "text"), `{"format":{"type":"json_object"}}`...)
	case "json_schema":
		b = append(key(b, "text"), `{"format":{"type":"json_schema"`...)
		b = keyRaw(b, "name", orRaw(c.format.name, `"response"`))
		if c.format.desc != "" {
			b = keyRaw(b, "description", c.format.desc)
		}
		b = keyRaw(b, "schema", orRaw(c.format.schema, emptySchema))
		if c.format.strict != "" {
			b = keyRaw(b, "strict", c.format.strict)
		}
		b = append(b, "}}"...)
	}
	if c.effort != "" {
		b = append(key(b, "reasoning"), `{"effort":`...)
		b = append(appendStr(b, c.effort), '}')
	}
	// Nothing is kept upstream: the gateway sends the whole conversation
	// every turn, as the other protocols do.
	b = append(key(b, "store"), "false"...)
	if opts.Stream {
		b = append(key(b, "stream"), "true"...)
	}
	return append(b, '}'), nil
}

// responsesItemsOut appends the input items of one message: a user
// message's tool results as function_call_output items first, an
// assistant message's calls as function_call items after its text.
func responsesItemsOut(b []byte, m *msg) []byte {
	switch m.role {
	case roleSystem:
		b = append(sep(b), `{"role":"system","content":"`...)
		b = appendTexts(b, m.parts, `\n\n`)
		return append(b, `"}`...)
	case roleAssistant:
		hasText := false
		for _, p := range m.parts {
			hasText = hasText || p.kind == kindText
		}
		if hasText {
			b = append(sep(b), `{"role":"assistant","content":"`...)
			b = appendTexts(b, m.parts, "")
			b = append(b, `"}`...)
		}
		for _, p := range m.parts {
			if p.kind != kindCall {
				continue
			}
			b = append(sep(b), `{"type":"function_call","call_id":"`...)
			b = append(b, p.id...)
			b = append(b, `","name":"`...)
			b = append(b, p.name...)
			b = append(b, `","arguments":`...)
			b = appendStr(b, orStr(p.args, "{}"))
			b = append(b, '}')
		}
		return b
	}
	rest := 0
	for _, p := range m.parts {
		if p.kind != kindResult {
			rest++
			continue
		}
		b = append(sep(b), `{"type":"function_call_output","call_id":"`...)
		b = append(b, p.id...)
		b = append(b, `","output":`...)
		media := false
		for _, cp := range p.content {
			media = media || cp.kind == kindMedia
		}
		if !media {
			b = append(b, '"')
			b = appendTexts(b, p.content, `\n`)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for _, cp := range p.content {
				b = responsesPartOut(sep(b), cp)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if rest == 0 {
		return b
	}
	b = append(sep(b), `{"role":"user","content":`...)
	if m.plain && rest == 1 && m.parts[len(m.parts)-1].kind == kindText {
		b = append(append(append(b, '"'), m.parts[len(m.parts)-1].text...), '"')
		return append(b, '}')
	}
	b = append(b, '[')
	for _, p := range m.parts {
		if p.kind != kindResult {
			b = responsesPartOut(sep(b), p)
		}
	}
	return append(b, "]}"...)
}

func responsesPartOut(b []byte, p part) []byte {
	if p.kind == kindText {
		b = append(b, `{"type":"input_text","text":"`...)
		b = append(b, p.text...)
		return append(b, `"}`...)
	}
	m := p.m
	switch {
	case m.fileID != "":
		b = append(b, `{"type":"input_file","file_id":`...)
		b = appendStr(b, m.fileID)
		return append(b, '}')
	case m.kind == mediaImage:
		b = append(b, `{"type":"input_image","image_url":`...)
		b = appendMediaURL(b, m)
		b = keyStr(b, "detail", orStr(m.detail, "auto"))
		return append(b, '}')
	case m.url != "":
		b = append(b, `{"type":"input_file","file_url":`...)
		b = appendStr(b, m.url)
		return append(b, '}')
	}
	b = append(b, `{"type":"input_file","filename":`...)
	b = appendStr(b, orStr(m.name, "document.pdf"))
	b = append(b, `,"file_data":`...)
	b = appendMediaURL(b, m)
	return append(b, '}')
}
