package translate

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// This file holds what the five pairs share about the completions protocol:
// writing chunks and completions (client side of the forward pairs) and
// reading them (upstream side of the reverse pairs).

// usage is token usage in the gateway's terms: input counts cached tokens,
// output counts reasoning tokens.
type usage struct {
	input, output, cached, cacheWrite, reasoning int64
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

func readChatUsage(r gjson.Result) usage {
	return usage{
		input:     r.Get("prompt_tokens").Int(),
		output:    r.Get("completion_tokens").Int(),
		cached:    r.Get("prompt_tokens_details.cached_tokens").Int(),
		reasoning: r.Get("completion_tokens_details.reasoning_tokens").Int(),
	}
}

// toolCall is one complete tool call. id and name are raw JSON strings;
// args is the raw JSON string holding the arguments text.
type toolCall struct {
	id, name, args string
}

// chatID derives a completion id from the gateway request id.
func chatID(o ResponseOptions) string { return "chatcmpl-" + o.RequestID }

// syntheticCallID is the id given to a call whose upstream has none.
func syntheticCallID(n int) string { return "call_" + strconv.Itoa(n) }

// appendChatCompletion writes a chat.completion object. text is the raw
// inside of the content string; content is null when it and hasText are empty.
func appendChatCompletion(b []byte, o ResponseOptions, text string, hasText bool, calls []toolCall, finish string, u usage) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, chatID(o))
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, o.Created.Unix(), 10)
	b = keyStr(b, "model", o.Model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if hasText || text != "" {
		b = append(b, '"')
		b = append(b, text...)
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"refusal":null`...)
	if len(calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = append(b, c.id...)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = append(b, c.name...)
			b = append(b, `,"arguments":`...)
			b = append(b, c.args...)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = appendStr(b, finish)
	b = append(b, `}],"usage":`...)
	b = appendChatUsage(b, u)
	return append(b, '}')
}

// chatOut writes completions chunks for one stream.
type chatOut struct {
	head         []byte // {"id":…,"object":…,"created":…,"model":…,
	includeUsage bool
	started      bool
	finished     bool
	usage        usage
}

func newChatOut(o ResponseOptions) chatOut {
	h := make([]byte, 0, 96+len(o.RequestID)+len(o.Model))
	h = append(h, `{"id":`...)
	h = appendStr(h, chatID(o))
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, o.Created.Unix(), 10)
	h = keyStr(h, "model", o.Model)
	h = append(h, ',')
	return chatOut{head: h, includeUsage: o.IncludeUsage}
}

func (c *chatOut) begin(extra int) []byte {
	b := make([]byte, 0, len(c.head)+96+extra)
	b = append(b, c.head...)
	return append(b, `"choices":[{"index":0,"delta":`...)
}

func (c *chatOut) send(emit func(protocol.Event) error, b []byte, finish string) error {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendStr(b, finish)
	}
	b = append(b, `}]}`...)
	return emit(protocol.Event{Data: b})
}

// role emits the opening chunk once.
func (c *chatOut) role(emit func(protocol.Event) error) error {
	if c.started {
		return nil
	}
	c.started = true
	b := c.begin(0)
	b = append(b, `{"role":"assistant","content":""}`...)
	return c.send(emit, b, "")
}

// text emits a content delta; raw is the escaped inside of a JSON string.
func (c *chatOut) text(emit func(protocol.Event) error, raw string) error {
	if raw == "" {
		return nil
	}
	if err := c.role(emit); err != nil {
		return err
	}
	b := c.begin(len(raw))
	b = append(b, `{"content":"`...)
	b = append(b, raw...)
	b = append(b, `"}`...)
	return c.send(emit, b, "")
}

// toolStart emits the first delta of tool call index; id and name are raw
// JSON strings, args the raw JSON string of the first arguments text.
func (c *chatOut) toolStart(emit func(protocol.Event) error, index int, id, name, args string) error {
	if err := c.role(emit); err != nil {
		return err
	}
	b := c.begin(len(id) + len(name) + len(args))
	b = append(b, `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"id":`...)
	b = append(b, id...)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, `}}]}`...)
	return c.send(emit, b, "")
}

// toolArgs emits an arguments fragment (raw inside of a JSON string).
func (c *chatOut) toolArgs(emit func(protocol.Event) error, index int, raw string) error {
	if raw == "" {
		return nil
	}
	b := c.begin(len(raw))
	b = append(b, `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"function":{"arguments":"`...)
	b = append(b, raw...)
	b = append(b, `"}}]}`...)
	return c.send(emit, b, "")
}

