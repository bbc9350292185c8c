package translate

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The messages protocol's answer side.

// messagesFinish maps a stop_reason to the intermediate form.
func messagesFinish(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return finishLength
	case "tool_use":
		return finishTools
	case "refusal":
		return finishFilter
	}
	return finishStop
}

// stopReason maps a finish reason to a stop_reason.
func stopReason(s string) string {
	switch s {
	case finishLength:
		return "max_tokens"
	case finishTools:
		return "tool_use"
	case finishFilter:
		return "refusal"
	}
	return "end_turn"
}

// readMessagesUsage merges a messages usage object into u: message_start
// carries the input, message_delta the output (and may update the input).
func readMessagesUsage(r gjson.Result, into *usage) {
	base := into.input - into.cached - into.cacheWrite
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			base = v.Int()
		case "cache_read_input_tokens":
			into.cached = v.Int()
		case "cache_creation_input_tokens":
			into.cacheWrite = v.Int()
		case "output_tokens":
			into.output = v.Int()
		}
		return true
	})
	into.input = base + into.cached + into.cacheWrite
}

func appendMessagesUsage(b []byte, u usage) []byte {
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

func readMessages(r gjson.Result) (*answer, error) {
	a := &answer{}
	eachElement(r.Get("content"), func(c gjson.Result) bool {
		switch c.Get("type").Str {
		case "text":
			a.text = append(a.text, inner(c.Get("text"))...)
		case "tool_use":
			in := c.Get("input")
			args := "{}"
			if isObject(in) {
				args = in.Raw
			}
			a.calls = append(a.calls, call{id: inner(c.Get("id")), name: inner(c.Get("name")), args: args})
		}
		return true
	})
	readMessagesUsage(r.Get("usage"), &a.usage)
	a.finish = messagesFinish(r.Get("stop_reason").Str)
	return a, nil
}

func messageID(o ResponseOptions) string { return "msg_" + o.RequestID }

// argsObject turns a tool's arguments text into a JSON object text ({}
// when it is not one).
func argsObject(args string) string {
	if s, ok := jsonObjectString(args); ok {
		return s
	}
	return "{}"
}

func writeMessages(a *answer, o ResponseOptions, sizeHint int) []byte {
	b := make([]byte, 0, sizeHint+256)
	b = append(b, `{"id":`...)
	b = appendStr(b, messageID(o))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendStr(b, o.Model)
	b = append(b, `,"content":[`...)
	if len(a.text) > 0 {
		b = append(b, `{"type":"text","text":"`...)
		b = append(b, a.text...)
		b = append(b, `"}`...)
	}
	for _, c := range a.calls {
		b = append(sep(b), `{"type":"tool_use","id":"`...)
		b = append(b, c.id...)
		b = append(b, `","name":"`...)
		b = append(b, c.name...)
		b = append(b, `","input":`...)
		b = append(b, argsObject(c.args)...)
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = appendStr(b, stopReason(a.finish))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendMessagesUsage(b, a.usage)
	return append(b, '}')
}

// messagesReader reads an upstream messages stream from the codec
// reader's scan of each event.
type messagesReader struct {
	blocks []int // block index -> call number, -1 for other blocks
	calls  int
}

func (r *messagesReader) read(c *codec.Chunk, s sink) error {
	if !c.Object {
		return errBadUpstream
	}
	if c.HasUsage {
		s.setUsage(usageOf(c.Usage))
	}
	idx := int(c.Index)
	switch c.Type {
	case "content_block_start":
		if c.Index < 0 || c.Index >= maxBlockIndex {
			return nil
		}
		for len(r.blocks) <= idx {
			r.blocks = append(r.blocks, -1)
		}
		switch c.Block {
		case "tool_use":
			r.blocks[idx] = r.calls
			r.calls++
			t := c.Tools[0]
			return s.toolStart(r.blocks[idx], t.ID, t.Name, "")
		case "text":
			return s.text(c.Text)
		}
	case "content_block_delta":
		switch c.Block {
		case "text_delta":
			return s.text(c.Text)
		case "input_json_delta":
			if n := r.call(c.Index); n >= 0 {
				return s.toolArgs(n, c.Tools[0].Args)
			}
		}
	case "content_block_stop":
		if n := r.call(c.Index); n >= 0 {
			return s.toolEnd(n)
		}
	case "message_delta":
		if c.HasFinish {
			return s.finish(messagesFinish(c.Finish))
		}
	case "error":
		e := gjson.Parse(c.Error)
		return s.fail(upstreamStreamError(e.Get("type").Str, e.Get("message").Str))
	}
	return nil
}

func (r *messagesReader) call(idx int64) int {
	if idx < 0 || idx >= int64(len(r.blocks)) {
		return -1
	}
	return r.blocks[idx]
}

// messagesWriter writes messages events for one client stream. Blocks
// open in index order and close before the next one opens, which is what
// the SDKs' accumulators require.
type messagesWriter struct {
	emit     func(protocol.Event) error
	o        ResponseOptions
	buf      []byte
	started  bool
	open     bool  // a block is open
	openIdx  int   // its index
	next     int   // index of the next block
	tools    []int // call number -> block index
	textOpen bool
	stopped  bool // finish seen: the content is complete
	failed   bool
	reason   string
	u        usage
	bufArr   [512]byte // buf's first storage
}

func (s *messagesWriter) init(o ResponseOptions) {
	s.o, s.buf = o, s.bufArr[:0]
}

func (s *messagesWriter) setEmit(emit func(protocol.Event) error) { s.emit = emit }
func (s *messagesWriter) setUsage(u usage)                        { s.u = u }

func (s *messagesWriter) send(name string, b []byte) error {
	s.buf = b
	return s.emit(protocol.Event{Name: name, Data: b})
}

func (s *messagesWriter) start() error {
	if s.started {
		return nil
	}
	s.started = true
	b := append(s.buf[:0], `{"type":"message_start","message":{"id":`...)
	b = appendStr(b, messageID(s.o))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendStr(b, s.o.Model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	u := s.u
	u.output = 0
	b = appendMessagesUsage(b, u)
	return s.send("message_start", append(b, "}}"...))
}

func (s *messagesWriter) closeBlock() error {
	if !s.open {
		return nil
	}
	s.open, s.textOpen = false, false
	b := append(s.buf[:0], `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(s.openIdx), 10)
	return s.send("content_block_stop", append(b, '}'))
}

func (s *messagesWriter) openBlock(block func([]byte) []byte) error {
	if err := s.closeBlock(); err != nil {
		return err
	}
	s.open, s.openIdx = true, s.next
	s.next++
	b := append(s.buf[:0], `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(s.openIdx), 10)
	b = append(b, `,"content_block":`...)
	b = block(b)
	return s.send("content_block_start", append(b, '}'))
}

func (s *messagesWriter) delta(idx int, kind, field, raw string) error {
	b := append(s.buf[:0], `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":"`...)
	b = append(b, raw...)
	return s.send("content_block_delta", append(b, `"}}`...))
}

func (s *messagesWriter) text(raw string) error {
	if raw == "" || s.stopped {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	if !s.textOpen {
		if err := s.openBlock(func(b []byte) []byte { return append(b, `{"type":"text","text":""}`...) }); err != nil {
			return err
		}
		s.textOpen = true
	}
	return s.delta(s.openIdx, "text_delta", "text", raw)
}

func (s *messagesWriter) toolStart(i int, id, name, args string) error {
	if s.stopped || i < 0 || i > maxToolIndex {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	err := s.openBlock(func(b []byte) []byte {
		b = append(b, `{"type":"tool_use","id":"`...)
		b = append(b, id...)
		b = append(b, `","name":"`...)
		b = append(b, name...)
		return append(b, `","input":{}}`...)
	})
	if err != nil {
		return err
	}
	for len(s.tools) <= i {
		s.tools = append(s.tools, -1)
	}
	s.tools[i] = s.openIdx
	return s.toolArgs(i, args)
}

func (s *messagesWriter) toolArgs(i int, raw string) error {
	if raw == "" || s.stopped || i < 0 || i >= len(s.tools) || s.tools[i] < 0 {
		return nil
	}
	return s.delta(s.tools[i], "input_json_delta", "partial_json", raw)
}

func (s *messagesWriter) toolEnd(i int) error {
	if s.open && i >= 0 && i < len(s.tools) && s.tools[i] == s.openIdx {
		return s.closeBlock()
	}
	return nil
}

func (s *messagesWriter) finish(reason string) error {
	if s.stopped {
		return nil
	}
	s.stopped, s.reason = true, reason
	if err := s.start(); err != nil {
		return err
	}
	return s.closeBlock()
}

func (s *messagesWriter) fail(e *apierr.Error) error {
	s.failed = true
	return s.send("error", apierr.Body(protocol.AnthropicMessages, e))
}

func (s *messagesWriter) end() error {
	if s.failed {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	if err := s.closeBlock(); err != nil {
		return err
	}
	b := append(s.buf[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendStr(b, stopReason(s.reason))
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = appendMessagesUsage(b, s.u)
	if err := s.send("message_delta", append(b, '}')); err != nil {
		return err
	}
	return s.send("message_stop", append(s.buf[:0], `{"type":"message_stop"}`...))
}
