package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The responses protocol's answer side.

func readResponsesUsage(r gjson.Result) usage {
	return usage{
		input:     r.Get("input_tokens").Int(),
		output:    r.Get("output_tokens").Int(),
		cached:    r.Get("input_tokens_details.cached_tokens").Int(),
		reasoning: r.Get("output_tokens_details.reasoning_tokens").Int(),
	}
}

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

// responsesFinish maps a response's status (and incomplete reason) to
// the intermediate form; calls says a function was called.
func responsesFinish(status, reason string, calls bool) string {
	switch {
	case status == "incomplete" && reason == "content_filter":
		return finishFilter
	case status == "incomplete":
		return finishLength
	case calls:
		return finishTools
	}
	return finishStop
}

// responseStatus maps a finish reason to a response status and the
// incomplete reason.
func responseStatus(finish string) (status, reason string) {
	switch finish {
	case finishLength:
		return "incomplete", "max_output_tokens"
	case finishFilter:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// responseFailure is the error of a failed response.
func responseFailure(r gjson.Result) *apierr.Error {
	e := r.Get("error")
	return upstreamStreamError(e.Get("code").Str, orStr(e.Get("message").Str, "the upstream failed the response"))
}

func readResponses(r gjson.Result) (*answer, error) {
	if r.Get("status").Str == "failed" {
		return nil, responseFailure(r)
	}
	a := &answer{usage: readResponsesUsage(r.Get("usage"))}
	eachElement(r.Get("output"), func(it gjson.Result) bool {
		switch it.Get("type").Str {
		case "message":
			eachElement(it.Get("content"), func(p gjson.Result) bool {
				switch p.Get("type").Str {
				case "output_text":
					a.text = append(a.text, inner(p.Get("text"))...)
				case "refusal":
					a.text = append(a.text, inner(p.Get("refusal"))...)
				}
				return true
			})
		case "function_call":
			a.calls = append(a.calls, call{id: inner(it.Get("call_id")), name: inner(it.Get("name")), args: it.Get("arguments").Str})
		}
		return true
	})
	a.finish = responsesFinish(r.Get("status").Str, r.Get("incomplete_details.reason").Str, len(a.calls) > 0)
	return a, nil
}

func responseID(o ResponseOptions) string { return "resp_" + o.RequestID }

// appendResponse writes a response object; output is the comma-separated
// items, u nil for usage null, fail the error of a failed response.
func appendResponse(b []byte, o ResponseOptions, status, reason string, fail *apierr.Error, output []byte, u *usage) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, responseID(o))
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, o.Created.Unix(), 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","error":`...)
	if fail != nil {
		b = append(b, `{"code":`...)
		b = appendStr(b, fail.Code)
		b = append(b, `,"message":`...)
		b = appendStr(b, fail.Message)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
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

func appendMessageItem(b []byte, id, status string, text []byte) []byte {
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

// appendFunctionItem writes a function_call item; callID and name are raw
// insides, args the raw inside of the arguments string.
func appendFunctionItem(b []byte, id, status, callID, name string, args []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, id)
	b = append(b, `,"type":"function_call","status":"`...)
	b = append(b, status...)
	b = append(b, `","call_id":"`...)
	b = append(b, callID...)
	b = append(b, `","name":"`...)
	b = append(b, name...)
	b = append(b, `","arguments":"`...)
	b = append(b, args...)
	return append(b, `"}`...)
}

func writeResponses(a *answer, o ResponseOptions, sizeHint int) []byte {
	var items []byte
	n := 0
	if len(a.text) > 0 {
		items = appendMessageItem(items, itemID("msg_", o, n), "completed", a.text)
		n++
	}
	for _, c := range a.calls {
		args := appendEscaped(nil, orStr(c.args, "{}"))
		items = appendFunctionItem(sep(items), itemID("fc_", o, n), "completed", c.id, c.name, args)
		n++
	}
	status, reason := responseStatus(a.finish)
	return appendResponse(make([]byte, 0, sizeHint+len(items)+512), o, status, reason, nil, items, &a.usage)
}

// responsesReader reads an upstream responses stream from the codec
// reader's scan of each event.
type responsesReader struct {
	items []int  // output index -> call number, -1 for other items
	args  []bool // call number -> some arguments arrived
	calls int
}

func (r *responsesReader) call(output int64) int {
	if output < 0 || output >= int64(len(r.items)) {
		return -1
	}
	return r.items[output]
}

func (r *responsesReader) read(c *codec.Chunk, s sink) error {
	if !c.Object {
		return errBadUpstream
	}
	output := c.Index
	switch c.Type {
	case "response.output_text.delta", "response.refusal.delta":
		return s.text(c.Text)
	case "response.output_item.added":
		if c.Block != "function_call" || output < 0 || output >= maxBlockIndex {
			return nil
		}
		for int64(len(r.items)) <= output {
			r.items = append(r.items, -1)
		}
		n := r.calls
		r.items[output] = n
		r.calls++
		t := c.Tools[0]
		r.args = append(r.args, t.Args != "")
		return s.toolStart(n, t.ID, t.Name, t.Args)
	case "response.function_call_arguments.delta":
		if n := r.call(output); n >= 0 {
			args := c.Tools[0].Args
			r.args[n] = r.args[n] || args != ""
			return s.toolArgs(n, args)
		}
	case "response.output_item.done":
		n := r.call(output)
		if n < 0 {
			return nil
		}
		if !r.args[n] {
			// The arguments came whole, with the item.
			r.args[n] = true
			if err := s.toolArgs(n, c.Tools[0].Args); err != nil {
				return err
			}
		}
		return s.toolEnd(n)
	case "response.completed", "response.incomplete":
		s.setUsage(usageOf(c.Usage))
		return s.finish(responsesFinish(c.Finish, c.Reason, r.calls > 0))
	case "response.failed":
		return s.fail(responseFailure(gjson.Parse(c.Error)))
	case "error":
		e := gjson.Parse(c.Error)
		return s.fail(upstreamStreamError(e.Get("code").Str, e.Get("message").Str))
	}
	return nil
}

// fnItem is a function_call output item being streamed.
type fnItem struct {
	output       int
	id           string
	callID, name string // raw insides
	args         []byte // raw inside of the arguments string
	done         bool
}

// responsesWriter writes responses events for one client stream. A
// message item gets output_item.added and content_part.added before its
// first delta; a function item is done when its call ends.
type responsesWriter struct {
	emit    func(protocol.Event) error
	o       ResponseOptions
	buf     []byte
	seq     int64
	started bool
	items   []byte // completed items, comma-separated
	nItems  int
	msgOpen bool
	msgIdx  int
	msgID   string
	msgText []byte
	fns     []fnItem // by call number
	reason  string
	stopped bool
	failed  bool
	u       usage
	bufArr  [1024]byte // buf's first storage
}

func (s *responsesWriter) init(o ResponseOptions) {
	s.o, s.buf = o, s.bufArr[:0]
}

func (s *responsesWriter) setEmit(emit func(protocol.Event) error) { s.emit = emit }
func (s *responsesWriter) setUsage(u usage)                        { s.u = u }

func (s *responsesWriter) event(typ string, fill func([]byte) []byte) error {
	b := append(s.buf[:0], `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, s.seq, 10)
	s.seq++
	b = fill(b)
	s.buf = append(b, '}')
	return s.emit(protocol.Event{Name: typ, Data: s.buf})
}

func (s *responsesWriter) start() error {
	if s.started {
		return nil
	}
	s.started = true
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		err := s.event(typ, func(b []byte) []byte {
			return appendResponse(append(b, `,"response":`...), s.o, "in_progress", "", nil, nil, nil)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *responsesWriter) itemRef(b []byte, id string, output int) []byte {
	b = keyStr(b, "item_id", id)
	return keyInt(b, "output_index", int64(output))
}

func (s *responsesWriter) openMessage() error {
	s.msgOpen, s.msgIdx = true, s.nItems
	s.nItems++
	s.msgID = itemID("msg_", s.o, s.msgIdx)
	s.msgText = s.msgText[:0]
	err := s.event("response.output_item.added", func(b []byte) []byte {
		b = keyInt(b, "output_index", int64(s.msgIdx))
		return appendMessageItem(key(b, "item"), s.msgID, "in_progress", nil)
	})
	if err != nil {
		return err
	}
	return s.event("response.content_part.added", func(b []byte) []byte {
		b = s.itemRef(b, s.msgID, s.msgIdx)
		return append(b, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`...)
	})
}

