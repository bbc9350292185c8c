package codec

import (
	"bytes"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// ModelNamer puts the gateway's model id in what an upstream of protocol p
// answers, where the upstream wrote its own (an upstream id such as
// "gpt-4o-mini" behind "my-gpt", or a dated snapshot): the client sees the
// model it asked for, as in a translated answer and the log row. Only the
// model member changes; every other byte stays as the upstream sent it.
// Events that carry no model pass untouched without being parsed.
type ModelNamer struct {
	p     protocol.ID
	model string
	buf   []byte
}

// NewModelNamer returns a namer writing model into protocol p's answers.
func NewModelNamer(p protocol.ID, model string) *ModelNamer {
	return &ModelNamer{p: p, model: model}
}

// Answer renames the model of a complete non-streaming answer; it returns
// body itself when nothing changes.
func (m *ModelNamer) Answer(body []byte) []byte {
	name := "model"
	if m.p == protocol.GeminiNative {
		name = "modelVersion"
	}
	out, _ := m.set(body, "", name, false)
	return out
}

// Event renames the model of one stream event. The data returned may live
// in the namer's buffer until the next call.
func (m *ModelNamer) Event(ev protocol.Event) protocol.Event {
	var data []byte
	var changed bool
	switch m.p {
	case protocol.OpenAIChat:
		if len(ev.Data) == 0 || ev.Data[0] == '[' { // [DONE]
			return ev
		}
		data, changed = m.set(ev.Data, "", "model", true)
	case protocol.GeminiNative:
		data, changed = m.set(ev.Data, "", "modelVersion", true)
	case protocol.AnthropicMessages:
		// Only message_start names the model.
		if !named(ev, "message_start") {
			return ev
		}
		data, changed = m.set(ev.Data, "message", "model", true)
	case protocol.OpenAIResponses:
		// Only the events carrying the response object name the model.
		if !carriesResponse(ev) {
			return ev
		}
		data, changed = m.set(ev.Data, "response", "model", true)
	default:
		return ev
	}
	if changed {
		ev.Data = data
	}
	return ev
}

// named reports whether ev is of event type typ: by its event: line, else
// by the data's type (cheaply: a data-only stream is rare here).
func named(ev protocol.Event, typ string) bool {
	if ev.Name != "" {
		return ev.Name == typ
	}
	return bytes.Contains(ev.Data, []byte(`"`+typ+`"`))
}

func carriesResponse(ev protocol.Event) bool {
	switch ev.Name {
	case "response.created", "response.in_progress", "response.completed", "response.incomplete",
		"response.failed", "response.queued":
		return true
	case "":
		return bytes.Contains(ev.Data, []byte(`"response":`))
	}
	return false
}

// set writes m.model as member name of the object at the top level of
// data, or inside the top-level object member parent. It changes a string
// value that differs (the first occurrence: upstreams send one); a missing
// member stays missing. When reuse is set the result lives in m.buf.
func (m *ModelNamer) set(data []byte, parent, name string, reuse bool) ([]byte, bool) {
	s := str(data)
	start := skipWS(s, 0)
	if start >= len(s) || s[start] != '{' {
		return data, false
	}
	if parent != "" {
		vs, ok := member(s, start, parent)
		if !ok || !isObject(s[vs:]) {
			return data, false
		}
		start = vs
	}
	vs, ok := member(s, start, name)
	if !ok {
		return data, false
	}
	ve := stringEnd(s, vs)
	if !isString(s[vs:]) || ve < 0 || strValue(s[vs:ve]) == m.model {
		return data, false
	}
	var out []byte
	if reuse {
		out = m.buf[:0]
	} else {
		out = make([]byte, 0, len(data)+len(m.model))
	}
	out = append(out, data[:vs]...)
	out = appendQuoted(out, m.model)
	out = append(out, data[ve:]...)
	if reuse {
		m.buf = out
	}
	return out, true
}

// member returns where the value of the object's member name starts.
func member(s string, start int, name string) (int, bool) {
	it := members(s, start)
	for {
		k, vs, _, ok := it.next()
		if !ok {
			return 0, false
		}
		if keyName(k) == name {
			return vs, true
		}
	}
}
