package translate

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// responsesToChat lets responses clients reach completions upstreams
// (enabled per model by translate_from).
type responsesToChat struct{}

func (responsesToChat) From() protocol.ID { return protocol.OpenAIResponses }
func (responsesToChat) To() protocol.ID   { return protocol.OpenAIChat }

func (responsesToChat) Request(body []byte, opts RequestOptions) ([]byte, []string, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, nil, err
	}
	var (
		w        warnings
		c        = chatBody{model: opts.Model}
		firstErr error
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
		case "instructions":
			c.system = appendSystemText(c.system, inner(v))
		case "input":
			firstErr = responsesInputToChat(v, &c, &w)
		case "max_output_tokens":
			c.maxToken = v.Int()
		case "temperature", "top_p", "frequency_penalty", "presence_penalty", "parallel_tool_calls", "user":
			c.extra = keyRaw(c.extra, k.Str, v.Raw)
		case "stream", "stream_options":
		case "tools":
			var tools []byte
			v.ForEach(func(_, t gjson.Result) bool {
				typ := t.Get("type").Str
				if typ != "function" {
					w.add("tools." + typ)
					return true
				}
				tools = append(sep(tools), `{"type":"function","function":{"name":`...)
				tools = append(tools, rawString(t.Get("name"))...)
				for _, f := range [...]string{"description", "parameters", "strict"} {
					if x := t.Get(f); present(x) {
						tools = keyRaw(tools, f, x.Raw)
					}
				}
				tools = append(tools, "}}"...)
				return true
			})
			if len(tools) > 0 {
				c.extra = append(key(c.extra, "tools"), '[')
				c.extra = append(append(c.extra, tools...), ']')
			}
		case "tool_choice":
			switch {
			case v.Type == gjson.String:
				c.extra = keyRaw(c.extra, "tool_choice", v.Raw)
			case v.Get("type").Str == "function":
				c.extra = append(key(c.extra, "tool_choice"), `{"type":"function","function":{"name":`...)
				c.extra = append(c.extra, rawString(v.Get("name"))...)
				c.extra = append(c.extra, "}}"...)
			default:
				w.add(k.Str)
			}
		case "reasoning":
			if !opts.Reasoning {
				w.add(k.Str)
				break
			}
			// The completions API has the effort, not the summary.
			v.ForEach(func(rk, rv gjson.Result) bool {
				switch {
				case !present(rv):
				case rk.Str == "effort" && rv.Type == gjson.String:
					c.extra = keyRaw(c.extra, "reasoning_effort", rv.Raw)
				default:
					w.add("reasoning." + rk.Str)
				}
				return true
			})
		case "text":
			v.ForEach(func(tk, tv gjson.Result) bool {
				if tk.Str != "format" {
					if present(tv) {
						w.add("text." + tk.Str)
					}
					return true
				}
				switch tv.Get("type").Str {
				case "json_object":
					c.extra = append(key(c.extra, "response_format"), `{"type":"json_object"}`...)
				case "json_schema":
					c.extra = append(key(c.extra, "response_format"), `{"type":"json_schema","json_schema":{`...)
					for _, f := range [...]string{"name", "description", "schema", "strict"} {
						if x := tv.Get(f); present(x) {
							c.extra = keyRaw(c.extra, f, x.Raw)
						}
					}
					c.extra = append(c.extra, "}}"...)
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
	return c.build(opts, len(body)), w, nil
}

// responsesInputToChat converts input items. Assistant messages and the
// function calls after them merge into one assistant message.
func responsesInputToChat(v gjson.Result, c *chatBody, w *warnings) error {
	if v.Type == gjson.String {
		m := append([]byte(`{"role":"user","content":`), v.Raw...)
		c.message(append(m, '}'))
		return nil
	}
	var (
		err   error
		text  []byte // pending assistant text, raw inside
		calls []byte // pending assistant tool_calls
		m     []byte
		parts []byte
	)
	flush := func() {
		if len(text) == 0 && len(calls) == 0 {
			return
		}
		m = append(m[:0], `{"role":"assistant","content":`...)
		if len(text) > 0 {
			m = append(append(append(m, '"'), text...), '"')
		} else {
			m = append(m, "null"...)
		}
		if len(calls) > 0 {
			m = append(append(append(m, `,"tool_calls":[`...), calls...), ']')
		}
		c.message(append(m, '}'))
		text, calls = text[:0], calls[:0]
	}
	v.ForEach(func(_, it gjson.Result) bool {
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
			role := it.Get("role").Str
			content := it.Get("content")
			switch role {
			case "assistant":
				if len(calls) > 0 {
					flush()
				}
				if content.Type == gjson.String {
					text = append(text, inner(content)...)
				}
				eachElement(content, func(p gjson.Result) bool {
					switch pt := p.Get("type").Str; pt {
					case "output_text", "input_text", "text":
						text = append(text, inner(p.Get("text"))...)
					case "refusal":
						text = append(text, inner(p.Get("refusal"))...)
					default:
						w.add("input.content." + pt)
					}
					return true
				})
			case "system", "developer":
				flush()
				var sys []byte
				if content.Type == gjson.String {
					sys = append(sys, inner(content)...)
				}
				eachElement(content, func(p gjson.Result) bool {
					sys = appendSystemText(sys, inner(p.Get("text")))
					return true
				})
				m = append(m[:0], `{"role":"system","content":"`...)
				m = append(m, sys...)
				c.message(append(m, `"}`...))
			case "user":
				flush()
				if content.Type == gjson.String {
					m = append(append(m[:0], `{"role":"user","content":`...), content.Raw...)
					c.message(append(m, '}'))
					return true
				}
				parts = parts[:0]
				content.ForEach(func(_, p gjson.Result) bool {
					parts, err = chatPartFromResponses(parts, p, w)
					return err == nil
				})
				if len(parts) > 0 {
					m = append(m[:0], `{"role":"user","content":[`...)
					m = append(m, parts...)
					c.message(append(m, "]}"...))
				}
			default:
				err = invalid("the input role %q cannot be translated", role)
			}
		case "function_call":
			calls = append(sep(calls), `{"id":`...)
			calls = append(calls, rawString(it.Get("call_id"))...)
			calls = append(calls, `,"type":"function","function":{"name":`...)
			calls = append(calls, rawString(it.Get("name"))...)
			calls = append(calls, `,"arguments":`...)
			calls = append(calls, rawString(it.Get("arguments"))...)
			calls = append(calls, "}}"...)
		case "function_call_output":
			flush()
			m = append(m[:0], `{"role":"tool","tool_call_id":`...)
			m = append(m, rawString(it.Get("call_id"))...)
			m = append(m, `,"content":"`...)
			out := it.Get("output")
			if out.Type == gjson.String {
				m = append(m, inner(out)...)
			} else {
				first := true
				out.ForEach(func(_, p gjson.Result) bool {
					if t := inner(p.Get("text")); t != "" {
						if !first {
							m = append(m, `\n`...)
						}
						first = false
						m = append(m, t...)
					}
					return true
				})
			}
			c.message(append(m, `"}`...))
		default:
			w.add("input." + typ)
		}
		return err == nil
	})
	if err == nil {
		flush()
	}
	return err
}

// chatPartFromResponses appends the completions part of a responses user
// content part.
func chatPartFromResponses(parts []byte, p gjson.Result, w *warnings) ([]byte, error) {
	switch typ := p.Get("type").Str; typ {
	case "input_text", "text", "output_text":
		parts = append(sep(parts), `{"type":"text","text":`...)
		parts = append(parts, rawString(p.Get("text"))...)
		return append(parts, '}'), nil
	case "input_image":
		u := p.Get("image_url")
		if u.Type != gjson.String || u.Str == "" {
			return nil, invalid("an input_image must carry image_url; file ids cannot be sent to this model's upstream")
		}
		parts = append(sep(parts), `{"type":"image_url","image_url":{"url":`...)
		parts = append(parts, u.Raw...)
		if d := p.Get("detail"); d.Type == gjson.String {
			parts = keyRaw(parts, "detail", d.Raw)
		}
		return append(parts, "}}"...), nil
	case "input_file":
		parts = append(sep(parts), `{"type":"file","file":{`...)
		n := len(parts)
		for _, f := range [...]string{"file_data", "file_id", "filename"} {
			if x := p.Get(f); x.Type == gjson.String {
				parts = keyRaw(parts, f, x.Raw)
			}
		}
		if len(parts) == n || present(p.Get("file_url")) {
			return nil, invalid("an input_file must carry file_data or file_id; file URLs cannot be sent to this model's upstream")
		}
		return append(parts, "}}"...), nil
	default:
		w.add("input.content." + typ)
		return parts, nil
	}
}

func responseID(o ResponseOptions) string { return "resp_" + o.RequestID }

func appendResponsesUsage(b []byte, u usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.input, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.cached, 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, u.output, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, u.reasoning, 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, u.input+u.output, 10)
	return append(b, '}')
}

// responseStatus maps a finish_reason to a response status and the
// incomplete reason.
func responseStatus(finish string) (status, reason string) {
	switch finish {
	case "length":
		return "incomplete", "max_output_tokens"
	case "content_filter":
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// appendResponse writes a response object; output is the comma-separated
// items, u nil for usage null.
func appendResponse(b []byte, o ResponseOptions, status, reason string, output []byte, u *usage) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, responseID(o))
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, o.Created.Unix(), 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","error":null,"incomplete_details":`...)
	if reason != "" {
		b = append(b, `{"reason":"`...)
		b = append(b, reason...)
		b = append(b, `"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":null,"max_output_tokens":null,"model":`...)
	b = appendStr(b, o.Model)
	b = append(b, `,"output":[`...)
	b = append(b, output...)
	b = append(b, `],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","metadata":{},"usage":`...)
	if u == nil {
		b = append(b, "null"...)
	} else {
		b = appendResponsesUsage(b, *u)
	}
	return append(b, '}')
}

// itemID derives the id of output item n.
func itemID(prefix string, o ResponseOptions, n int) string {
	return prefix + o.RequestID + "_" + strconv.Itoa(n)
}

func appendMessageItem(b []byte, id, status, text string) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, id)
	b = append(b, `,"type":"message","status":"`...)
	b = append(b, status...)
	b = append(b, `","role":"assistant","content":[`...)
	if status == "completed" {
		b = append(b, `{"type":"output_text","text":"`...)
		b = append(b, text...)
		b = append(b, `","annotations":[],"logprobs":[]}`...)
	}
	return append(b, "]}"...)
}

