package codec

import (
	"strconv"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// messages is the messages-style codec (POST /v1/messages).
type messages struct{}

func (messages) Protocol() protocol.ID { return protocol.AnthropicMessages }

const (
	msgModel = iota
	msgMaxTokens
	msgMessages
	msgSystem
	msgFStream
	msgTemperature
	msgTopP
	msgTools
	msgToolChoice
)

func (messages) Inspect(body []byte) (Request, error) {
	s, start, err := openBody(body)
	if err != nil {
		return Request{}, err
	}
	var (
		r Request
		d seen
	)
	it := members(s, start)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		raw := s[vs:ve]
		switch name := keyName(k); name {
		case "model":
			if err = d.mark(msgModel, name); err == nil {
				r.Model, err = requireModel(raw)
			}
		case "max_tokens":
			if err = d.mark(msgMaxTokens, name); err == nil {
				r.MaxTokens, err = positiveInt(raw, name)
			}
		case "messages":
			if err = d.mark(msgMessages, name); err == nil {
				err = msgInspectMessages(s, vs, raw, &r)
			}
		case "system":
			if err = d.mark(msgSystem, name); err == nil {
				err = msgInspectSystem(s, vs, raw)
				r.InputBytes += rawLen(raw)
			}
		case "stream":
			if err = d.mark(msgFStream, name); err == nil {
				r.Stream, err = boolField(raw, name)
			}
		case "temperature":
			if err = d.mark(msgTemperature, name); err == nil {
				err = numberIn(raw, name, 0, 1)
			}
		case "top_p":
			if err = d.mark(msgTopP, name); err == nil {
				err = numberIn(raw, name, 0, 1)
			}
		case "tools":
			if err = d.mark(msgTools, name); err == nil {
				err = msgInspectTools(s, vs, raw)
			}
		case "tool_choice":
			if err = d.mark(msgToolChoice, name); err == nil {
				err = msgToolChoiceValid(raw)
			}
		}
		if err != nil {
			return Request{}, err
		}
	}
	if it.bad {
		return Request{}, malformed()
	}
	switch {
	case !d.has(msgModel):
		return Request{}, invalid("the field \"model\" is required")
	case r.MaxTokens == 0:
		return Request{}, invalid("the field \"max_tokens\" is required: a positive integer")
	case !d.has(msgMessages):
		return Request{}, invalid("the field \"messages\" is required")
	}
	return r, nil
}

func msgInspectMessages(s string, vs int, raw string, r *Request) error {
	if !isArray(raw) {
		return invalid("the field \"messages\" must be a non-empty array of messages")
	}
	r.InputBytes += int64(len(raw))
	msgs := elems(s, vs)
	n := 0
	for {
		_, ms, me, ok := msgs.next()
		if !ok {
			break
		}
		if !isObject(s[ms:me]) {
			return invalid("messages[%d] must be an object with a role and content", n)
		}
		role, content := "", ""
		fields := members(s, ms)
		for {
			k, fs, fe, ok := fields.next()
			if !ok {
				break
			}
			switch keyName(k) {
			case "role":
				role = s[fs:fe]
			case "content":
				content = s[fs:fe]
			}
		}
		switch {
		case role == "":
			return invalid("the field \"messages[%d].role\" is required", n)
		case strIs(role, "user"), strIs(role, "assistant"), strIs(role, "system"):
			// Claude Code sends system-role messages mid-conversation to the
			// models that take them; they pass through to native channels.
		default:
			return invalid("the field \"messages[%d].role\" must be \"user\", \"assistant\" or \"system\" (got %s)", n, quoteShort(role))
		}
		switch {
		case isString(content):
		case isArray(content):
			if !r.HasImages {
				r.HasImages = msgBlocksHaveImage(content)
			}
		default:
			return invalid("the field \"messages[%d].content\" must be a string or an array of content blocks", n)
		}
		n++
	}
	if n == 0 {
		return invalid("the field \"messages\" must be a non-empty array of messages")
	}
	return nil
}

// msgBlocksHaveImage looks for image blocks, also inside tool_result
// blocks (where agents put screenshots).
func msgBlocksHaveImage(raw string) bool {
	it := elems(raw, 0)
	for {
		_, bs, be, ok := it.next()
		if !ok {
			return false
		}
		b := raw[bs:be]
		if !isObject(b) {
			continue
		}
		typ := field(b, "type")
		if strIs(typ, "image") {
			return true
		}
		if strIs(typ, "tool_result") {
			if c := field(b, "content"); isArray(c) && partsHave(c, "image") {
				return true
			}
		}
	}
}

func msgInspectSystem(s string, vs int, raw string) error {
	if isNull(raw) || isString(raw) {
		return nil
	}
	if !isArray(raw) {
		return invalid("the field \"system\" must be a string or an array of text blocks")
	}
	it := elems(s, vs)
	for n := 0; ; n++ {
		_, bs, be, ok := it.next()
		if !ok {
			return nil
		}
		b := s[bs:be]
		if !isObject(b) || !strIs(field(b, "type"), "text") || !isString(field(b, "text")) {
			return invalid("system[%d] must be a text block: {\"type\": \"text\", \"text\": \"...\"}", n)
		}
	}
}

