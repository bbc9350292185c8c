package codec

import (
	"strconv"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// responses is the responses-style codec (POST /v1/responses).
type responses struct{}

func (responses) Protocol() protocol.ID { return protocol.OpenAIResponses }

const (
	respModel = iota
	respInput
	respInstructions
	respPrevious
	respMaxOutput
	respReasoning
	respTemperature
	respTopP
	respFStream
	respTools
)

func (responses) Inspect(body []byte) (Request, error) {
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
			if err = d.mark(respModel, name); err == nil {
				r.Model, err = requireModel(raw)
			}
		case "input":
			if err = d.mark(respInput, name); err == nil {
				err = respInspectInput(s, vs, raw, &r)
			}
		case "instructions":
			if err = d.mark(respInstructions, name); err == nil {
				if !isNull(raw) && !isString(raw) {
					err = invalid("the field \"instructions\" must be a string")
				}
				r.InputBytes += rawLen(raw)
			}
		case "previous_response_id":
			if err = d.mark(respPrevious, name); err == nil && !isNull(raw) {
				if !isString(raw) {
					err = invalid("the field \"previous_response_id\" must be a string")
				}
				r.PreviousResponseID = true
			}
		case "max_output_tokens":
			if err = d.mark(respMaxOutput, name); err == nil {
				r.MaxTokens, err = positiveInt(raw, name)
			}
		case "reasoning":
			if err = d.mark(respReasoning, name); err == nil {
				err = respReasoningValid(raw)
			}
		case "temperature":
			if err = d.mark(respTemperature, name); err == nil {
				err = numberIn(raw, name, 0, 2)
			}
		case "top_p":
			if err = d.mark(respTopP, name); err == nil {
				err = numberIn(raw, name, 0, 1)
			}
		case "stream":
			if err = d.mark(respFStream, name); err == nil {
				r.Stream, err = boolField(raw, name)
			}
		case "tools":
			if err = d.mark(respTools, name); err == nil {
				err = respInspectTools(s, vs, raw, &r)
			}
		}
		if err != nil {
			return Request{}, err
		}
	}
	if it.bad {
		return Request{}, malformed()
	}
	if !d.has(respModel) {
		return Request{}, invalid("the field \"model\" is required")
	}
	if !d.has(respInput) {
		return Request{}, invalid("the field \"input\" is required: a string or an array of input items")
	}
	return r, nil
}

func respInspectInput(s string, vs int, raw string, r *Request) error {
	if isString(raw) {
		r.InputBytes += int64(len(raw))
		return nil
	}
	if !isArray(raw) {
		return invalid("the field \"input\" must be a string or an array of input items")
	}
	r.InputBytes += int64(len(raw))
	it := elems(s, vs)
	for n := 0; ; n++ {
		_, is, ie, ok := it.next()
		if !ok {
			return nil
		}
		if !isObject(s[is:ie]) {
			return invalid("input[%d] must be an object (an input item)", n)
		}
		role, content, output := "", "", ""
		fields := members(s, is)
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
			case "output":
				output = s[fs:fe]
			}
		}
		if role != "" && !strIs(role, "user") && !strIs(role, "assistant") &&
			!strIs(role, "system") && !strIs(role, "developer") {
			return invalid("the field \"input[%d].role\" must be one of user, assistant, system, developer (got %s)", n, quoteShort(role))
		}
		if !r.HasImages {
			r.HasImages = (isArray(content) && partsHave(content, "input_image")) ||
				(isArray(output) && partsHave(output, "input_image"))
		}
	}
}

func respReasoningValid(raw string) error {
	if isNull(raw) {
		return nil
	}
	if !isObject(raw) {
		return invalid("the field \"reasoning\" must be an object")
	}
	eff := field(raw, "effort")
	if eff == "" || isNull(eff) {
		return nil
	}
	for _, v := range [...]string{"minimal", "low", "medium", "high", "none", "xhigh"} {
		if strIs(eff, v) {
			return nil
		}
	}
	return invalid("the field \"reasoning.effort\" must be one of none, minimal, low, medium, high, xhigh (got %s)", quoteShort(eff))
}

func respInspectTools(s string, vs int, raw string, r *Request) error {
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
			return invalid("tools[%d] must be an object with a type", n)
		}
		typ := field(tool, "type")
		if !isString(typ) || len(typ) == 2 {
			return invalid("the field \"tools[%d].type\" is required", n)
		}
		if !strIs(typ, "function") {
			r.BuiltinTools = addTool(r.BuiltinTools, strValue(typ))
		}
	}
}

func (responses) Rewrite(body []byte, o RewriteOptions) ([]byte, error) {
	return rewriteFlat(body, o.Model, "max_output_tokens", o.MaxTokens)
}

func (responses) Usage(body []byte) protocol.Usage {
	return respUsage(field(str(body), "usage"))
}