func appendFunctionItem(b []byte, id, status, callID, name, args string) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, id)
	b = append(b, `,"type":"function_call","status":"`...)
	b = append(b, status...)
	b = append(b, `","call_id":`...)
	b = append(b, callID...)
	b = append(b, `,"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":"`...)
	b = append(b, args...)
	return append(b, `"}`...)
}

func (responsesToChat) Response(body []byte, o ResponseOptions) ([]byte, error) {
	res, err := readChatCompletion(body)
	if err != nil {
		return nil, err
	}
	var items []byte
	n := 0
	if res.text != "" {
		items = appendMessageItem(items, itemID("msg_", o, n), "completed", res.text)
		n++
	}
	for _, c := range res.calls {
		items = appendFunctionItem(sep(items), itemID("fc_", o, n), "completed", c.id, c.name, inner(gjson.Parse(c.args)))
		n++
	}
	status, reason := responseStatus(res.finish)
	return appendResponse(make([]byte, 0, len(body)+512), o, status, reason, items, &res.usage), nil
}

func (responsesToChat) NewStream(o ResponseOptions) Stream {
	return &chatToResponsesStream{opts: o}
}

// fnItem is a function_call output item being streamed.
type fnItem struct {
	output       int
	id           string
	callID, name string // raw JSON strings
	args         []byte // raw inside of the arguments string
	done         bool
}

