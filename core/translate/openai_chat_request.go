package translate

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The completions protocol's request side: decodeChat reads a client's
// body, encodeChat writes an upstream's.

var chatSide = side{
	id:        protocol.OpenAIChat,
	decode:    decodeChat,
	encode:    encodeChat,
	read:      readChat,
	write:     writeChat,
	newReader: func(rs *readers) reader { return &rs.chat },
	newStream: streamFor[chatWriter],
}

func decodeChat(root gjson.Result, t target, c *conv) error {
	w := &c.warn
	err := eachField(root, func(k, v gjson.Result) error {
		switch k.Str {
		case "model":
			c.model = v.Str
		case "stream", "stream_options":
			// The model comes from the route, streaming from the call;
			// include_usage is honoured by the translated stream itself.
		case "messages":
			return chatMessagesIn(v, c, t, w)
		case "max_tokens", "max_completion_tokens":
			c.maxTokens = v.Int()
		case "temperature":
			c.temperature = v.Raw
		case "top_p":
			c.topP = v.Raw
		case "stop":
			if t.can(featStop) {
				c.stop = appendStops(c.stop[:0], v)
			} else {
				w.add(k.Str)
			}
		case "presence_penalty", "frequency_penalty":
			switch {
			case !t.can(featPenalty):
				w.add(k.Str)
			case k.Str == "presence_penalty":
				c.presence = v.Raw
			default:
				c.frequency = v.Raw
			}
		case "seed":
			if t.can(featSeed) {
				c.seed = v.Raw
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
			return chatToolsIn(v, c, t, w)
		case "tool_choice":
			c.choice = chatChoiceIn(v)
		case "parallel_tool_calls":
			if t.can(featParallel) {
				c.noParallel = v.Type == gjson.False
			} else {
				w.add(k.Str)
			}
		case "response_format":
			switch typ := v.Get("type").Str; {
			case typ == "text":
			case (typ == "json_object" || typ == "json_schema") && t.can(featJSON):
				c.format.kind = typ
				if js := v.Get("json_schema"); typ == "json_schema" {
					c.format.name = stringRaw(js.Get("name"))
					c.format.desc = stringRaw(js.Get("description"))
					c.format.strict = boolRaw(js.Get("strict"))
					if s := js.Get("schema"); isObject(s) {
						c.format.schema = s.Raw
					}
				}
			default:
				w.add(k.Str)
			}
		case "n":
			if v.Int() != 1 {
				w.add(k.Str)
			}
		case "reasoning_effort":
			if t.can(featReasoning) && v.Type == gjson.String {
				c.effort = v.Str
			} else {
				w.add(k.Str)
			}
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

// appendStops appends a stop value (string or array) as raw JSON strings.
func appendStops(dst []string, v gjson.Result) []string {
	if v.Type == gjson.String {
		if v.Str != "" {
			dst = append(dst, v.Raw)
		}
		return dst
	}
	eachElement(v, func(s gjson.Result) bool {
		if s.Type == gjson.String && s.Str != "" {
			dst = append(dst, s.Raw)
		}
		return true
	})
	return dst
}

func chatChoiceIn(v gjson.Result) toolChoice {
	switch {
	case v.Type == gjson.String:
		switch v.Str {
		case "auto", "none", "required":
			return toolChoice{mode: v.Str}
		}
	case isObject(v):
		if n := v.Get("function.name"); n.Type == gjson.String {
			return toolChoice{mode: "tool", name: inner(n)}
		}
	}
	return toolChoice{}
}

func chatToolsIn(v gjson.Result, c *conv, t target, w *warnings) error {
	var err error
	eachElement(v, func(tl gjson.Result) bool {
		if typ := tl.Get("type").Str; typ != "function" {
			w.add("tools." + typ)
			return true
		}
		fn := tl.Get("function")
		name := fn.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = invalid("every function tool needs a name")
			return false
		}
		tt := tool{name: inner(name), desc: stringRaw(fn.Get("description"))}
		if p := fn.Get("parameters"); isObject(p) {
			tt.params = p.Raw
		}
		// strict: false is every other protocol's default: nothing is lost.
		if s := fn.Get("strict"); present(s) {
			if t.can(featStrict) {
				tt.strict = boolRaw(s)
			} else if s.Type == gjson.True {
				w.add("tools.function.strict")
			}
		}
		c.tools = append(c.tools, tt)
		return true
	})
	return err
}

// chatMessagesIn reads the messages array. System messages before the
// first other message are the top-level system prompt; later ones stay
// where they are.
func chatMessagesIn(v gjson.Result, c *conv, t target, w *warnings) error {
	var err error
	eachElement(v, func(m gjson.Result) bool {
		role := m.Get("role").Str
		m.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "role", "content", "tool_calls", "tool_call_id":
			case "name":
				// A tool message's name names the function it answers.
				if role != "tool" && present(f) {
					w.add("messages.name")
				}
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
			var texts []part
			err = eachTextPart(content, func(raw string) { texts = append(texts, part{text: raw}) })
			if len(texts) == 0 {
				break
			}
			if len(c.msgs) == 0 {
				for _, p := range texts {
					c.system = append(c.system, p.text)
				}
			} else {
				c.msgs = append(c.msgs, msg{role: roleSystem, parts: texts})
			}
		case "user":
			mm := msg{role: roleUser, plain: content.Type == gjson.String}
			err = eachChatPart(content, t, w, func(p part) { mm.parts = append(mm.parts, p) })
			if len(mm.parts) > 0 {
				c.msgs = append(c.msgs, mm)
			}
		case "assistant":
			mm := msg{role: roleAssistant, plain: content.Type == gjson.String}
			err = eachTextPart(content, func(raw string) { mm.parts = c.addPart(mm.parts, part{text: raw}) })
			eachElement(m.Get("tool_calls"), func(tc gjson.Result) bool {
				fn := tc.Get("function")
				args, ok := jsonObjectString(fn.Get("arguments").Str)
				if !ok {
					err = invalid("the arguments of tool call %s are not a JSON object", tc.Get("id").Str)
					return false
				}
				mm.parts = append(mm.parts, part{kind: kindCall, id: inner(tc.Get("id")), name: inner(fn.Get("name")), args: args})
				return true
			})
			if err == nil && len(mm.parts) > 0 {
				c.msgs = append(c.msgs, mm)
			}
		case "tool":
			r := part{kind: kindResult, id: inner(m.Get("tool_call_id")), name: inner(m.Get("name")), plain: content.Type == gjson.String}
			if content.Type == gjson.String {
				r.content = []part{{text: inner(content)}}
			} else {
				err = eachTextPart(content, func(raw string) { r.content = append(r.content, part{text: raw}) })
			}
			c.msgs = append(c.msgs, msg{role: roleUser, parts: []part{r}})
		default:
			err = invalid("the message role %q cannot be translated", role)
		}
		return err == nil
	})
	return err
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
	var err error
	eachElement(content, func(p gjson.Result) bool {
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
func eachChatPart(content gjson.Result, t target, w *warnings, fn func(part)) error {
	if content.Type == gjson.String {
		if s := inner(content); s != "" {
			fn(part{text: s})
		}
		return nil
	}
	var err error
	eachElement(content, func(p gjson.Result) bool {
		var pt part
		var ok bool
		pt, ok, err = chatPartIn(p, t, w)
		if ok {
			fn(pt)
		}
		return err == nil
	})
	return err
}

// chatPartIn reads one user content part; ok is false for an empty text.
func chatPartIn(p gjson.Result, t target, w *warnings) (part, bool, error) {
	switch typ := p.Get("type").Str; typ {
	case "text":
		s := inner(p.Get("text"))
		return part{text: s}, s != "", nil
	case "image_url":
		iu := p.Get("image_url")
		m, err := mediaFromURL(iu.Get("url").Str)
		if d := iu.Get("detail"); present(d) {
			if t.can(featDetail) {
				m.detail = d.Str
			} else {
				w.add("messages.content.image_url.detail")
			}
		}
		if err == nil {
			err = checkMedia(m, t)
		}
		return part{kind: kindMedia, m: m}, err == nil, err
	case "file":
		f := p.Get("file")
		if fd := f.Get("file_data").Str; fd != "" {
			if !strings.HasPrefix(fd, "data:") {
				fd = "data:application/pdf;base64," + fd
			}
			m, err := mediaFromURL(fd)
			m.name = f.Get("filename").Str
			return part{kind: kindMedia, m: m}, err == nil, err
		}
		if id := f.Get("file_id").Str; id != "" && t.can(featFileID) {
			return part{kind: kindMedia, m: media{kind: mediaFile, fileID: id, name: f.Get("filename").Str}}, true, nil
		}
		return part{}, false, invalid("a file part must carry file_data; file ids cannot be sent to this model's upstream")
	case "input_audio":
		a := p.Get("input_audio")
		if !t.can(featAudio) {
			break
		}
		format := a.Get("format").Str
		return part{kind: kindMedia, m: media{kind: mediaAudio, mime: "audio/" + format, format: format, data: a.Get("data").Str}}, true, nil
	}
	return part{}, false, invalid("a %q content part cannot be sent to this model's upstream", p.Get("type").Str)
}

// mediaFromURL reads a data: URL (an image, else a document) or an
// http(s) URL (a PDF by its extension, else an image).
func mediaFromURL(u string) (media, error) {
	if mime, data, ok := dataURL(u); ok {
		m := media{kind: mediaPDF, mime: mime, data: data}
		if strings.HasPrefix(mime, "image/") {
			m.kind = mediaImage
		}
		return m, nil
	}
	if isHTTPURL(u) {
		m := media{kind: mediaImage, url: u, mime: mimeFromURL(u)}
		if m.mime == "application/pdf" {
			m.kind = mediaPDF
		}
		return m, nil
	}
	return media{}, invalid("an image must be an http(s) URL or a base64 data: URL")
}

// checkMedia refuses media the target protocol has no form for.
func checkMedia(m media, t target) error {
	if m.kind == mediaPDF && m.url != "" && !t.can(featPDFURL) {
		return invalid("a document at a URL cannot be sent to this model's upstream; send it as base64 data")
	}
	return nil
}

// encodeChat writes a completions body.
func encodeChat(c *conv, opts RequestOptions, sizeHint int) ([]byte, error) {
	b := make([]byte, 0, sizeHint+256)
	b = append(b, '{')
	b = keyStr(b, "model", orStr(opts.Model, c.model))
	b = append(key(b, "messages"), '[')
	if len(c.system) > 0 {
		b = append(sep(b), `{"role":"system","content":"`...)
		b = appendJoined(b, c.system, `\n`)
		b = append(b, `"}`...)
	}
	for i := range c.msgs {
		b = chatMessageOut(b, &c.msgs[i])
	}
	b = append(b, ']')
	if mt := maxTokensOr(c, opts); mt > 0 {
		b = keyInt(b, "max_tokens", mt)
	}
	b = appendSampling(b, c, "top_p", "presence_penalty", "frequency_penalty")
	if len(c.stop) > 0 {
		b = appendRawList(key(b, "stop"), c.stop)
	}
	if c.seed != "" {
		b = keyRaw(b, "seed", c.seed)
	}
	if c.user != "" {
		b = keyRaw(b, "user", c.user)
	}
	switch c.format.kind {
	case "json_object":
		b = append(key(b, "response_format"), `{"type":"json_object"}`...)
	case "json_schema":
		b = append(key(b, "response_format"), `{"type":"json_schema","json_schema":{`...)
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
	if len(c.tools) > 0 {
		b = append(key(b, "tools"), '[')
		for _, t := range c.tools {
			b = append(sep(b), `{"type":"function","function":{"name":"`...)
			b = append(b, t.name...)
			b = append(b, '"')
			if t.desc != "" {
				b = keyRaw(b, "description", t.desc)
			}
			b = keyRaw(b, "parameters", orRaw(t.params, emptySchema))
			if t.strict != "" {
				b = keyRaw(b, "strict", t.strict)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
		switch c.choice.mode {
		case "auto", "none", "required":
			b = keyStr(b, "tool_choice", c.choice.mode)
		case "tool":
			b = append(key(b, "tool_choice"), `{"type":"function","function":{"name":"`...)
			b = append(b, c.choice.name...)
			b = append(b, `"}}`...)
		}
		if c.noParallel {
			b = append(key(b, "parallel_tool_calls"), "false"...)
		}
	}
	if c.effort != "" {
		b = keyStr(b, "reasoning_effort", c.effort)
	}
	if opts.Stream {
		b = append(key(b, "stream"), "true"...)
		b = append(key(b, "stream_options"), `{"include_usage":true}`...)
	}
	return append(b, '}'), nil
}

// chatMessageOut appends one message. A user message's tool results become
// tool messages placed first, as completions wants them right after the
// assistant's calls; media of a result (tool messages carry text only)
// joins the user message after them.
func chatMessageOut(b []byte, m *msg) []byte {
	switch m.role {
	case roleSystem:
		b = append(sep(b), `{"role":"system","content":"`...)
		b = appendTexts(b, m.parts, `\n\n`)
		return append(b, `"}`...)
	case roleAssistant:
		b = append(sep(b), `{"role":"assistant","content":`...)
		hasText, hasCalls := false, false
		for _, p := range m.parts {
			hasText = hasText || p.kind == kindText
			hasCalls = hasCalls || p.kind == kindCall
		}
		if hasText || !hasCalls {
			b = append(b, '"')
			b = appendTexts(b, m.parts, "")
			b = append(b, '"')
		} else {
			b = append(b, "null"...)
		}
		if hasCalls {
			b = append(b, `,"tool_calls":[`...)
			for _, p := range m.parts {
				if p.kind != kindCall {
					continue
				}
				b = append(sep(b), `{"id":"`...)
				b = append(b, p.id...)
				b = append(b, `","type":"function","function":{"name":"`...)
				b = append(b, p.name...)
				b = append(b, `","arguments":`...)
				b = appendStr(b, p.args)
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
		return append(b, '}')
	}
	// A message without tool results is all user content, as it is.
	user := m.parts
	if slices.ContainsFunc(m.parts, func(p part) bool { return p.kind == kindResult }) {
		user = nil
		for _, p := range m.parts {
			if p.kind != kindResult {
				user = append(user, p)
				continue
			}
			b = append(sep(b), `{"role":"tool","tool_call_id":"`...)
			b = append(b, p.id...)
			b = append(b, `","content":"`...)
			b = appendTexts(b, p.content, `\n`)
			b = append(b, `"}`...)
			for _, cp := range p.content {
				if cp.kind == kindMedia {
					user = append(user, cp)
				}
			}
		}
	}
	if len(user) == 0 {
		return b
	}
	b = append(sep(b), `{"role":"user","content":`...)
	if m.plain && len(user) == 1 && user[0].kind == kindText {
		b = append(append(append(b, '"'), user[0].text...), '"')
		return append(b, '}')
	}
	b = append(b, '[')
	for _, p := range user {
		b = chatPartOut(sep(b), p)
	}
	return append(b, "]}"...)
}

func chatPartOut(b []byte, p part) []byte {
	if p.kind == kindText {
		b = append(b, `{"type":"text","text":"`...)
		b = append(b, p.text...)
		return append(b, `"}`...)
	}
	m := p.m
	switch {
	case m.kind == mediaAudio:
		b = append(b, `{"type":"input_audio","input_audio":{"data":`...)
		b = appendStr(b, m.data)
		b = keyStr(b, "format", m.format)
		return append(b, "}}"...)
	case m.fileID != "":
		b = append(b, `{"type":"file","file":{"file_id":`...)
		b = appendStr(b, m.fileID)
		return append(b, "}}"...)
	case m.kind == mediaImage:
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = appendMediaURL(b, m)
		if m.detail != "" {
			b = keyStr(b, "detail", m.detail)
		}
		return append(b, "}}"...)
	}
	b = append(b, `{"type":"file","file":{"filename":`...)
	b = appendStr(b, orStr(m.name, "document.pdf"))
	b = append(b, `,"file_data":`...)
	b = appendMediaURL(b, m)
	return append(b, "}}"...)
}

// appendMediaURL writes media as a JSON string: its URL, or a data: URL.
func appendMediaURL(b []byte, m media) []byte {
	if m.url != "" {
		return appendStr(b, m.url)
	}
	b = append(b, `"data:`...)
	b = appendEscaped(b, m.mime)
	b = append(b, ";base64,"...)
	b = appendEscaped(b, m.data)
	return append(b, '"')
}

// appendTexts appends the text parts' raw insides joined by sep (a raw inside).
func appendTexts(b []byte, parts []part, sep string) []byte {
	first := true
	for _, p := range parts {
		if p.kind != kindText {
			continue
		}
		if !first {
			b = append(b, sep...)
		}
		first = false
		b = append(b, p.text...)
	}
	return b
}

func appendJoined(b []byte, raws []string, sep string) []byte {
	for i, s := range raws {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, s...)
	}
	return b
}

// appendSampling writes temperature and the other sampling values under
// the target's names for top_p, presence and frequency penalties.
func appendSampling(b []byte, c *conv, topP, presence, frequency string) []byte {
	if c.temperature != "" {
		b = keyRaw(b, "temperature", c.temperature)
	}
	if c.topP != "" {
		b = keyRaw(b, topP, c.topP)
	}
	if c.presence != "" {
		b = keyRaw(b, presence, c.presence)
	}
	if c.frequency != "" {
		b = keyRaw(b, frequency, c.frequency)
	}
	return b
}

func appendRawList(b []byte, raws []string) []byte {
	b = append(b, '[')
	for i, s := range raws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return append(b, ']')
}

// maxTokensOr is the client's max tokens, else the gateway's value.
func maxTokensOr(c *conv, opts RequestOptions) int64 {
	if c.maxTokens > 0 {
		return c.maxTokens
	}
	return opts.MaxTokens
}

const emptySchema = `{"type":"object","properties":{}}`

func orRaw(raw, def string) string {
	if raw == "" {
		return def
	}
	return raw
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// stringRaw is r's raw JSON when it is a string, else "".
func stringRaw(r gjson.Result) string {
	if r.Type != gjson.String {
		return ""
	}
	return r.Raw
}

// boolRaw is "true" or "false" for a boolean, else "".
func boolRaw(r gjson.Result) string {
	switch r.Type {
	case gjson.True:
		return "true"
	case gjson.False:
		return "false"
	}
	return ""
}