func respUsage(u string) protocol.Usage {
	var out protocol.Usage
	if !isObject(u) {
		return out
	}
	out.Reported = true
	it := members(u, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return out
		}
		raw := u[vs:ve]
		switch keyName(k) {
		case "input_tokens":
			out.InputTokens = count(raw)
		case "output_tokens":
			out.OutputTokens = count(raw)
		case "input_tokens_details":
			if isObject(raw) {
				out.CachedTokens = count(field(raw, "cached_tokens"))
			}
		case "output_tokens_details":
			if isObject(raw) {
				out.ReasoningTokens = count(field(raw, "reasoning_tokens"))
			}
		}
	}
}

func (responses) OutputChars(body []byte) int64 {
	return respOutputChars(field(str(body), "output"))
}

// respOutputChars counts the generated characters of an output array:
// message text and refusals, function and custom tool call arguments,
// reasoning summaries and reasoning text.
func respOutputChars(output string) int64 {
	if !isArray(output) {
		return 0
	}
	var n int64
	it := elems(output, 0)
	for {
		_, is, ie, ok := it.next()
		if !ok {
			return n
		}
		item := output[is:ie]
		if !isObject(item) {
			continue
		}
		typ := field(item, "type")
		switch {
		case strIs(typ, "message"):
			if c := field(item, "content"); isArray(c) {
				n += textParts(c, "text") + textParts(c, "refusal")
			}
		case strIs(typ, "function_call"):
			n += countChars(field(item, "arguments"))
		case strIs(typ, "custom_tool_call"):
			n += countChars(field(item, "input"))
		case strIs(typ, "reasoning"):
			if c := field(item, "summary"); isArray(c) {
				n += textParts(c, "text")
			}
			if c := field(item, "content"); isArray(c) {
				n += textParts(c, "text")
			}
		}
	}
}

func (responses) ErrorMessage(body []byte) string { return errorMessage(body) }

func (responses) NewStream() Stream { return &respStream{} }

// respStream tracks a responses-style stream: deltas count characters,
// response.completed (or .incomplete, .failed) ends it with usage. For a
// stop it keeps what the events that end a response repeat: the
// response's id, the items done, and the open item with its text.
type respStream struct {
	usage       protocol.Usage
	chars       int64
	done        bool
	broken      bool
	events      int64  // events observed
	seq0        int64  // the first event's sequence_number
	id, created string // raw, from response.created
	open, last  respItem
	text        []byte // the open item's text or arguments (raw inside)
	items       []byte // the items done, raw JSON, comma-separated
	c           Chunk  // what the last event says
}

// respItem is the output item streaming; last is it before the last event,
// with the lengths text and items had then.
type respItem struct {
	kind              byte   // 0 none, 'm' a message, 'f' a function call
	id, callID, name  string // raw JSON strings
	output, content   string // raw JSON numbers
	textLen, itemsLen int
}

func (st *respStream) Observe(ev protocol.Event) bool {
	st.last = st.open
	st.last.textLen, st.last.itemsLen = len(st.text), len(st.items)
	c := &st.c
	c.reset(ev)
	i, bad := eventObject(ev.Data)
	if i < 0 {
		st.broken = st.broken || bad
		return true
	}
	c.Object = true
	s := str(ev.Data)[i:]
	st.events++
	if st.events == 1 {
		st.seq0, _ = intValue(field(s, "sequence_number"))
	}
	typ := ev.Name
	if typ == "" {
		typ = strValue(field(s, "type"))
	}
	c.Type = typ
	switch typ {
	case "response.output_text.delta", "response.function_call_arguments.delta":
		d := field(s, "delta")
		st.chars += countChars(d)
		if isString(d) && st.open.kind != 0 {
			st.text = append(st.text, d[1:len(d)-1]...)
		}
		if typ == "response.output_text.delta" {
			c.Text = inside(d)
		} else {
			c.Index = outputIndex(s)
			c.tool().Args = inside(d)
		}
	case "response.refusal.delta":
		d := field(s, "delta")
		st.chars += countChars(d)
		c.Text = inside(d)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.custom_tool_call_input.delta":
		st.chars += countChars(field(s, "delta"))
	case "response.created":
		if r := field(s, "response"); isObject(r) && st.id == "" {
			st.id, st.created = keep(field(r, "id")), keep(field(r, "created_at"))
		}
	case "response.output_item.added":
		st.open, st.text = respItem{}, st.text[:0]
		item := field(s, "item")
		switch typ := field(item, "type"); {
		case strIs(typ, "message"):
			st.open = respItem{kind: 'm', id: keep(field(item, "id")), output: keep(field(s, "output_index")), content: "0"}
		case strIs(typ, "function_call"):
			out, callID, name := field(s, "output_index"), field(item, "call_id"), field(item, "name")
			st.open = respItem{kind: 'f', id: keep(field(item, "id")), output: keep(out),
				callID: keep(callID), name: keep(name)}
			c.Block, c.Index = "function_call", outputIndexOf(out)
			c.Tools = append(c.Tools, ToolDelta{ID: inside(callID), Name: inside(name), Args: inside(field(item, "arguments"))})
		}
	case "response.content_part.added":
		if c := field(s, "content_index"); isNumber(c) && st.open.kind == 'm' {
			st.open.content = keep(c)
		}
	case "response.output_item.done":
		item := field(s, "item")
		if isObject(item) {
			if len(st.items) > 0 {
				st.items = append(st.items, ',')
			}
			st.items = append(st.items, item...)
		}
		st.open, st.text = respItem{}, st.text[:0]
		c.Index = outputIndex(s)
		c.tool().Args = inside(field(item, "arguments"))
	case "response.completed", "response.incomplete", "response.failed":
		st.done = true
		resp := field(s, "response")
		u := field(resp, "usage")
		if isObject(u) {
			st.usage = respUsage(u)
		}
		if typ == "response.failed" {
			c.Error = resp
			break
		}
		// A translator reports what the end says, zero when it says
		// nothing.
		c.Usage, c.HasUsage = respUsage(u), true
		c.Finish, c.HasFinish = strValue(field(resp, "status")), true
		c.Reason = strValue(field(field(resp, "incomplete_details"), "reason"))
	case "error":
		c.Error = s
	}
	return true
}

