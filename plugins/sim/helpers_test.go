package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// recSink records a stream, copying each event.
type recSink struct {
	head   vendor.Head
	heads  int
	events []vendor.Event
	failAt int // return an error at this event (0: never)
}

func (r *recSink) Head(h vendor.Head) error {
	r.head = h
	r.heads++
	return nil
}

func (r *recSink) Event(e vendor.Event) error {
	if r.failAt > 0 && len(r.events)+1 == r.failAt {
		return fmt.Errorf("client went away")
	}
	r.events = append(r.events, vendor.Event{Name: e.Name, Data: slices.Clone(e.Data)})
	return nil
}

// bodyFor builds a request body in protocol p with one user message, and
// tools (name -> JSON schema) when given.
func bodyFor(p protocol.ID, text string, extra string, tools ...[2]string) []byte {
	q, _ := json.Marshal(text)
	var b strings.Builder
	switch p {
	case protocol.OpenAIChat:
		fmt.Fprintf(&b, `{"model":"gpt-sim","messages":[{"role":"system","content":"be brief"},{"role":"user","content":%s}]`, q)
		if len(tools) > 0 {
			b.WriteString(`,"tools":[`)
			for i, t := range tools {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"type":"function","function":{"name":%q,"description":"d","parameters":%s}}`, t[0], t[1])
			}
			b.WriteByte(']')
		}
	case protocol.AnthropicMessages:
		fmt.Fprintf(&b, `{"model":"claude-sim","max_tokens":1024,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":%s}]}]`, q)
		if len(tools) > 0 {
			b.WriteString(`,"tools":[`)
			for i, t := range tools {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"name":%q,"description":"d","input_schema":%s}`, t[0], t[1])
			}
			b.WriteByte(']')
		}
	case protocol.OpenAIResponses:
		fmt.Fprintf(&b, `{"model":"gpt-sim","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":%s}]}]`, q)
		if len(tools) > 0 {
			b.WriteString(`,"tools":[`)
			for i, t := range tools {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"type":"function","name":%q,"description":"d","parameters":%s,"strict":false}`, t[0], t[1])
			}
			b.WriteByte(']')
		}
	case protocol.GeminiNative:
		fmt.Fprintf(&b, `{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":%s}]}]`, q)
		if len(tools) > 0 {
			b.WriteString(`,"tools":[{"functionDeclarations":[`)
			for i, t := range tools {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"name":%q,"description":"d","parameters":%s}`, t[0], t[1])
			}
			b.WriteString(`]}]`)
		}
	}
	b.WriteString(extra)
	b.WriteByte('}')
	return []byte(b.String())
}

func call(p protocol.ID, body []byte) *Call {
	return &Call{Protocol: string(p), Model: "gemini-sim", Body: body}
}

func mustChat(t *testing.T, c *Call) *vendor.ChatResponse {
	t.Helper()
	resp, err := NewEngine().Chat(context.Background(), c)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	return resp
}

func mustStream(t *testing.T, c *Call) *recSink {
	t.Helper()
	sink := &recSink{}
	if err := NewEngine().Stream(context.Background(), c, sink); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if sink.heads != 1 {
		t.Fatalf("%d heads", sink.heads)
	}
	return sink
}

func failureKind(err error) vendor.FailureKind {
	if f, ok := err.(*vendor.Failure); ok {
		return f.Kind
	}
	return -1
}
