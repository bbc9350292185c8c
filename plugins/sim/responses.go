package sim

import "github.com/tidwall/gjson"

// OpenAI responses: a response object, or typed events with increasing
// sequence numbers from response.created to response.completed.

func respStatus(pl *plan) string {
	if pl.limited {
		return "incomplete"
	}
	return "completed"
}

// appendResponse appends the response object; done says whether it is
// the final one (with output and usage) or the in-progress one.
func appendResponse(b []byte, pl *plan, done bool) []byte {
	b = append(b, `{"id":"resp_`...)
	b = pl.appendID(b, 1)
	b = append(b, `","object":"response","created_at":`...)
	b = appendInt(b, pl.created)
	b = append(b, `,"status":"`...)
	if done {
		b = append(b, respStatus(pl)...)
	} else {
		b = append(b, "in_progress"...)
	}
	b = append(b, `","background":false,"error":null,"incomplete_details":`...)
	if done && pl.limited {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":`...)
	b = appendRaw(b, pl.conv.instructions, "null")
	b = append(b, `,"max_output_tokens":`...)
	if pl.conv.maxTokens > 0 {
		b = appendInt(b, pl.conv.maxTokens)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"max_tool_calls":null,"model":`...)
	b = appendStr(b, pl.model)
	b = append(b, `,"output":[`...)
	if done {
		b = appendRespItem(b, pl, true)
	}
	b = append(b, `],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":true,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":`...)
	if pl.conv.tools.IsArray() {
		b = append(b, pl.conv.tools.Raw...)
	} else {
		b = append(b, "[]"...)
	}
	b = append(b, `,"top_p":1.0,"truncation":"disabled","usage":`...)
	if done {
		b = append(b, `{"input_tokens":`...)
		b = appendInt(b, pl.in)
		b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, pl.cached)
		b = append(b, `},"output_tokens":`...)
		b = appendInt(b, pl.out)
		b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
		b = appendInt(b, pl.thinking)
		b = append(b, `},"total_tokens":`...)
		b = appendInt(b, pl.in+pl.out)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"user":null,"metadata":{}}`...)
}

func appendRaw(b []byte, v gjson.Result, absent string) []byte {
	if !v.Exists() {
		return append(b, absent...)
	}
	return append(b, v.Raw...)
}

// appendRespItem appends the output item, whole when done, else as added
// (in progress, no content or arguments yet).
func appendRespItem(b []byte, pl *plan, done bool) []byte {
	status := "in_progress"
	if done {
		status = respStatus(pl)
	}
	if pl.image {
		return appendImageItem(b, pl, done)
	}
	if pl.tool != "" {
		b = append(b, `{"id":"fc_`...)
		b = pl.appendID(b, 3)
		b = append(b, `","type":"function_call","status":"`...)
		if done {
			status = "completed"
		}
		b = append(b, status...)
		b = append(b, `","arguments":`...)
		if done {
			b = appendStrBytes(b, pl.args)
		} else {
			b = append(b, `""`...)
		}
		b = append(b, `,"call_id":"call_`...)
		b = pl.appendID(b, 2)
		b = append(b, `","name":`...)
		b = appendStr(b, pl.tool)
		return append(b, '}')
	}
	b = append(b, `{"id":"msg_`...)
	b = pl.appendID(b, 4)
	b = append(b, `","type":"message","status":"`...)
	b = append(b, status...)
	b = append(b, `","content":[`...)
	if done {
		b = appendRespPart(b, pl.text)
	}
	return append(b, `],"role":"assistant"}`...)
}

func appendRespPart(b, text []byte) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = appendStrBytes(b, text)
	return append(b, '}')
}

func appendResponsesBody(b []byte, pl *plan) []byte {
	return appendResponse(b, pl, true)
}

// respEvent starts event typ: its type and sequence number.
func respEvent(s *streamer, typ string) int {
	st := s.begin(typ)
	s.buf = append(s.buf, `{"type":"`...)
	s.buf = append(s.buf, typ...)
	s.buf = append(s.buf, `","sequence_number":`...)
	s.buf = appendInt(s.buf, int64(s.sent))
	return st
}

