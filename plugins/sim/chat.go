package sim

// OpenAI chat completions: a chat.completion object, or chat.completion.chunk
// events ending in data: [DONE].

func chatFinish(pl *plan) string {
	switch {
	case pl.tool != "":
		return `"tool_calls"`
	case pl.limited:
		return `"length"`
	}
	return `"stop"`
}

func appendChatHead(b []byte, pl *plan, object string) []byte {
	b = append(b, `{"id":"chatcmpl-`...)
	b = pl.appendID(b, 1)
	b = append(b, `","object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = appendInt(b, pl.created)
	b = append(b, `,"model":`...)
	return appendStr(b, pl.model)
}

func appendChatToolCall(b []byte, pl *plan, stream bool) []byte {
	b = append(b, `"tool_calls":[{`...)
	if stream {
		b = append(b, `"index":0,`...)
	}
	b = append(b, `"id":"call_`...)
	b = pl.appendID(b, 2)
	b = append(b, `","type":"function","function":{"name":`...)
	b = appendStr(b, pl.tool)
	b = append(b, `,"arguments":`...)
	if stream {
		b = append(b, `""`...)
	} else {
		b = appendStrBytes(b, pl.args)
	}
	return append(b, `}}]`...)
}

func appendChatBody(b []byte, pl *plan) []byte {
	b = appendChatHead(b, pl, "chat.completion")
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if pl.tool != "" {
		b = append(b, `null,"refusal":null,`...)
		b = appendChatToolCall(b, pl, false)
	} else {
		b = appendStrBytes(b, pl.text)
		b = append(b, `,"refusal":null`...)
	}
	b = append(b, `,"annotations":[]},"logprobs":null,"finish_reason":`...)
	b = append(b, chatFinish(pl)...)
	b = append(b, `}],"usage":`...)
	b = appendChatUsage(b, pl)
	return append(b, `,"service_tier":"default","system_fingerprint":"fp_sim"}`...)
}

func appendChatUsage(b []byte, pl *plan) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, pl.in)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, pl.out)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, pl.in+pl.out)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, pl.cached)
	b = append(b, `,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, pl.thinking)
	return append(b, `,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
}

// chatChunks writes chunk events sharing one head and tail.
type chatChunks struct {
	s          *streamer
	head, tail []byte
	st         int
}

func (c *chatChunks) open() {
	c.st = c.s.begin("")
	c.s.buf = append(c.s.buf, c.head...)
	c.s.buf = append(c.s.buf, `{"index":0,"delta":`...)
}

func (c *chatChunks) close(rest string) error {
	c.s.buf = append(c.s.buf, rest...)
	c.s.buf = append(c.s.buf, c.tail...)
	return c.s.send(c.st)
}

func streamChat(s *streamer, pl *plan) error {
	head := appendChatHead(make([]byte, 0, 160+len(pl.model)), pl, "chat.completion.chunk")
	head = append(head, `,"service_tier":"default","system_fingerprint":"fp_sim","choices":[`...)
	c := chatChunks{s: s, head: head, tail: []byte(`]}`)}
	if pl.conv.includeUsage {
		c.tail = []byte(`],"usage":null}`)
	}
	const open = `,"logprobs":null,"finish_reason":null}`
	c.open()
	if pl.tool != "" {
		s.buf = append(s.buf, `{"role":"assistant","content":null,`...)
		s.buf = appendChatToolCall(s.buf, pl, true)
		s.buf = append(s.buf, `,"refusal":null}`...)
	} else {
		s.buf = append(s.buf, `{"role":"assistant","content":"","refusal":null}`...)
	}
	if err := c.close(open); err != nil {
		return err
	}
	if pl.tool != "" {
		for off := 0; off < len(pl.args); off += argFragment {
			c.open()
			s.buf = append(s.buf, `{"tool_calls":[{"index":0,"function":{"arguments":`...)
			s.buf = appendStrBytes(s.buf, pl.args[off:min(off+argFragment, len(pl.args))])
			if err := c.close(`}}]}` + open); err != nil {
				return err
			}
		}
	} else {
		from := 0
		for i := 0; i < pl.chunks; i++ {
			end := pl.chunkEnd(i, from)
			c.open()
			s.buf = append(s.buf, `{"content":`...)
			s.buf = appendStrBytes(s.buf, pl.text[from:end])
			from = end
			if err := c.close(`}` + open); err != nil {
				return err
			}
		}
	}
	c.open()
	s.buf = append(s.buf, `{},"logprobs":null,"finish_reason":`...)
	s.buf = append(s.buf, chatFinish(pl)...)
	if err := c.close(`}`); err != nil {
		return err
	}
	if pl.conv.includeUsage {
		st := s.begin("")
		s.buf = append(s.buf, head...)
		s.buf = append(s.buf, `],"usage":`...)
		s.buf = appendChatUsage(s.buf, pl)
		s.buf = append(s.buf, '}')
		if err := s.send(st); err != nil {
			return err
		}
	}
	st := s.begin("")
	s.buf = append(s.buf, "[DONE]"...)
	return s.send(st)
}