func msgInspectTools(s string, vs int, raw string) error {
	if isNull(raw) {
		return nil
	}
	if !isArray(raw) {
		return invalid("the field \"tools\" must be an array of tools")
	}
	it := elems(s, vs)
	for n := 0; ; n++ {
		_, ts, te, ok := it.next()
		if !ok {
			return nil
		}
		tool := s[ts:te]
		if !isObject(tool) {
			return invalid("tools[%d] must be an object with a name", n)
		}
		name, typ, schema := "", "", ""
		fields := members(s, ts)
		for {
			k, fs, fe, ok := fields.next()
			if !ok {
				break
			}
			switch keyName(k) {
			case "name":
				name = s[fs:fe]
			case "type":
				typ = s[fs:fe]
			case "input_schema":
				schema = s[fs:fe]
			}
		}
		if !isString(name) || len(name) == 2 {
			return invalid("the field \"tools[%d].name\" is required", n)
		}
		// A typed server tool (web_search_20250305, bash_20250124, ...)
		// brings its own schema; a custom tool must give one.
		custom := typ == "" || isNull(typ) || strIs(typ, "custom")
		if custom && !isObject(schema) {
			return invalid("the field \"tools[%d].input_schema\" is required: a JSON Schema object", n)
		}
	}
}

func msgToolChoiceValid(raw string) error {
	if isNull(raw) {
		return nil
	}
	if !isObject(raw) {
		return invalid("the field \"tool_choice\" must be an object with a type: auto, any, tool or none")
	}
	typ := field(raw, "type")
	switch {
	case strIs(typ, "auto"), strIs(typ, "any"), strIs(typ, "none"):
		return nil
	case strIs(typ, "tool"):
		if n := field(raw, "name"); !isString(n) || len(n) == 2 {
			return invalid("the field \"tool_choice.name\" is required when tool_choice.type is \"tool\"")
		}
		return nil
	}
	return invalid("the field \"tool_choice.type\" must be one of auto, any, tool, none")
}

func (messages) Rewrite(body []byte, o RewriteOptions) ([]byte, error) {
	return rewriteFlat(body, o.Model, "max_tokens", o.MaxTokens)
}

// rewriteFlat sets the top-level "model" and max-tokens field of a body
// (every occurrence), inserting them when absent.
func rewriteFlat(body []byte, model, maxField string, maxTokens int64) ([]byte, error) {
	if model == "" && maxTokens <= 0 {
		if _, _, err := openForRewrite(body); err != nil {
			return nil, err
		}
		return body, nil
	}
	s, start, err := openForRewrite(body)
	if err != nil {
		return nil, err
	}
	var (
		e                  edits
		haveModel, haveMax bool
	)
	it := members(s, start)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		switch keyName(k) {
		case "model":
			haveModel = true
			if model != "" {
				e.replace(vs, ve, strVal(model))
			}
		case maxField:
			haveMax = true
			if maxTokens > 0 {
				e.replace(vs, ve, intVal(maxTokens))
			}
		}
	}
	if it.bad {
		return nil, malformed()
	}
	if model != "" && !haveModel {
		e.insert(&it, start, "model", strVal(model))
	}
	if maxTokens > 0 && !haveMax {
		e.insert(&it, start, maxField, intVal(maxTokens))
	}
	return e.apply(body), nil
}

func (messages) Usage(body []byte) protocol.Usage {
	var u msgUsage
	if raw := field(str(body), "usage"); isObject(raw) {
		u.read(raw)
		u.reported = true
	}
	return u.usage()
}

// msgUsage accumulates messages-style usage; input_tokens excludes the
// cache reads and writes, which the gateway counts as input too.
type msgUsage struct {
	input, output, cacheRead, cacheWrite int64
	reported                             bool
}

// read takes every field present in the usage object raw.
func (u *msgUsage) read(raw string) {
	it := members(raw, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return
		}
		v := raw[vs:ve]
		if isNull(v) {
			continue
		}
		switch keyName(k) {
		case "input_tokens":
			u.input = count(v)
		case "output_tokens":
			u.output = count(v)
		case "cache_read_input_tokens":
			u.cacheRead = count(v)
		case "cache_creation_input_tokens":
			u.cacheWrite = count(v)
		}
	}
}

func (u *msgUsage) usage() protocol.Usage {
	return protocol.Usage{
		InputTokens:      u.input + u.cacheRead + u.cacheWrite,
		OutputTokens:     u.output,
		CachedTokens:     u.cacheRead,
		CacheWriteTokens: u.cacheWrite,
		Reported:         u.reported,
	}
}