func (s *responsesWriter) closeMessage() error {
	if !s.msgOpen {
		return nil
	}
	s.msgOpen = false
	err := s.event("response.output_text.done", func(b []byte) []byte {
		b = s.itemRef(b, s.msgID, s.msgIdx)
		b = append(b, `,"content_index":0,"text":"`...)
		b = append(b, s.msgText...)
		return append(b, `","logprobs":[]`...)
	})
	if err == nil {
		err = s.event("response.content_part.done", func(b []byte) []byte {
			b = s.itemRef(b, s.msgID, s.msgIdx)
			b = append(b, `,"content_index":0,"part":{"type":"output_text","text":"`...)
			b = append(b, s.msgText...)
			return append(b, `","annotations":[],"logprobs":[]}`...)
		})
	}
	if err == nil {
		s.items = appendMessageItem(sep(s.items), s.msgID, "completed", s.msgText)
		err = s.event("response.output_item.done", func(b []byte) []byte {
			b = keyInt(b, "output_index", int64(s.msgIdx))
			return appendMessageItem(key(b, "item"), s.msgID, "completed", s.msgText)
		})
	}
	return err
}

func (s *responsesWriter) text(raw string) error {
	if raw == "" || s.stopped {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	if !s.msgOpen {
		if err := s.openMessage(); err != nil {
			return err
		}
	}
	s.msgText = append(s.msgText, raw...)
	return s.event("response.output_text.delta", func(b []byte) []byte {
		b = s.itemRef(b, s.msgID, s.msgIdx)
		b = append(b, `,"content_index":0,"delta":"`...)
		b = append(b, raw...)
		return append(b, `","logprobs":[]`...)
	})
}

func (s *responsesWriter) toolStart(i int, id, name, args string) error {
	if s.stopped || i < 0 || i > maxToolIndex || i < len(s.fns) {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	if err := s.closeMessage(); err != nil {
		return err
	}
	for len(s.fns) < i {
		s.fns = append(s.fns, fnItem{done: true})
	}
	s.fns = append(s.fns, fnItem{output: s.nItems, id: itemID("fc_", s.o, s.nItems), callID: strings.Clone(id), name: strings.Clone(name)})
	s.nItems++
	f := &s.fns[i]
	err := s.event("response.output_item.added", func(b []byte) []byte {
		b = keyInt(b, "output_index", int64(f.output))
		return appendFunctionItem(key(b, "item"), f.id, "in_progress", f.callID, f.name, nil)
	})
	if err != nil {
		return err
	}
	return s.toolArgs(i, args)
}

func (s *responsesWriter) toolArgs(i int, raw string) error {
	if raw == "" || i < 0 || i >= len(s.fns) || s.fns[i].done {
		return nil
	}
	f := &s.fns[i]
	f.args = append(f.args, raw...)
	return s.event("response.function_call_arguments.delta", func(b []byte) []byte {
		b = s.itemRef(b, f.id, f.output)
		b = append(b, `,"delta":"`...)
		b = append(b, raw...)
		return append(b, '"')
	})
}

func (s *responsesWriter) toolEnd(i int) error {
	if i < 0 || i >= len(s.fns) || s.fns[i].done {
		return nil
	}
	f := &s.fns[i]
	f.done = true
	err := s.event("response.function_call_arguments.done", func(b []byte) []byte {
		b = s.itemRef(b, f.id, f.output)
		b = append(b, `,"name":"`...)
		b = append(b, f.name...)
		b = append(b, `","arguments":"`...)
		b = append(b, f.args...)
		return append(b, '"')
	})
	if err != nil {
		return err
	}
	s.items = appendFunctionItem(sep(s.items), f.id, "completed", f.callID, f.name, f.args)
	return s.event("response.output_item.done", func(b []byte) []byte {
		b = keyInt(b, "output_index", int64(f.output))
		return appendFunctionItem(key(b, "item"), f.id, "completed", f.callID, f.name, f.args)
	})
}

func (s *responsesWriter) finish(reason string) error {
	if s.stopped {
		return nil
	}
	s.stopped, s.reason = true, reason
	if err := s.start(); err != nil {
		return err
	}
	if err := s.closeMessage(); err != nil {
		return err
	}
	for i := range s.fns {
		if err := s.toolEnd(i); err != nil {
			return err
		}
	}
	return nil
}

// fail ends the response as failed, as the responses API does.
func (s *responsesWriter) fail(e *apierr.Error) error {
	if err := s.start(); err != nil {
		return err
	}
	s.failed = true
	return s.event("response.failed", func(b []byte) []byte {
		return appendResponse(append(b, `,"response":`...), s.o, "failed", "", e, s.items, nil)
	})
}

func (s *responsesWriter) end() error {
	if s.failed {
		return nil
	}
	if err := s.finish(finishStop); err != nil {
		return err
	}
	status, reason := responseStatus(s.reason)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	return s.event(typ, func(b []byte) []byte {
		return appendResponse(append(b, `,"response":`...), s.o, status, reason, nil, s.items, &s.u)
	})
}