// Stop ends the stream as a responses stream stopped by
// max_output_tokens: the open item's done events (status incomplete),
// then response.incomplete with every item and the usage.
func (st *respStream) Stop(o StopOptions, emit func(protocol.Event) error) error {
	w := stopWriter{emit: emit}
	it := st.last
	text, items := st.text[:it.textLen], st.items[:it.itemsLen]
	seq := st.seq0 + st.events - 1 // the number of the event not sent
	event := func(typ string) []byte {
		b := append(w.b[:0], `{"type":"`...)
		b = append(b, typ...)
		b = append(b, `","sequence_number":`...)
		b = strconv.AppendInt(b, seq, 10)
		seq++
		return b
	}
	ref := func(b []byte) []byte {
		b = append(b, `,"item_id":`...)
		b = rawOr(b, it.id, "")
		b = append(b, `,"output_index":`...)
		return numOr(b, it.output, 0)
	}
	var item []byte
	switch it.kind {
	case 'm':
		part := func(b []byte) []byte {
			b = append(b, `{"type":"output_text","text":"`...)
			b = append(b, text...)
			return append(b, `","annotations":[],"logprobs":[]}`...)
		}
		b := ref(event("response.output_text.done"))
		b = append(append(b, `,"content_index":`...), it.content...)
		b = append(b, `,"text":"`...)
		w.send("response.output_text.done", append(append(b, text...), `","logprobs":[]}`...))
		b = ref(event("response.content_part.done"))
		b = append(append(b, `,"content_index":`...), it.content...)
		w.send("response.content_part.done", append(part(append(b, `,"part":`...)), '}'))
		item = append(item, `{"id":`...)
		item = rawOr(item, it.id, "")
		item = part(append(item, `,"type":"message","status":"incomplete","role":"assistant","content":[`...))
		item = append(item, "]}"...)
	case 'f':
		b := ref(event("response.function_call_arguments.done"))
		b = append(b, `,"arguments":"`...)
		w.send("response.function_call_arguments.done", append(append(b, text...), `"}`...))
		item = append(item, `{"id":`...)
		item = rawOr(item, it.id, "")
		item = append(item, `,"type":"function_call","status":"incomplete","call_id":`...)
		item = rawOr(item, it.callID, "")
		item = append(item, `,"name":`...)
		item = rawOr(item, it.name, "")
		item = append(item, `,"arguments":"`...)
		item = append(append(item, text...), `"}`...)
	}
	if item != nil {
		b := append(event("response.output_item.done"), `,"output_index":`...)
		b = numOr(b, it.output, 0)
		w.send("response.output_item.done", append(append(append(b, `,"item":`...), item...), '}'))
	}
	u := o.Usage
	b := append(event("response.incomplete"), `,"response":{"id":`...)
	b = rawOr(b, st.id, "resp_"+o.RequestID)
	b = append(b, `,"object":"response","created_at":`...)
	b = numOr(b, st.created, o.Created.Unix())
	b = append(b, `,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":`...)
	b = appendQuoted(b, o.Model)
	b = append(append(b, `,"output":[`...), items...)
	if item != nil {
		if len(items) > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	b = append(b, `],"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CachedTokens, 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, u.ReasoningTokens, 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, u.InputTokens+u.OutputTokens, 10)
	w.send("response.incomplete", append(b, `}}}`...))
	return w.err
}

func (st *respStream) Usage() protocol.Usage { return st.usage }
func (st *respStream) Chunk() *Chunk         { return &st.c }

// outputIndex reads an event's output_index as a translator always did:
// -1 when absent.
func outputIndex(s string) int64 { return outputIndexOf(field(s, "output_index")) }

func outputIndexOf(raw string) int64 {
	if raw == "" {
		return -1
	}
	return jsonInt(raw)
}
func (st *respStream) OutputChars() int64 { return st.chars }
func (st *respStream) Complete() bool     { return st.done }
func (st *respStream) Broken() bool       { return st.broken }