// appendItemRef appends the item_id, output_index and content_index.
func appendItemRef(b []byte, pl *plan, content bool) []byte {
	b = append(b, `,"item_id":"`...)
	if pl.image {
		b = append(b, "ig_"...)
		b = pl.appendID(b, 5)
	} else if pl.tool != "" {
		b = append(b, "fc_"...)
		b = pl.appendID(b, 3)
	} else {
		b = append(b, "msg_"...)
		b = pl.appendID(b, 4)
	}
	b = append(b, `","output_index":0`...)
	if content {
		b = append(b, `,"content_index":0`...)
	}
	return b
}

func streamResponses(s *streamer, pl *plan) error {
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		st := respEvent(s, typ)
		s.buf = append(s.buf, `,"response":`...)
		s.buf = appendResponse(s.buf, pl, false)
		s.buf = append(s.buf, '}')
		if err := s.send(st); err != nil {
			return err
		}
	}
	st := respEvent(s, "response.output_item.added")
	s.buf = append(s.buf, `,"output_index":0,"item":`...)
	s.buf = appendRespItem(s.buf, pl, false)
	s.buf = append(s.buf, '}')
	if err := s.send(st); err != nil {
		return err
	}
	if pl.image {
		for _, typ := range [...]string{"response.image_generation_call.in_progress", "response.image_generation_call.generating", "response.image_generation_call.completed"} {
			st = respEvent(s, typ)
			s.buf = appendItemRef(s.buf, pl, false)
			s.buf = append(s.buf, '}')
			if err := s.send(st); err != nil {
				return err
			}
		}
	} else if pl.tool != "" {
		for off := 0; off < len(pl.args); off += argFragment {
			st = respEvent(s, "response.function_call_arguments.delta")
			s.buf = appendItemRef(s.buf, pl, false)
			s.buf = append(s.buf, `,"delta":`...)
			s.buf = appendStrBytes(s.buf, pl.args[off:min(off+argFragment, len(pl.args))])
			s.buf = append(s.buf, '}')
			if err := s.send(st); err != nil {
				return err
			}
		}
		st = respEvent(s, "response.function_call_arguments.done")
		s.buf = appendItemRef(s.buf, pl, false)
		s.buf = append(s.buf, `,"name":`...)
		s.buf = appendStr(s.buf, pl.tool)
		s.buf = append(s.buf, `,"arguments":`...)
		s.buf = appendStrBytes(s.buf, pl.args)
		s.buf = append(s.buf, '}')
		if err := s.send(st); err != nil {
			return err
		}
	} else {
		st = respEvent(s, "response.content_part.added")
		s.buf = appendItemRef(s.buf, pl, true)
		s.buf = append(s.buf, `,"part":`...)
		s.buf = appendRespPart(s.buf, nil)
		s.buf = append(s.buf, '}')
		if err := s.send(st); err != nil {
			return err
		}
		from := 0
		for i := 0; i < pl.chunks; i++ {
			end := pl.chunkEnd(i, from)
			st = respEvent(s, "response.output_text.delta")
			s.buf = appendItemRef(s.buf, pl, true)
			s.buf = append(s.buf, `,"delta":`...)
			s.buf = appendStrBytes(s.buf, pl.text[from:end])
			s.buf = append(s.buf, `,"logprobs":[]}`...)
			from = end
			if err := s.send(st); err != nil {
				return err
			}
		}
		st = respEvent(s, "response.output_text.done")
		s.buf = appendItemRef(s.buf, pl, true)
		s.buf = append(s.buf, `,"text":`...)
		s.buf = appendStrBytes(s.buf, pl.text)
		s.buf = append(s.buf, `,"logprobs":[]}`...)
		if err := s.send(st); err != nil {
			return err
		}
		st = respEvent(s, "response.content_part.done")
		s.buf = appendItemRef(s.buf, pl, true)
		s.buf = append(s.buf, `,"part":`...)
		s.buf = appendRespPart(s.buf, pl.text)
		s.buf = append(s.buf, '}')
		if err := s.send(st); err != nil {
			return err
		}
	}
	st = respEvent(s, "response.output_item.done")
	s.buf = append(s.buf, `,"output_index":0,"item":`...)
	s.buf = appendRespItem(s.buf, pl, true)
	s.buf = append(s.buf, '}')
	if err := s.send(st); err != nil {
		return err
	}
	end := "response.completed"
	if pl.limited {
		end = "response.incomplete"
	}
	st = respEvent(s, end)
	s.buf = append(s.buf, `,"response":`...)
	s.buf = appendResponse(s.buf, pl, true)
	s.buf = append(s.buf, '}')
	return s.send(st)
}
