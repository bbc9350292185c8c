package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The completions protocol's answer side: readChat and chatReader read an
// upstream's answer, writeChat and chatWriter write a client's.

func readChatUsage(r gjson.Result) usage {
	return usage{
		input:     r.Get("prompt_tokens").Int(),
		output:    r.Get("completion_tokens").Int(),
		cached:    r.Get("prompt_tokens_details.cached_tokens").Int(),
		reasoning: r.Get("completion_tokens_details.reasoning_tokens").Int(),
	}
}

func appendChatUsage(b []byte, u usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, u.input, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.output, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.input+u.output, 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.cached, 10)
	b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, u.reasoning, 10)
	return append(b, `}}`...)
}

// chatFinish normalises an upstream finish_reason.
func chatFinish(s string) string {
	switch s {
	case finishLength:
		return finishLength // the constant, not s: s views the upstream's event
	case finishFilter:
		return finishFilter
	case finishTools:
		return finishTools
	case "function_call":
		return finishTools
	case "":
		return ""
	}
	return finishStop
}

func readChat(r gjson.Result) (*answer, error) {
	a := &answer{usage: readChatUsage(r.Get("usage"))}
	ch := r.Get("choices.0")
	a.finish = chatFinish(ch.Get("finish_reason").Str)
	msg := ch.Get("message")
	content := msg.Get("content")
	switch {
	case content.Type == gjson.String:
		a.text = append(a.text, inner(content)...)
	case isArray(content):
		content.ForEach(func(_, p gjson.Result) bool {
			a.text = append(a.text, inner(p.Get("text"))...)
			return true
		})
	}
	if len(a.text) == 0 {
		a.text = append(a.text, inner(msg.Get("refusal"))...)
	}
	eachElement(msg.Get("tool_calls"), func(t gjson.Result) bool {
		fn := t.Get("function")
		a.calls = append(a.calls, call{id: inner(t.Get("id")), name: inner(fn.Get("name")), args: fn.Get("arguments").Str})
		return true
	})
	if a.finish == "" {
		a.finish = finishStop
	}
	return a, nil
}

// chatID derives a completion id from the gateway request id.
func chatID(o ResponseOptions) string { return "chatcmpl-" + o.RequestID }

// syntheticCallID is the id given to a call whose upstream has none.
func syntheticCallID(n int) string { return "call_" + strconv.Itoa(n) }

