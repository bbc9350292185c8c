package codec

import (
	"strconv"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// chat is the completions-style codec (POST /v1/chat/completions).
type chat struct{}

func (chat) Protocol() protocol.ID { return protocol.OpenAIChat }

// Top-level fields the chat codec reads, as bits of a seen set.
const (
	chatModel = iota
	chatMessages
	chatFStream
	chatMaxTokens
	chatMaxCompletion
	chatTemperature
	chatTopP
	chatN
	chatTools
	chatToolChoice
	chatStreamOptions
)

func (chat) Inspect(body []byte) (Request, error) {
	s, start, err := openBody(body)
	if err != nil {
		return Request{}, err
	}
	var (
		r          Request
		d          seen
		mt, mct    int64
		streamOpts string
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
			if err = d.mark(chatModel, name); err == nil {
				r.Model, err = requireModel(raw)
			}
		case "messages":
			if err = d.mark(chatMessages, name); err == nil {
				err = chatInspectMessages(s, vs, raw, &r)
			}
		case "stream":
			if err = d.mark(chatFStream, name); err == nil {
				r.Stream, err = boolField(raw, name)
			}
		case "max_tokens":
			if err = d.mark(chatMaxTokens, name); err == nil {
				mt, err = positiveInt(raw, name)
			}
		case "max_completion_tokens":
			if err = d.mark(chatMaxCompletion, name); err == nil {
				mct, err = positiveInt(raw, name)
			}
		case "temperature":
			if err = d.mark(chatTemperature, name); err == nil {
				err = numberIn(raw, name, 0, 2)
			}
		case "top_p":
			if err = d.mark(chatTopP, name); err == nil {
				err = numberIn(raw, name, 0, 1)
			}
		case "n":
			if err = d.mark(chatN, name); err == nil && !isNull(raw) {
				if n, ok := intValue(raw); !ok || n < 1 || n > 128 {
					err = invalid("the field \"n\" must be an integer from 1 to 128")
				}
			}
		case "tools":
			if err = d.mark(chatTools, name); err == nil {
				err = chatInspectTools(s, vs, raw, &r)
			}
		case "tool_choice":
			if err = d.mark(chatToolChoice, name); err == nil {
				err = chatToolChoiceValid(raw)
			}
		case "stream_options":
			if err = d.mark(chatStreamOptions, name); err == nil {
				streamOpts = raw
			}
		}
		if err != nil {
			return Request{}, err
		}
	}
	if it.bad {
		return Request{}, malformed()
	}
	if !d.has(chatModel) {
		return Request{}, invalid("the field \"model\" is required")
	}
	if !d.has(chatMessages) {
		return Request{}, invalid("the field \"messages\" is required")
	}
	if streamOpts != "" && !isNull(streamOpts) {
		if !isObject(streamOpts) {
			return Request{}, invalid("the field \"stream_options\" must be an object")
		}
		if !r.Stream {
			return Request{}, invalid("the field \"stream_options\" is only allowed when \"stream\" is true")
		}
		inc := field(streamOpts, "include_usage")
		if inc != "" && !isNull(inc) && !isBool(inc) {
			return Request{}, invalid("the field \"stream_options.include_usage\" must be true or false")
		}
		r.IncludeUsage = inc == "true"
	}
	r.MaxTokens = mt
	if mct > 0 {
		r.MaxTokens = mct
	}
	return r, nil
}

func chatInspectMessages(s string, vs int, raw string, r *Request) error {
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
		msg := s[ms:me]
		if !isObject(msg) {
			return invalid("messages[%d] must be an object with a role", n)
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
		case strIs(role, "system"), strIs(role, "developer"), strIs(role, "user"),
			strIs(role, "assistant"), strIs(role, "tool"):
		default:
			return invalid("the field \"messages[%d].role\" must be one of system, developer, user, assistant, tool (got %s)", n, quoteShort(role))
		}
		if !r.HasImages && isArray(content) {
			r.HasImages = partsHave(content, "image_url")
		}
		n++
	}
	if n == 0 {
		return invalid("the field \"messages\" must be a non-empty array of messages")
	}
	return nil
}

