package pipeline

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
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

// headMark stands for the status line and headers in what flushWriter
// records.
const headMark = "HTTP/1.1 200 OK\n\n"

// flushWriter records what reaches the client's socket as net/http sends
// it: the bytes of each flush that had any (the status and headers count:
// a flush right after them sends them alone), and, at end, what the
// response's end sends after the chain returned. A flush may come from
// the relay's timer goroutine: each is signalled on sends.
type flushWriter struct {
	h       http.Header
	mu      sync.Mutex
	pending []byte
	sent    [][]byte
	sends   chan []byte
}

func newFlushWriter() *flushWriter {
	return &flushWriter{h: http.Header{}, sends: make(chan []byte, 64)}
}

func (w *flushWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *flushWriter) Header() http.Header              { return w.h }
func (w *flushWriter) WriteHeader(int)                  { w.Write([]byte(headMark)) }
func (w *flushWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.pending = append(w.pending, b...)
	w.mu.Unlock()
	return len(b), nil
}
func (w *flushWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		w.sent = append(w.sent, w.pending)
		w.sends <- w.pending
		w.pending = nil
	}
}

// end is the response's end: net/http sends what is left in one write
// with the body's terminator.
func (w *flushWriter) end() { w.Flush() }

// sentAll is everything sent so far, joined.
func (w *flushWriter) sentAll() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Join(w.sent, nil)
}

// runStream takes one streaming call of protocol p through g's chain and
// ends its response as net/http does.
func runStream(t *testing.T, g *benchGateway, p protocol.ID, path string, body []byte) *flushWriter {
	t.Helper()
	br := g.request(path, body)
	defer br.cancel()
	w := newFlushWriter()
	c := &Call{ID: g.ids.id(), Start: time.Now(), Kind: KindChat, Protocol: p, Billed: true,
		Request: br.r, Pattern: br.pattern, Body: body}
	c.W = c.Writer(w).WithWriteTimeout(config.DefaultWriteTimeout)
	g.chain.Run(br.r.Context(), c)
	if c.Err != nil {
		t.Fatalf("%s: %v", p, c.Err)
	}
	w.end()
	return w
}

// A stream costs the server one write to the client's socket for its
// status and headers (when the upstream answered) and one per batch of
// upstream events, the last of which goes out with the response's end:
// events that came in one batch take one write after the head, one by
// one a write each. A translated stream's last events (the translator's
// End) go out in the same last write, so it never takes more writes than
// the native stream of the same upstream answer.
func TestStreamWritesOncePerBatch(t *testing.T) {
	n := len(benchEvents())
	for _, tc := range []struct {
		name   string
		v      vendor.Vendor
		writes int // of the native stream
	}{
		{"batch", fastVendor{events: benchEvents()}, 2},
		{"one-by-one", oneByOneVendor{fastVendor{events: benchEvents()}}, n + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatewayWith(t, tc.v)
			native := runStream(t, g, protocol.OpenAIChat, "/v1/chat/completions", benchStreamBody)
			translated := runStream(t, g, protocol.AnthropicMessages, "/v1/messages", benchMessagesStreamBody)
			if len(native.sent) != tc.writes {
				t.Errorf("the native stream took %d writes to the socket; want %d", len(native.sent), tc.writes)
			}
			for name, w := range map[string]*flushWriter{"native": native, "translated": translated} {
				if first := w.sent[0]; string(first) != headMark {
					t.Errorf("%s: the first write is %.80q; want the head alone, as soon as the upstream answered", name, first)
				}
			}
			if len(translated.sent) > len(native.sent) {
				t.Errorf("the translated stream took %d writes to the socket, the native one %d", len(translated.sent), len(native.sent))
			}
			last := translated.sent[len(translated.sent)-1]
			if !bytes.HasSuffix(last, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) ||
				!bytes.Contains(last, []byte("event: message_delta\n")) {
				t.Errorf("the last write is %q; want it to carry message_delta and end with message_stop", last)
			}
			if last := native.sent[len(native.sent)-1]; !bytes.HasSuffix(last, []byte("data: [DONE]\n\n")) {
				t.Errorf("the native stream's last write is %q; want it to end with [DONE]", last)
			}
		})
	}
}

// settleWatch calls before at each settlement, before the store makes it
// durable.
type settleWatch struct {
	store.Store
	before func()
}

func (s settleWatch) Settle(ctx context.Context, set store.Settlement) error {
	s.before()
	return s.Store.Settle(ctx, set)
}

