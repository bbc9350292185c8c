package conformance

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The shapes a 200 answer must have in each protocol: the fields a client
// of the vendor's API reads, and the usage the gateway bills from. A
// vendor that answers `{}`, or a stream with only a right last event,
// fails here.

// checkAnswer checks a non-streaming 200 body.
func checkAnswer(proto string, body []byte) error {
	if !gjson.ValidBytes(body) {
		return fmt.Errorf("body is not JSON: %.300q", body)
	}
	b := gjson.ParseBytes(body)
	var s shape
	switch protocol.ID(proto) {
	case protocol.OpenAIChat:
		s.str(b, "id")
		s.is(b, "object", "chat.completion")
		s.num(b, "created")
		s.str(b, "model")
		s.nonEmpty(b, "choices")
		b.Get("choices").ForEach(func(_, c gjson.Result) bool {
			s.num(c, "index")
			s.is(c, "message.role", "assistant")
			s.str(c, "finish_reason")
			if !c.Get("message.content").Exists() && !c.Get("message.tool_calls").IsArray() {
				s.fail("a choice without message.content or message.tool_calls: %s", c.Raw)
			}
			return true
		})
		s.usage(b.Get("usage"), "prompt_tokens", "completion_tokens", "total_tokens")
	case protocol.AnthropicMessages:
		s.str(b, "id")
		s.is(b, "type", "message")
		s.is(b, "role", "assistant")
		s.str(b, "model")
		s.blocks(b.Get("content"))
		s.str(b, "stop_reason")
		s.num(b, "usage.input_tokens")
		s.num(b, "usage.output_tokens")
	case protocol.OpenAIResponses:
		s.str(b, "id")
		s.is(b, "object", "response")
		s.num(b, "created_at")
		s.is(b, "status", "completed")
		s.str(b, "model")
		s.blocks(b.Get("output"))
		s.usage(b.Get("usage"), "input_tokens", "output_tokens", "total_tokens")
	case protocol.GeminiNative:
		s.nonEmpty(b, "candidates")
		c := b.Get("candidates.0")
		s.is(c, "content.role", "model")
		s.nonEmpty(c, "content.parts")
		s.str(c, "finishReason")
		s.num(b, "usageMetadata.promptTokenCount")
		s.num(b, "usageMetadata.totalTokenCount")
	default:
		return fmt.Errorf("no shape known for protocol %q", proto)
	}
	return s.err
}

// checkStream checks a whole stream that ended normally: every event's
// shape, the protocol's event sequence from the first event to the last,
// and the usage (for completions, when the request asked for it).
func checkStream(proto string, evs []vendor.Event, wantUsage bool) error {
	if len(evs) == 0 {
		return fmt.Errorf("no events")
	}
	var s shape
	switch protocol.ID(proto) {
	case protocol.OpenAIChat:
		chatStream(&s, evs, wantUsage)
	case protocol.AnthropicMessages:
		messagesStream(&s, evs)
	case protocol.OpenAIResponses:
		responsesStream(&s, evs)
	case protocol.GeminiNative:
		geminiStream(&s, evs)
	default:
		return fmt.Errorf("no stream shape known for protocol %q", proto)
	}
	return s.err
}

// Completions: chunks, one of them with the finish reason, then (when the
// request set stream_options.include_usage) one usage chunk with no
// choices, then data: [DONE].
func chatStream(s *shape, evs []vendor.Event, wantUsage bool) {
	last := evs[len(evs)-1]
	if string(last.Data) != "[DONE]" {
		s.fail("last event %q, want data [DONE]", last.Data)
	}
	finished, usages, content := false, 0, false
	for i, ev := range evs[:len(evs)-1] {
		d, ok := s.object(i, ev)
		if !ok {
			continue
		}
		s.is(d, "object", "chat.completion.chunk")
		s.str(d, "id")
		s.str(d, "model")
		s.num(d, "created")
		choices := d.Get("choices")
		if !choices.IsArray() {
			s.fail("event %d without a choices array: %s", i, ev.Data)
		}
		if u := d.Get("usage"); u.Exists() && u.Type != gjson.Null {
			usages++
			if len(choices.Array()) != 0 || !finished {
				s.fail("event %d: usage comes in its own chunk, with no choices, after the finish reason: %s", i, ev.Data)
			}
			s.usage(u, "prompt_tokens", "completion_tokens", "total_tokens")
		}
		choices.ForEach(func(_, c gjson.Result) bool {
			delta := c.Get("delta")
			if !delta.IsObject() {
				s.fail("event %d: a choice without a delta: %s", i, ev.Data)
			}
			if t := delta.Get("content"); t.Type == gjson.String && t.Str != "" || delta.Get("tool_calls").IsArray() {
				if finished {
					s.fail("event %d: content after the finish reason", i)
				}
				content = true
			}
			if fr := c.Get("finish_reason"); fr.Exists() && fr.Type != gjson.Null {
				if finished {
					s.fail("event %d: a second finish reason", i)
				}
				finished = true
			}
			return true
		})
	}
	switch {
	case !content:
		s.fail("no content or tool call delta")
	case !finished:
		s.fail("no chunk with a finish_reason")
	case wantUsage && usages != 1:
		s.fail("%d usage chunks, want 1 (stream_options.include_usage was set)", usages)
	case !wantUsage && usages != 0:
		s.fail("a usage chunk the request did not ask for")
	}
}