// partsHave reports whether the array of content parts raw holds a part
// of type typ.
func partsHave(raw, typ string) bool {
	parts := elems(raw, 0)
	for {
		_, ps, pe, ok := parts.next()
		if !ok {
			return false
		}
		if p := raw[ps:pe]; isObject(p) && strIs(field(p, "type"), typ) {
			return true
		}
	}
}

func chatInspectTools(s string, vs int, raw string, r *Request) error {
	if isNull(raw) {
		return nil
	}
	if !isArray(raw) {
		return invalid("the field \"tools\" must be an array of tools")
	}
	tools := elems(s, vs)
	for n := 0; ; n++ {
		_, ts, te, ok := tools.next()
		if !ok {
			return nil
		}
		tool := s[ts:te]
		if !isObject(tool) {
			return invalid("tools[%d] must be an object with a type", n)
		}
		typ := field(tool, "type")
		if !isString(typ) {
			return invalid("the field \"tools[%d].type\" is required: \"function\", \"web_search\" or \"image_generation\"", n)
		}
		switch {
		case strIs(typ, "web_search"):
			r.BuiltinTools = addTool(r.BuiltinTools, "web_search")
		case strIs(typ, "image_generation"):
			r.BuiltinTools = addTool(r.BuiltinTools, "image_generation")
		}
	}
}

func chatToolChoiceValid(raw string) error {
	switch {
	case isNull(raw), isObject(raw):
		return nil
	case strIs(raw, "none"), strIs(raw, "auto"), strIs(raw, "required"):
		return nil
	}
	return invalid("the field \"tool_choice\" must be \"none\", \"auto\", \"required\" or an object naming a function")
}

func (chat) Rewrite(body []byte, o RewriteOptions) ([]byte, error) {
	s, start, err := openForRewrite(body)
	if err != nil {
		return nil, err
	}
	var (
		e                 edits
		haveModel, haveMT bool
		stream            bool
		soStart, soEnd    = -1, -1
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
			if o.Model != "" {
				e.replace(vs, ve, strVal(o.Model))
			}
		case "max_tokens", "max_completion_tokens":
			haveMT = true
			if o.MaxTokens > 0 {
				e.replace(vs, ve, intVal(o.MaxTokens))
			}
		case "stream":
			stream = s[vs:ve] == "true"
		case "stream_options":
			soStart, soEnd = vs, ve
		}
	}
	if it.bad {
		return nil, malformed()
	}
	if o.Model != "" && !haveModel {
		e.insert(&it, start, "model", strVal(o.Model))
	}
	if o.MaxTokens > 0 && !haveMT {
		f := o.ChatMaxTokensField
		if f != "max_completion_tokens" {
			f = "max_tokens"
		}
		e.insert(&it, start, f, intVal(o.MaxTokens))
	}
	if o.StreamUsage && stream {
		switch {
		case soStart < 0:
			e.insert(&it, start, "stream_options", rawVal(`{"include_usage":true}`))
		case isObject(s[soStart:soEnd]):
			if err := setNested(&e, s, soStart, "include_usage", "", rawVal("true")); err != nil {
				return nil, err
			}
		default:
			e.replace(soStart, soEnd, rawVal(`{"include_usage":true}`))
		}
	}
	return e.apply(body), nil
}

func (chat) Usage(body []byte) protocol.Usage {
	return chatUsage(field(str(body), "usage"))
}

