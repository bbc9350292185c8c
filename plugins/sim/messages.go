package sim

// Anthropic messages: a message object, or the named event sequence
// message_start ... message_stop.

func msgStop(pl *plan) string {
	switch {
	case pl.tool != "":
		return `"tool_use"`
	case pl.limited:
		return `"max_tokens"`
	}
	return `"end_turn"`
}

func appendMsgUsage(b []byte, pl *plan, out int64) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, pl.in-pl.cached-pl.written)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, pl.written)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = appendInt(b, pl.cached)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, out)
	return append(b, `,"service_tier":"standard"}`...)
}

// appendMsgOpen appends the message object up to its content array.
func appendMsgOpen(b []byte, pl *plan) []byte {
	b = append(b, `{"id":"msg_`...)
	b = pl.appendID(b, 1)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = appendStr(b, pl.model)
	return append(b, `,"content":[`...)
}

func appendToolUseHead(b []byte, pl *plan) []byte {
	b = append(b, `{"type":"tool_use","id":"toolu_`...)
	b = pl.appendID(b, 2)
	b = append(b, `","name":`...)
	b = appendStr(b, pl.tool)
	return append(b, `,"input":`...)
}

func appendMessagesBody(b []byte, pl *plan) []byte {
	b = appendMsgOpen(b, pl)
	if pl.tool != "" {
		b = appendToolUseHead(b, pl)
		b = append(b, pl.args...)
		b = append(b, '}')
	} else {
		b = append(b, `{"type":"text","text":`...)
		b = appendStrBytes(b, pl.text)
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = append(b, msgStop(pl)...)
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendMsgUsage(b, pl, pl.out)
	return append(b, '}')
}

func streamMessages(s *streamer, pl *plan) error {
	st := s.begin("message_start")
	s.buf = append(s.buf, `{"type":"message_start","message":`...)
	s.buf = appendMsgOpen(s.buf, pl)
	s.buf = append(s.buf, `],"stop_reason":null,"stop_sequence":null,"usage":`...)
	s.buf = appendMsgUsage(s.buf, pl, 1)
	s.buf = append(s.buf, `}}`...)
	if err := s.send(st); err != nil {
		return err
	}
	st = s.begin("content_block_start")
	s.buf = append(s.buf, `{"type":"content_block_start","index":0,"content_block":`...)
	if pl.tool != "" {
		s.buf = appendToolUseHead(s.buf, pl)
		s.buf = append(s.buf, `{}}}`...)
	} else {
		s.buf = append(s.buf, `{"type":"text","text":""}}`...)
	}
	if err := s.send(st); err != nil {
		return err
	}
	st = s.begin("ping")
	s.buf = append(s.buf, `{"type": "ping"}`...)
	if err := s.send(st); err != nil {
		return err
	}
	if pl.tool != "" {
		for off := 0; off < len(pl.args); off += argFragment {
			st = s.begin("content_block_delta")
			s.buf = append(s.buf, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`...)
			s.buf = appendStrBytes(s.buf, pl.args[off:min(off+argFragment, len(pl.args))])
			s.buf = append(s.buf, `}}`...)
			if err := s.send(st); err != nil {
				return err
			}
		}
	} else {
		from := 0
		for i := 0; i < pl.chunks; i++ {
			end := pl.chunkEnd(i, from)
			st = s.begin("content_block_delta")
			s.buf = append(s.buf, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`...)
			s.buf = appendStrBytes(s.buf, pl.text[from:end])
			s.buf = append(s.buf, `}}`...)
			from = end
			if err := s.send(st); err != nil {
				return err
			}
		}
	}
	st = s.begin("content_block_stop")
	s.buf = append(s.buf, `{"type":"content_block_stop","index":0}`...)
	if err := s.send(st); err != nil {
		return err
	}
	st = s.begin("message_delta")
	s.buf = append(s.buf, `{"type":"message_delta","delta":{"stop_reason":`...)
	s.buf = append(s.buf, msgStop(pl)...)
	s.buf = append(s.buf, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	s.buf = appendInt(s.buf, pl.out)
	s.buf = append(s.buf, `}}`...)
	if err := s.send(st); err != nil {
		return err
	}
	st = s.begin("message_stop")
	s.buf = append(s.buf, `{"type":"message_stop"}`...)
	return s.send(st)
}