// finish emits the finish chunk once.
func (c *chatOut) finish(emit func(protocol.Event) error, reason string) error {
	if c.finished {
		return nil
	}
	if err := c.role(emit); err != nil {
		return err
	}
	c.finished = true
	return c.send(emit, append(c.begin(0), "{}"...), reason)
}

var doneEvent = []byte("[DONE]")

// end emits the finish chunk if missing, the usage chunk when the client
// asked for it, and [DONE].
func (c *chatOut) end(emit func(protocol.Event) error) error {
	if err := c.finish(emit, "stop"); err != nil {
		return err
	}
	if c.includeUsage {
		b := make([]byte, 0, len(c.head)+192)
		b = append(b, c.head...)
		b = append(b, `"choices":[],"usage":`...)
		b = appendChatUsage(b, c.usage)
		b = append(b, '}')
		if err := emit(protocol.Event{Data: b}); err != nil {
			return err
		}
	}
	return emit(protocol.Event{Data: doneEvent})
}

// chatDelta is what one upstream completions chunk says about choice 0.
type chatDelta struct {
	done     bool // the [DONE] sentinel
	text     string
	tools    []toolDelta
	finish   string
	hasUsage bool
	usage    usage
}

// toolDelta is one tool_calls entry of a chunk. id and name are raw JSON
// strings ("" when absent); args is the raw inside of the arguments string.
type toolDelta struct {
	index    int
	id, name string
	args     string
}

// readChatChunk parses one upstream completions chunk into d, reusing d's
// storage.
func readChatChunk(data []byte, d *chatDelta) error {
	d.done, d.text, d.finish, d.hasUsage = false, "", "", false
	d.tools = d.tools[:0]
	if isDone(data) {
		d.done = true
		return nil
	}
	r, err := parseEvent(data)
	if err != nil {
		return err
	}
	if u := r.Get("usage"); isObject(u) {
		d.hasUsage = true
		d.usage = readChatUsage(u)
	}
	ch := r.Get("choices.0")
	if !isObject(ch) {
		return nil
	}
	d.finish = ch.Get("finish_reason").Str
	delta := ch.Get("delta")
	d.text = inner(delta.Get("content"))
	if d.text == "" {
		d.text = inner(delta.Get("refusal"))
	}
	delta.Get("tool_calls").ForEach(func(_, t gjson.Result) bool {
		td := toolDelta{index: int(t.Get("index").Int())}
		if id := t.Get("id"); id.Type == gjson.String && id.Str != "" {
			td.id = id.Raw
		}
		fn := t.Get("function")
		if n := fn.Get("name"); n.Type == gjson.String && n.Str != "" {
			td.name = n.Raw
		}
		td.args = inner(fn.Get("arguments"))
		d.tools = append(d.tools, td)
		return true
	})
	return nil
}

func isDone(data []byte) bool {
	s := bstr(data)
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s == "[DONE]"
}

// chatResult is a complete upstream chat.completion, choice 0.
type chatResult struct {
	text   string // raw inside of the content string
	calls  []toolCall
	finish string
	usage  usage
}

func readChatCompletion(body []byte) (chatResult, error) {
	var res chatResult
	r, err := parseEvent(body)
	if err != nil {
		return res, err
	}
	res.usage = readChatUsage(r.Get("usage"))
	ch := r.Get("choices.0")
	res.finish = ch.Get("finish_reason").Str
	msg := ch.Get("message")
	content := msg.Get("content")
	switch {
	case content.Type == gjson.String:
		res.text = inner(content)
	case isArray(content):
		content.ForEach(func(_, p gjson.Result) bool {
			res.text += inner(p.Get("text"))
			return true
		})
	}
	if res.text == "" {
		res.text = inner(msg.Get("refusal"))
	}
	msg.Get("tool_calls").ForEach(func(_, t gjson.Result) bool {
		fn := t.Get("function")
		c := toolCall{id: rawString(t.Get("id")), name: rawString(fn.Get("name")), args: rawString(fn.Get("arguments"))}
		if c.args == `""` {
			c.args = `"{}"`
		}
		res.calls = append(res.calls, c)
		return true
	})
	return res, nil
}