// A stream's last batch (the one with its terminator; the finish and usage
// chunks too when they came with it) reaches the client only after the
// settlement was made, native and translated: a client that saw the end
// of its stream finds the call charged and logged.
func TestStreamEndsAfterTheSettlement(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    vendor.Vendor
	}{
		{"batch", fastVendor{events: benchEvents()}},
		{"one-by-one", oneByOneVendor{fastVendor{events: benchEvents()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w *flushWriter
			var early []string
			g := newGatewayOn(t, tc.v, func(st store.Store) store.Store {
				return settleWatch{Store: st, before: func() {
					sent := w.sentAll()
					for _, end := range []string{"[DONE]", "message_stop"} {
						if bytes.Contains(sent, []byte(end)) {
							early = append(early, end)
						}
					}
				}}
			})
			for _, p := range []struct {
				p    protocol.ID
				path string
				body []byte
				end  string
			}{
				{protocol.OpenAIChat, "/v1/chat/completions", benchStreamBody, "data: [DONE]\n\n"},
				{protocol.AnthropicMessages, "/v1/messages", benchMessagesStreamBody, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
			} {
				early = nil
				br := g.request(p.path, p.body)
				w = newFlushWriter()
				c := &Call{ID: g.ids.id(), Start: time.Now(), Kind: KindChat, Protocol: p.p, Billed: true,
					Request: br.r, Pattern: br.pattern, Body: p.body}
				c.W = c.Writer(w).WithWriteTimeout(config.DefaultWriteTimeout)
				g.chain.Run(br.r.Context(), c)
				br.cancel()
				if c.Err != nil || c.Row == nil {
					t.Fatalf("%s: %v, row %v", p.p, c.Err, c.Row)
				}
				if len(early) > 0 {
					t.Errorf("%s: %q reached the client before the settlement", p.p, early)
				}
				w.end()
				if last := w.sent[len(w.sent)-1]; !bytes.HasSuffix(last, []byte(p.end)) {
					t.Errorf("%s: the response's end sent %q; want it to end the stream", p.p, last)
				}
			}
		})
	}
}

// lingerVendor sends the head, waits until the client has it, then sends
// its events one by one and, before it returns, waits until the client has
// the last: an upstream that keeps its answer open after the terminator.
type lingerVendor struct {
	fastVendor
	w      *flushWriter
	missed *error // what the client never got
}

func (v lingerVendor) ChatStream(ctx context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
	wait := func(want string) error {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case b := <-v.w.sends:
				if bytes.Contains(b, []byte(want)) {
					return nil
				}
			case <-deadline:
				return errors.New("the client never got " + want)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if err := sink.Head(vendor.Head{Status: 200}); err != nil {
		return err
	}
	if err := wait(headMark); err != nil {
		return err
	}
	for _, ev := range v.events {
		if err := sink.Event(ev); err != nil {
			return err
		}
	}
	err := wait("[DONE]")
	*v.missed = err
	return err
}

// A complete stream's last batch goes out after FlushWait by itself when
// the upstream lingers after its terminator: the client's stream does not
// wait for the upstream's end.
func TestStreamHeldEndGoesOutAfterTheWait(t *testing.T) {
	w := newFlushWriter()
	var missed error
	g := newGatewayWith(t, lingerVendor{fastVendor{events: benchEvents()}, w, &missed})
	g.stages["dispatch"].(*dispatchStage).flushWait = time.Millisecond
	br := g.request("/v1/chat/completions", benchStreamBody)
	defer br.cancel()
	c := &Call{ID: g.ids.id(), Start: time.Now(), Kind: KindChat, Protocol: protocol.OpenAIChat, Billed: true,
		Request: br.r, Pattern: br.pattern, Body: benchStreamBody}
	c.W = c.Writer(w).WithWriteTimeout(config.DefaultWriteTimeout)
	g.chain.Run(br.r.Context(), c)
	if c.Err != nil {
		t.Fatal(c.Err)
	}
	if missed != nil {
		t.Fatal(missed)
	}
	w.end()
	if n, want := len(w.sent), len(benchEvents())+1; n != want {
		t.Errorf("%d writes; want %d: the head, then one per event", n, want)
	}
	if last := w.sent[len(w.sent)-1]; !bytes.HasSuffix(last, []byte("data: [DONE]\n\n")) {
		t.Errorf("the last write is %q; want the terminator, flushed before the upstream ended", last)
	}
}