// chatUsage maps a completions usage object. DeepSeek's
// prompt_cache_hit_tokens stands in when cached_tokens is absent.
func chatUsage(u string) protocol.Usage {
	var out protocol.Usage
	if !isObject(u) {
		return out
	}
	out.Reported = true
	var hit int64
	it := members(u, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		raw := u[vs:ve]
		switch keyName(k) {
		case "prompt_tokens":
			out.InputTokens = count(raw)
		case "completion_tokens":
			out.OutputTokens = count(raw)
		case "prompt_tokens_details":
			if isObject(raw) {
				out.CachedTokens = count(field(raw, "cached_tokens"))
			}
		case "completion_tokens_details":
			if isObject(raw) {
				out.ReasoningTokens = count(field(raw, "reasoning_tokens"))
			}
		case "prompt_cache_hit_tokens":
			hit = count(raw)
		}
	}
	if out.CachedTokens == 0 {
		out.CachedTokens = hit
	}
	return out
}

func (chat) OutputChars(body []byte) int64 {
	s := str(body)
	choices := field(s, "choices")
	if !isArray(choices) {
		return 0
	}
	var n int64
	it := elems(choices, 0)
	for {
		_, cs, ce, ok := it.next()
		if !ok {
			return n
		}
		if msg := field(choices[cs:ce], "message"); isObject(msg) {
			n += chatDeltaChars(msg)
		}
	}
}

// chatDeltaChars counts the generated characters of a message or a
// streamed delta: content (a string or text parts), reasoning, refusal and
// tool-call arguments.
func chatDeltaChars(msg string) int64 { return chatDelta(msg, nil) }

// textParts sums the characters of member key of each part in the array raw.
func textParts(raw, key string) int64 {
	var n int64
	it := elems(raw, 0)
	for {
		_, ps, pe, ok := it.next()
		if !ok {
			return n
		}
		if p := raw[ps:pe]; isObject(p) {
			n += countChars(field(p, key))
		}
	}
}

func (chat) ErrorMessage(body []byte) string { return errorMessage(body) }

func (chat) NewStream() Stream { return &chatStream{} }

// chatStream tracks a completions stream: data chunks, then [DONE].
type chatStream struct {
	usage       protocol.Usage
	chars       int64
	done        bool
	broken      bool
	id, created string // raw values of the first chunk, for a stop
	c           Chunk  // what the last event says, once reads is set
	reads       bool   // a translator reads c (Chunk was called)
}

func (st *chatStream) Observe(ev protocol.Event) bool {
	s := str(ev.Data)
	c, reads := &st.c, st.reads
	if reads {
		c.reset(ev)
	}
	i, bad := eventObject(ev.Data)
	if i < 0 {
		st.broken = st.broken || bad
		done := !bad && isDone(s[skipWS(s, 0):])
		st.done = st.done || done
		c.Done = done && reads
		return true
	}
	c.Object = reads
	nChoices, hasUsage := 0, false
	it := members(s, i)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		raw := s[vs:ve]
		switch keyName(k) {
		case "choices":
			if reads {
				// The last choices member is the one read, as a
				// translator always read a chunk.
				c.Text, c.Tools, c.Finish, c.HasFinish = "", c.Tools[:0], "", false
			}
			if !isArray(raw) {
				continue
			}
			choices := elems(s, vs)
			for {
				_, cs, ce, ok := choices.next()
				if !ok {
					break
				}
				nChoices++
				if reads && nChoices == 1 {
					st.chars += c.readChoice(s[cs:ce])
					continue
				}
				if delta := field(s[cs:ce], "delta"); isObject(delta) {
					st.chars += chatDeltaChars(delta)
				}
			}
		case "usage":
			if isObject(raw) {
				st.usage = chatUsage(raw)
				hasUsage = true
				c.Usage, c.HasUsage = st.usage, reads
			}
		case "error":
			if reads && isObject(raw) {
				c.Error = raw
			}
		case "id":
			if st.id == "" && isString(raw) {
				st.id = keep(raw)
			}
		case "created":
			if st.created == "" && isNumber(raw) {
				st.created = keep(raw)
			}
		}
	}
	return !(hasUsage && nChoices == 0)
}

