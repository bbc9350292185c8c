package pipeline

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// oneByOneVendor hands its stream's events to the sink one at a time, as
// a plugin does when each upstream read holds one event.
type oneByOneVendor struct{ fastVendor }

func (v oneByOneVendor) ChatStream(_ context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
	if err := sink.Head(vendor.Head{Status: 200}); err != nil {
		return err
	}
	for _, ev := range v.events {
		if err := sink.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

// flushWriter records what reaches the client's socket: the bytes of each
// flush that had any (net/http writes nothing on an empty flush), and what
// was written after the last one.
type flushWriter struct {
	h       http.Header
	pending []byte
	sent    [][]byte
}

func (w *flushWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *flushWriter) Header() http.Header              { return w.h }
func (w *flushWriter) WriteHeader(int)                  {}
func (w *flushWriter) Write(b []byte) (int, error) {
	w.pending = append(w.pending, b...)
	return len(b), nil
}
func (w *flushWriter) Flush() {
	if len(w.pending) > 0 {
		w.sent = append(w.sent, w.pending)
		w.pending = nil
	}
}

// A translated stream's last events (the translator's End) go out with
// the upstream's last batch: it costs the server no more writes to the
// socket than the native stream of the same upstream answer, whether the
// events come in one batch or one by one, and nothing is left unflushed.
func TestTranslatedStreamEndsInTheLastFlush(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    vendor.Vendor
	}{
		{"batch", fastVendor{events: benchEvents()}},
		{"one-by-one", oneByOneVendor{fastVendor{events: benchEvents()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatewayWith(t, tc.v)
			run := func(p protocol.ID, path string, body []byte) *flushWriter {
				br := g.request(path, body)
				defer br.cancel()
				w := &flushWriter{h: http.Header{}}
				c := &Call{ID: g.ids.id(), Start: time.Now(), Kind: KindChat, Protocol: p, Billed: true,
					Request: br.r, Pattern: br.pattern, Body: body}
				c.W = c.Writer(w).WithWriteTimeout(config.DefaultWriteTimeout)
				g.chain.Run(br.r.Context(), c)
				if c.Err != nil {
					t.Fatalf("%s: %v", p, c.Err)
				}
				if len(w.pending) > 0 {
					t.Fatalf("%s: %q written and never flushed", p, w.pending)
				}
				return w
			}
			native := run(protocol.OpenAIChat, "/v1/chat/completions", benchStreamBody)
			translated := run(protocol.AnthropicMessages, "/v1/messages", benchMessagesStreamBody)
			if len(translated.sent) > len(native.sent) {
				t.Errorf("the translated stream took %d writes to the socket, the native one %d", len(translated.sent), len(native.sent))
			}
			last := translated.sent[len(translated.sent)-1]
			if !bytes.HasSuffix(last, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) ||
				!bytes.Contains(last, []byte("event: message_delta\n")) {
				t.Errorf("the last write is %q; want it to carry message_delta and end with message_stop", last)
			}
		})
	}
}