// chatToResponsesStream turns completions chunks into responses events.
// A message item gets output_item.added and content_part.added before its
// first delta; function items stay open until the finish chunk.
type chatToResponsesStream struct {
	opts     ResponseOptions
	d        chatDelta
	seq      int64
	started  bool
	items    []byte // completed items, comma-separated
	nItems   int
	msgOpen  bool
	msgIdx   int
	msgID    string
	text     []byte
	fns      []fnItem
	fnByTool []int // completions tool index -> fns index, -1 before it starts
	finish   string
	closed   bool
	usage    usage
}

func (s *chatToResponsesStream) event(emit func(protocol.Event) error, typ string, extra int, fill func([]byte) []byte) error {
	b := make([]byte, 0, 96+extra)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, s.seq, 10)
	s.seq++
	b = fill(b)
	return emit(protocol.Event{Name: typ, Data: append(b, '}')})
}

func (s *chatToResponsesStream) start(emit func(protocol.Event) error) error {
	if s.started {
		return nil
	}
	s.started = true
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		err := s.event(emit, typ, 640, func(b []byte) []byte {
			return appendResponse(append(b, `,"response":`...), s.opts, "in_progress", "", nil, nil)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *chatToResponsesStream) itemRef(b []byte, id string, output int) []byte {
	b = keyStr(b, "item_id", id)
	return keyInt(b, "output_index", int64(output))
}

func (s *chatToResponsesStream) openMessage(emit func(protocol.Event) error) error {
	s.msgOpen, s.msgIdx = true, s.nItems
	s.nItems++
	s.msgID = itemID("msg_", s.opts, s.msgIdx)
	s.text = s.text[:0]
	err := s.event(emit, "response.output_item.added", 160, func(b []byte) []byte {
		b = keyInt(b, "output_index", int64(s.msgIdx))
		return appendMessageItem(key(b, "item"), s.msgID, "in_progress", "")
	})
	if err != nil {
		return err
	}
	return s.event(emit, "response.content_part.added", 160, func(b []byte) []byte {
		b = s.itemRef(b, s.msgID, s.msgIdx)
		return append(b, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`...)
	})
}

func (s *chatToResponsesStream) closeMessage(emit func(protocol.Event) error) error {
	if !s.msgOpen {
		return nil
	}
	s.msgOpen = false
	text := bstr(s.text)
	err := s.event(emit, "response.output_text.done", len(text)+96, func(b []byte) []byte {
		b = s.itemRef(b, s.msgID, s.msgIdx)
		b = append(b, `,"content_index":0,"text":"`...)
		b = append(b, text...)
		return append(b, `","logprobs":[]`...)
	})
	if err == nil {
		err = s.event(emit, "response.content_part.done", len(text)+128, func(b []byte) []byte {
			b = s.itemRef(b, s.msgID, s.msgIdx)
			b = append(b, `,"content_index":0,"part":{"type":"output_text","text":"`...)
			b = append(b, text...)
			return append(b, `","annotations":[],"logprobs":[]}`...)
		})
	}
	if err == nil {
		s.items = appendMessageItem(sep(s.items), s.msgID, "completed", text)
		err = s.event(emit, "response.output_item.done", len(text)+160, func(b []byte) []byte {
			b = keyInt(b, "output_index", int64(s.msgIdx))
			return appendMessageItem(key(b, "item"), s.msgID, "completed", text)
		})
	}
	return err
}

func (s *chatToResponsesStream) closeFunctions(emit func(protocol.Event) error) error {
	for i := range s.fns {
		f := &s.fns[i]
		if f.done {
			continue
		}
		f.done = true
		args := bstr(f.args)
		err := s.event(emit, "response.function_call_arguments.done", len(args)+96, func(b []byte) []byte {
			b = s.itemRef(b, f.id, f.output)
			b = keyRaw(b, "name", f.name)
			b = append(b, `,"arguments":"`...)
			b = append(b, args...)
			return append(b, '"')
		})
		if err != nil {
			return err
		}
		s.items = appendFunctionItem(sep(s.items), f.id, "completed", f.callID, f.name, args)
		err = s.event(emit, "response.output_item.done", len(args)+160, func(b []byte) []byte {
			b = keyInt(b, "output_index", int64(f.output))
			return appendFunctionItem(key(b, "item"), f.id, "completed", f.callID, f.name, args)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *chatToResponsesStream) Event(ev protocol.Event, emit func(protocol.Event) error) error {
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
	if s.closed {
		return nil
	}
	if d.text != "" {
		if !s.msgOpen {
			if err := s.openMessage(emit); err != nil {
				return err
			}
		}
		s.text = append(s.text, d.text...)
		err := s.event(emit, "response.output_text.delta", len(d.text)+96, func(b []byte) []byte {
			b = s.itemRef(b, s.msgID, s.msgIdx)
			b = append(b, `,"content_index":0,"delta":"`...)
			b = append(b, d.text...)
			return append(b, `","logprobs":[]`...)
		})
		if err != nil {
			return err
		}
	}
	for _, t := range d.tools {
		if err := s.tool(emit, t); err != nil {
			return err
		}
	}
	if d.finish != "" {
		s.finish, s.closed = d.finish, true
		if err := s.closeMessage(emit); err != nil {
			return err
		}
		return s.closeFunctions(emit)
	}
	return nil
}

func (s *chatToResponsesStream) tool(emit func(protocol.Event) error, t toolDelta) error {
	if t.index < 0 || t.index > 1<<10 {
		return nil
	}
	for len(s.fnByTool) <= t.index {
		s.fnByTool = append(s.fnByTool, -1)
	}
	if s.fnByTool[t.index] < 0 {
		if err := s.closeMessage(emit); err != nil {
			return err
		}
		f := fnItem{output: s.nItems, id: itemID("fc_", s.opts, s.nItems), callID: t.id, name: t.name}
		if f.callID == "" {
			f.callID = `"` + syntheticCallID(t.index) + `"`
		}
		if f.name == "" {
			f.name = `""`
		}
		s.nItems++
		s.fnByTool[t.index] = len(s.fns)
		s.fns = append(s.fns, f)
		err := s.event(emit, "response.output_item.added", 192, func(b []byte) []byte {
			b = keyInt(b, "output_index", int64(f.output))
			return appendFunctionItem(key(b, "item"), f.id, "in_progress", f.callID, f.name, "")
		})
		if err != nil {
			return err
		}
	}
	f := &s.fns[s.fnByTool[t.index]]
	if t.args == "" || f.done {
		return nil
	}
	f.args = append(f.args, t.args...)
	return s.event(emit, "response.function_call_arguments.delta", len(t.args)+96, func(b []byte) []byte {
		b = s.itemRef(b, f.id, f.output)
		b = append(b, `,"delta":"`...)
		b = append(b, t.args...)
		return append(b, '"')
	})
}

func (s *chatToResponsesStream) End(emit func(protocol.Event) error) error {
	if err := s.start(emit); err != nil {
		return err
	}
	if err := s.closeMessage(emit); err != nil {
		return err
	}
	if err := s.closeFunctions(emit); err != nil {
		return err
	}
	status, reason := responseStatus(s.finish)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	return s.event(emit, typ, len(s.items)+768, func(b []byte) []byte {
		return appendResponse(append(b, `,"response":`...), s.opts, status, reason, s.items, &s.usage)
	})
}