// readChoice reads choice 0 of a completions chunk into c in one walk and
// returns the generated characters of its (first) delta. Later members
// of the same name win, except the characters counted.
func (c *Chunk) readChoice(ch string) int64 {
	if !isObject(ch) {
		return 0
	}
	var chars int64
	counted := false
	it := members(ch, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return chars
		}
		raw := ch[vs:ve]
		switch keyName(k) {
		case "finish_reason":
			c.Finish, c.HasFinish = strValue(raw), isString(raw)
		case "delta":
			if isObject(raw) {
				n := chatDelta(raw, c)
				if !counted {
					chars, counted = n, true
				}
			}
		}
	}
}

// chatDelta counts the generated characters of a message or delta and,
// when c is not nil, reads its text and tool calls into c in the same walk.
func chatDelta(delta string, c *Chunk) int64 {
	var n int64
	it := members(delta, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return n
		}
		raw := delta[vs:ve]
		switch keyName(k) {
		case "content":
			if c != nil {
				c.Text = inside(raw)
			}
			if isArray(raw) {
				n += textParts(raw, "text")
			} else {
				n += countChars(raw)
			}
		case "refusal":
			if c != nil && c.Text == "" {
				c.Text = inside(raw)
			}
			n += countChars(raw)
		case "reasoning_content", "reasoning":
			n += countChars(raw)
		case "tool_calls":
			if !isArray(raw) {
				continue
			}
			calls := elems(raw, 0)
			for {
				_, cs, ce, ok := calls.next()
				if !ok {
					break
				}
				t := raw[cs:ce]
				fn := field(t, "function")
				args := field(fn, "arguments")
				if isObject(fn) {
					n += countChars(args)
				}
				if c == nil {
					continue
				}
				c.Tools = append(c.Tools, ToolDelta{
					Index: jsonInt(field(t, "index")),
					ID:    inside(field(t, "id")),
					Name:  inside(field(fn, "name")),
					Args:  inside(args),
				})
			}
		case "function_call":
			if isObject(raw) {
				n += countChars(field(raw, "arguments"))
			}
		}
	}
}

// inside is the raw inside of a JSON string value, "" for anything else.
func inside(raw string) string {
	if !isString(raw) {
		return ""
	}
	return raw[1 : len(raw)-1]
}

// Stop ends the stream as a completions stream stopped by max tokens: a
// chunk with finish_reason "length", the usage chunk when the client
// asked for it, then [DONE].
func (st *chatStream) Stop(o StopOptions, emit func(protocol.Event) error) error {
	w := stopWriter{emit: emit}
	head := func() []byte {
		b := append(w.b[:0], `{"id":`...)
		b = rawOr(b, st.id, "chatcmpl-"+o.RequestID)
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
		b = numOr(b, st.created, o.Created.Unix())
		b = append(b, `,"model":`...)
		return append(appendQuoted(b, o.Model), ',')
	}
	w.send("", append(head(), `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`...))
	if o.IncludeUsage {
		u := o.Usage
		b := append(head(), `"choices":[],"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, u.OutputTokens, 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, u.InputTokens+u.OutputTokens, 10)
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, u.CachedTokens, 10)
		w.send("", append(b, `}}}`...))
	}
	w.send("", []byte("[DONE]"))
	return w.err
}

// isDone reports whether s is the [DONE] sentinel (trailing spaces allowed).
func isDone(s string) bool {
	const done = "[DONE]"
	return len(s) >= len(done) && s[:len(done)] == done && skipWS(s, len(done)) == len(s)
}

func (st *chatStream) Usage() protocol.Usage { return st.usage }
func (st *chatStream) Chunk() *Chunk         { st.reads = true; return &st.c }
func (st *chatStream) OutputChars() int64    { return st.chars }
func (st *chatStream) Complete() bool        { return st.done }
func (st *chatStream) Broken() bool          { return st.broken }