// Messages: message_start, then each content block as start, deltas,
// stop (indexes from 0, one block open at a time), then message_delta
// with the stop reason and output usage, then message_stop; ping may come
// anywhere after message_start.
func messagesStream(s *shape, evs []vendor.Event) {
	const (
		start = iota
		blocks
		delta
		stopped
	)
	state, open, next := start, -1, 0
	for i, ev := range evs {
		d, ok := s.object(i, ev)
		if !ok {
			continue
		}
		typ := d.Get("type").String()
		if ev.Name != "" && ev.Name != typ {
			s.fail("event %d named %q has type %q", i, ev.Name, typ)
		}
		if typ == "ping" && state != start && state != stopped {
			continue
		}
		switch {
		case state == start && typ == "message_start":
			m := d.Get("message")
			s.str(m, "id")
			s.is(m, "type", "message")
			s.is(m, "role", "assistant")
			s.str(m, "model")
			if !m.Get("content").IsArray() {
				s.fail("message_start without a content array")
			}
			s.num(m, "usage.input_tokens")
			state = blocks
		case state == blocks && typ == "content_block_start" && open < 0:
			if idx := d.Get("index").Int(); idx != int64(next) || !d.Get("index").Exists() {
				s.fail("event %d: content_block_start index %s, want %d", i, d.Get("index").Raw, next)
			}
			s.str(d, "content_block.type")
			open = next
			next++
		case state == blocks && (typ == "content_block_delta" || typ == "content_block_stop") && open >= 0:
			if d.Get("index").Int() != int64(open) {
				s.fail("event %d: %s index %s, the open block is %d", i, typ, d.Get("index").Raw, open)
			}
			if typ == "content_block_delta" {
				s.str(d, "delta.type")
			} else {
				open = -1
			}
		case state == blocks && typ == "message_delta" && open < 0 && next > 0:
			s.str(d, "delta.stop_reason")
			s.num(d, "usage.output_tokens")
			state = delta
		case state == delta && typ == "message_stop":
			state = stopped
		default:
			s.fail("event %d: %s out of the messages sequence: %s", i, typ, ev.Data)
			return
		}
	}
	if state != stopped {
		s.fail("the stream did not end with message_delta then message_stop")
	}
}

// Responses: response.created, response.in_progress, each output item
// added, its deltas, done; then response.completed with the usage. A
// sequence_number, when sent, counts up from 0.
func responsesStream(s *shape, evs []vendor.Event) {
	numbered := gjson.GetBytes(evs[0].Data, "sequence_number").Exists()
	openItems := map[int64]bool{}
	items := 0
	for i, ev := range evs {
		d, ok := s.object(i, ev)
		if !ok {
			continue
		}
		typ := d.Get("type").String()
		if ev.Name != "" && ev.Name != typ {
			s.fail("event %d named %q has type %q", i, ev.Name, typ)
		}
		if sn := d.Get("sequence_number"); numbered && (!sn.Exists() || sn.Int() != int64(i)) {
			s.fail("event %d: sequence_number %s, want %d", i, sn.Raw, i)
		}
		switch {
		case i == 0:
			if typ != "response.created" {
				s.fail("first event %s, want response.created", typ)
			}
			s.str(d, "response.id")
		case i == 1:
			if typ != "response.in_progress" {
				s.fail("second event %s, want response.in_progress", typ)
			}
		case i == len(evs)-1:
			if typ != "response.completed" {
				s.fail("last event %s, want response.completed", typ)
				return
			}
			r := d.Get("response")
			s.is(r, "status", "completed")
			s.blocks(r.Get("output"))
			s.usage(r.Get("usage"), "input_tokens", "output_tokens", "total_tokens")
		case typ == "response.output_item.added":
			idx := d.Get("output_index").Int()
			if openItems[idx] || idx != int64(items) {
				s.fail("event %d: output item %d added out of order", i, idx)
			}
			s.str(d, "item.type")
			openItems[idx] = true
			items++
		case typ == "response.output_item.done":
			idx := d.Get("output_index").Int()
			if !openItems[idx] {
				s.fail("event %d: output item %d done but not open", i, idx)
			}
			delete(openItems, idx)
		case typ == "response.created" || typ == "response.in_progress" || typ == "response.completed":
			s.fail("event %d: a second %s", i, typ)
		default:
			// Deltas and part events belong to an open item.
			if idx := d.Get("output_index"); idx.Exists() && !openItems[idx.Int()] {
				s.fail("event %d: %s for output item %d, which is not open", i, typ, idx.Int())
			}
		}
	}
	if len(evs) < 3 || items == 0 {
		s.fail("%d events and %d output items: want created, in_progress, items, completed", len(evs), items)
	}
	if len(openItems) != 0 {
		s.fail("output items never done: %v", openItems)
	}
}