func (messages) OutputChars(body []byte) int64 {
	content := field(str(body), "content")
	if !isArray(content) {
		return 0
	}
	var n int64
	it := elems(content, 0)
	for {
		_, bs, be, ok := it.next()
		if !ok {
			return n
		}
		n += msgBlockChars(content[bs:be])
	}
}

// msgBlockChars counts a content block's generated characters: text,
// thinking, and a tool call's input JSON.
func msgBlockChars(b string) int64 {
	if !isObject(b) {
		return 0
	}
	typ := field(b, "type")
	switch {
	case strIs(typ, "text"):
		return countChars(field(b, "text"))
	case strIs(typ, "thinking"):
		return countChars(field(b, "thinking"))
	case strIs(typ, "tool_use"), strIs(typ, "server_tool_use"):
		if in := field(b, "input"); isObject(in) {
			return int64(utf8.RuneCountInString(in))
		}
	}
	return 0
}

func (messages) ErrorMessage(body []byte) string { return errorMessage(body) }

// msgStream tracks a messages-style stream. message_start carries the
// input usage, message_delta the cumulative output (and possibly updated
// input) usage; Reported is set by message_delta, the final count.
type msgStream struct {
	u      msgUsage
	chars  int64
	done   bool
	broken bool
	// The content block open now (index, -1 for none), and before the
	// last event: a stop ends the stream as though that event was not sent.
	open, last int64
	c          Chunk // what the last event says
}

func (messages) NewStream() Stream { return &msgStream{open: -1, last: -1} }

func (st *msgStream) Observe(ev protocol.Event) bool {
	st.last = st.open
	st.c.reset(ev)
	i, bad := eventObject(ev.Data)
	if i < 0 {
		st.broken = st.broken || bad
		return true
	}
	s := str(ev.Data)[i:]
	typ := ev.Name
	if typ == "" {
		typ = strValue(field(s, "type"))
	}
	c := &st.c
	c.Object, c.Type = true, typ
	switch typ {
	case "content_block_delta":
		delta := field(s, "delta")
		if !isObject(delta) {
			break
		}
		dt := field(delta, "type")
		switch {
		case strIs(dt, "text_delta"):
			t := field(delta, "text")
			st.chars += countChars(t)
			c.Block, c.Text = "text_delta", inside(t)
		case strIs(dt, "input_json_delta"):
			j := field(delta, "partial_json")
			st.chars += countChars(j)
			c.Block, c.Index = "input_json_delta", jsonInt(field(s, "index"))
			c.tool().Args = inside(j)
		case strIs(dt, "thinking_delta"):
			st.chars += countChars(field(delta, "thinking"))
		}
	case "content_block_start":
		raw := field(s, "index")
		c.Index = jsonInt(raw)
		st.open = -1
		if n, ok := intValue(raw); ok && n >= 0 {
			st.open = n
		}
		b := field(s, "content_block")
		switch bt := field(b, "type"); {
		case strIs(bt, "text"):
			t := field(b, "text")
			st.chars += countChars(t)
			c.Block, c.Text = "text", inside(t)
		case strIs(bt, "tool_use"):
			c.Block = "tool_use"
			t := c.tool()
			t.ID, t.Name = inside(field(b, "id")), inside(field(b, "name"))
		}
	case "content_block_stop":
		st.open = -1
		c.Index = jsonInt(field(s, "index"))
	case "message_start":
		if m := field(s, "message"); isObject(m) {
			if u := field(m, "usage"); isObject(u) {
				st.u.read(u)
				c.HasUsage = true
			}
		}
	case "message_delta":
		if u := field(s, "usage"); isObject(u) {
			st.u.read(u)
			st.u.reported = true
			c.HasUsage = true
		}
		sr := field(field(s, "delta"), "stop_reason")
		c.Finish, c.HasFinish = strValue(sr), isString(sr)
	case "message_stop":
		st.done = true
	case "error":
		c.Error = field(s, "error")
	}
	if c.HasUsage {
		c.Usage = st.u.usage()
	}
	return true
}

// Stop ends the stream as a messages stream stopped by max tokens: the
// open content block closed, a message_delta with stop_reason
// "max_tokens" and the output count, then message_stop.
func (st *msgStream) Stop(o StopOptions, emit func(protocol.Event) error) error {
	w := stopWriter{emit: emit}
	if st.last >= 0 {
		b := append(w.b[:0], `{"type":"content_block_stop","index":`...)
		w.send("content_block_stop", append(strconv.AppendInt(b, st.last, 10), '}'))
	}
	b := append(w.b[:0], `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":`...)
	w.send("message_delta", append(strconv.AppendInt(b, o.Usage.OutputTokens, 10), `}}`...))
	w.send("message_stop", []byte(`{"type":"message_stop"}`))
	return w.err
}

func (st *msgStream) Usage() protocol.Usage { return st.u.usage() }
func (st *msgStream) Chunk() *Chunk         { return &st.c }
func (st *msgStream) OutputChars() int64    { return st.chars }
func (st *msgStream) Complete() bool        { return st.done }
func (st *msgStream) Broken() bool          { return st.broken }