func writeChat(a *answer, o ResponseOptions, sizeHint int) []byte {
	b := make([]byte, 0, sizeHint+256)
	b = append(b, `{"id":`...)
	b = appendStr(b, chatID(o))
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, o.Created.Unix(), 10)
	b = keyStr(b, "model", o.Model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if len(a.text) > 0 {
		b = append(append(append(b, '"'), a.text...), '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"refusal":null`...)
	if len(a.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range a.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":"`...)
			b = append(b, c.id...)
			b = append(b, `","type":"function","function":{"name":"`...)
			b = append(b, c.name...)
			b = append(b, `","arguments":`...)
			b = appendStr(b, orStr(c.args, "{}"))
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = appendStr(b, a.finish)
	b = append(b, `}],"usage":`...)
	b = appendChatUsage(b, a.usage)
	return append(b, '}')
}

// chatReader reads an upstream completions stream from the codec
// reader's scan of each chunk.
type chatReader struct {
	ids   []int // upstream tool index -> call number, -1 before it starts
	calls int
	open  int // the call whose arguments are streaming, -1 for none
}

func (r *chatReader) read(c *codec.Chunk, s sink) error {
	switch {
	case c.Done:
		return nil
	case !c.Object:
		return errBadUpstream
	case c.Error != "":
		e := gjson.Parse(c.Error)
		return s.fail(upstreamStreamError(e.Get("type").Str+" "+e.Get("code").String(), e.Get("message").Str))
	}
	if c.HasUsage {
		s.setUsage(usageOf(c.Usage))
	}
	if c.Text != "" {
		if err := s.text(c.Text); err != nil {
			return err
		}
	}
	for _, t := range c.Tools {
		if t.Index < 0 || t.Index > maxToolIndex {
			continue
		}
		idx := int(t.Index)
		for len(r.ids) <= idx {
			r.ids = append(r.ids, -1)
		}
		n := r.ids[idx]
		if n < 0 {
			if r.calls > 0 && r.open >= 0 {
				if err := s.toolEnd(r.open); err != nil {
					return err
				}
			}
			n = r.calls
			r.ids[idx], r.open = n, n
			r.calls++
			id := t.ID
			if id == "" {
				id = syntheticCallID(idx)
			}
			if err := s.toolStart(n, id, t.Name, t.Args); err != nil {
				return err
			}
			continue
		}
		if err := s.toolArgs(n, t.Args); err != nil {
			return err
		}
	}
	if c.Finish != "" {
		if r.calls > 0 && r.open >= 0 {
			if err := s.toolEnd(r.open); err != nil {
				return err
			}
			r.open = -1
		}
		return s.finish(chatFinish(c.Finish))
	}
	return nil
}

// upstreamStreamError maps an error event of an upstream stream: its
// type, code or status names the kind of failure, which decides the
// status the client's error carries.
func upstreamStreamError(kind, msg string) *apierr.Error {
	status := 500
	switch {
	case hasAny(kind, "rate_limit", "RESOURCE_EXHAUSTED", "insufficient_quota"):
		status = 429
	case hasAny(kind, "overloaded", "UNAVAILABLE"):
		status = 503
	case hasAny(kind, "authentication", "UNAUTHENTICATED", "invalid_api_key"):
		status = 401
	case hasAny(kind, "permission", "PERMISSION_DENIED"):
		status = 403
	case hasAny(kind, "not_found", "NOT_FOUND"):
		status = 404
	case hasAny(kind, "invalid_request", "INVALID_ARGUMENT", "invalid_prompt"):
		status = 400
	case hasAny(kind, "timeout", "DEADLINE_EXCEEDED"):
		status = 504
	}
	return apierr.FromUpstream(status, strings.Clone(msg)) // msg views the upstream's event
}

func hasAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// chatWriter writes completions chunks for one client stream.
type chatWriter struct {
	emit         func(protocol.Event) error
	head         []byte // {"id":…,"object":…,"created":…,"model":…,
	buf          []byte
	includeUsage bool
	started      bool
	finished     bool
	failed       bool
	u            usage
	bufArr       [512]byte // buf's first storage
}

func (c *chatWriter) init(o ResponseOptions) {
	h := make([]byte, 0, 96+len(o.RequestID)+len(o.Model))
	h = append(h, `{"id":`...)
	h = appendStr(h, chatID(o))
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, o.Created.Unix(), 10)
	h = keyStr(h, "model", o.Model)
	h = append(h, ',')
	c.head, c.includeUsage, c.buf = h, o.IncludeUsage, c.bufArr[:0]
}

func (c *chatWriter) setEmit(emit func(protocol.Event) error) { c.emit = emit }
func (c *chatWriter) setUsage(u usage)                        { c.u = u }

func (c *chatWriter) begin() []byte {
	b := append(c.buf[:0], c.head...)
	return append(b, `"choices":[{"index":0,"delta":`...)
}

func (c *chatWriter) send(b []byte, finish string) error {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendStr(b, finish)
	}
	b = append(b, `}]}`...)
	c.buf = b
	return c.emit(protocol.Event{Data: b})
}

// role emits the opening chunk once.
func (c *chatWriter) role() error {
	if c.started {
		return nil
	}
	c.started = true
	return c.send(append(c.begin(), `{"role":"assistant","content":""}`...), "")
}

func (c *chatWriter) text(raw string) error {
	if raw == "" || c.finished {
		return nil
	}
	if err := c.role(); err != nil {
		return err
	}
	b := append(c.begin(), `{"content":"`...)
	b = append(b, raw...)
	return c.send(append(b, `"}`...), "")
}

func (c *chatWriter) toolStart(i int, id, name, args string) error {
	if c.finished {
		return nil
	}
	if err := c.role(); err != nil {
		return err
	}
	b := append(c.begin(), `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"id":"`...)
	b = append(b, id...)
	b = append(b, `","type":"function","function":{"name":"`...)
	b = append(b, name...)
	b = append(b, `","arguments":"`...)
	b = append(b, args...)
	return c.send(append(b, `"}}]}`...), "")
}

func (c *chatWriter) toolArgs(i int, raw string) error {
	if raw == "" || c.finished {
		return nil
	}
	b := append(c.begin(), `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"function":{"arguments":"`...)
	b = append(b, raw...)
	return c.send(append(b, `"}}]}`...), "")
}

func (c *chatWriter) toolEnd(int) error { return nil }

func (c *chatWriter) finish(reason string) error {
	if c.finished {
		return nil
	}
	if err := c.role(); err != nil {
		return err
	}
	c.finished = true
	return c.send(append(c.begin(), "{}"...), reason)
}

func (c *chatWriter) fail(e *apierr.Error) error {
	c.failed = true
	return c.emit(protocol.Event{Data: apierr.Body(protocol.OpenAIChat, e)})
}

var doneEvent = []byte("[DONE]")

// end emits the finish chunk if missing, the usage chunk when the client
// asked for it, and [DONE].
func (c *chatWriter) end() error {
	if c.failed {
		return nil
	}
	if err := c.finish(finishStop); err != nil {
		return err
	}
	if c.includeUsage {
		b := append(c.buf[:0], c.head...)
		b = append(b, `"choices":[],"usage":`...)
		b = appendChatUsage(b, c.u)
		c.buf = append(b, '}')
		if err := c.emit(protocol.Event{Data: c.buf}); err != nil {
			return err
		}
	}
	return c.emit(protocol.Event{Data: doneEvent})
}