// Generate-content: chunks with candidates; the last, and only the last,
// has a finish reason, and it carries the usage.
func geminiStream(s *shape, evs []vendor.Event) {
	content := false
	for i, ev := range evs {
		d, ok := s.object(i, ev)
		if !ok {
			continue
		}
		c := d.Get("candidates.0")
		if !c.Exists() {
			s.fail("event %d without candidates: %s", i, ev.Data)
			continue
		}
		if c.Get("content.parts").IsArray() && len(c.Get("content.parts").Array()) > 0 {
			content = true
		}
		fr := c.Get("finishReason")
		if last := i == len(evs)-1; last != (fr.Type == gjson.String && fr.Str != "") {
			s.fail("event %d of %d: finishReason %s (only the last chunk has one)", i, len(evs), fr.Raw)
		}
	}
	last := gjson.ParseBytes(evs[len(evs)-1].Data)
	s.num(last, "usageMetadata.promptTokenCount")
	s.num(last, "usageMetadata.totalTokenCount")
	if !content {
		s.fail("no chunk with content parts")
	}
}

// shape collects the first failure of a check.
type shape struct{ err error }

func (s *shape) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
}

func (s *shape) object(i int, ev vendor.Event) (gjson.Result, bool) {
	if !gjson.ValidBytes(ev.Data) || !gjson.ParseBytes(ev.Data).IsObject() {
		s.fail("event %d is not a JSON object: %.300q", i, ev.Data)
		return gjson.Result{}, false
	}
	return gjson.ParseBytes(ev.Data), true
}

func (s *shape) str(r gjson.Result, path string) {
	if v := r.Get(path); v.Type != gjson.String || v.Str == "" {
		s.fail("%s: want a non-empty string, got %s in %.300s", path, orAbsent(v), r.Raw)
	}
}

func (s *shape) is(r gjson.Result, path, want string) {
	if v := r.Get(path); v.Type != gjson.String || v.Str != want {
		s.fail("%s: want %q, got %s in %.300s", path, want, orAbsent(v), r.Raw)
	}
}

func (s *shape) num(r gjson.Result, path string) {
	if v := r.Get(path); v.Type != gjson.Number || v.Int() < 0 || float64(v.Int()) != v.Num {
		s.fail("%s: want a count, got %s in %.300s", path, orAbsent(v), r.Raw)
	}
}

func (s *shape) nonEmpty(r gjson.Result, path string) {
	if v := r.Get(path); !v.IsArray() || len(v.Array()) == 0 {
		s.fail("%s: want a non-empty array, got %s in %.300s", path, orAbsent(v), r.Raw)
	}
}

// blocks checks a non-empty array of typed objects (content blocks,
// output items).
func (s *shape) blocks(r gjson.Result) {
	if !r.IsArray() || len(r.Array()) == 0 {
		s.fail("want a non-empty array of typed items, got %s", orAbsent(r))
		return
	}
	for _, b := range r.Array() {
		s.str(b, "type")
	}
}

// usage checks input, output and total counts, total the sum of the two.
func (s *shape) usage(u gjson.Result, in, out, total string) {
	s.num(u, in)
	s.num(u, out)
	s.num(u, total)
	if s.err == nil && u.Get(total).Int() != u.Get(in).Int()+u.Get(out).Int() {
		s.fail("usage %s: %s is not %s + %s", u.Raw, total, in, out)
	}
}

func orAbsent(v gjson.Result) string {
	if !v.Exists() {
		return "nothing"
	}
	return v.Raw
}
