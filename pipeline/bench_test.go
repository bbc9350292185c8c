package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// The stages' own cost, one by one and chained, with a real (in-memory)
// store and an in-process vendor that answers at once: what the gateway
// adds around the plugin hop and the HTTP server. make bench runs them.

const benchConfig = `
channel "up" {
  vendor    = "fake"
  base_url  = "http://127.0.0.1:1"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["m"]
}
model "m" {
  owned_by           = "bench"
  default_max_tokens = 4096
  translate_from     = ["anthropic_messages"]
  price {
    input  = "0.15"
    output = "0.60"
  }
}
`

var (
	benchAnswer = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"one two three four five six seven eight"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}}`)
	benchChatBody     = []byte(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say eight words."}]}`)
	benchMessagesBody = []byte(`{"model":"m","max_tokens":256,"system":"Be brief.","messages":[{"role":"user","content":"Say eight words."}]}`)
	benchStreamBody   = []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say twenty words."}]}`)
	// benchMessagesStreamBody is stream-20's request as an Anthropic client sends it.
	benchMessagesStreamBody = []byte(`{"model":"m","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Say twenty words."}]}`)
)

// benchEvents is a 20-chunk completions stream with its finish and usage
// chunks and [DONE]: 23 events.
func benchEvents() []vendor.Event {
	var evs []vendor.Event
	for i := range 20 {
		evs = append(evs, vendor.Event{Data: fmt.Appendf(nil,
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}`, i)})
	}
	evs = append(evs,
		vendor.Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)},
		vendor.Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32}}`)},
		vendor.Event{Data: []byte("[DONE]")})
	return evs
}

// fastVendor answers every call at once.
type fastVendor struct{ events []vendor.Event }

func (fastVendor) Describe(context.Context) (vendor.Description, error) {
	return vendor.Description{Name: "fake"}, nil
}
func (fastVendor) Configure(context.Context, vendor.Config) error { return nil }
func (fastVendor) Chat(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	return &vendor.ChatResponse{Status: 200, Body: benchAnswer}, nil
}
func (v fastVendor) ChatStream(_ context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
	if err := sink.Head(vendor.Head{Status: 200}); err != nil {
		return err
	}
	return vendor.SendEvents(sink, v.events)
}

// discardWriter is a ResponseWriter that keeps nothing but counts what
// a client would cost the server: the bytes, the writes into net/http's
// buffer and the flushes (each a write to the socket). It takes write
// deadlines as net/http's does (http.ResponseController reaches it).
type discardWriter struct {
	h                      http.Header
	bytes, writes, flushes int
}

func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *discardWriter) Header() http.Header              { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) {
	w.bytes += len(b)
	w.writes++
	return len(b), nil
}
func (w *discardWriter) WriteHeader(int) {}
func (w *discardWriter) Flush()          { w.flushes++ }

// report adds w's counts per call to b's results.
func (w *discardWriter) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(w.bytes)/n, "out-B/op")
	b.ReportMetric(float64(w.writes)/n, "writes/op")
	b.ReportMetric(float64(w.flushes)/n, "flushes/op")
}

type benchGateway struct {
	chain  *Chains
	stages map[string]Stage
	raw    string
	ids    benchIDs
}

// benchIDs mints request ids as the server does before the chain runs
// (ServeHTTP), carved from one string per block so that minting them is
// not counted as the chain's.
type benchIDs struct {
	block string
	ends  []int
	next  int
	seq   int
}

func (m *benchIDs) id() string {
	if m.next == len(m.ends) {
		var b []byte
		m.ends = m.ends[:0]
		for range 1024 {
			m.seq++
			b = strconv.AppendInt(append(b, "req_"...), int64(m.seq), 10)
			m.ends = append(m.ends, len(b))
		}
		m.block, m.next = string(b), 0
	}
	start := 0
	if m.next > 0 {
		start = m.ends[m.next-1]
	}
	m.next++
	return m.block[start:m.ends[m.next-1]]
}

func newBenchGateway(b testing.TB) *benchGateway {
	return newGatewayWith(b, fastVendor{events: benchEvents()})
}

// newGatewayWith is the bench's gateway on the vendor v.
func newGatewayWith(b testing.TB, v vendor.Vendor) *benchGateway {
	b.Helper()
	return newGatewayOn(b, v, nil)
}

// newGatewayOn is newGatewayWith with the store seen through wrap (nil:
// as it is).
func newGatewayOn(b testing.TB, v vendor.Vendor, wrap func(store.Store) store.Store) *benchGateway {
	b.Helper()
	cfg, err := config.Parse([]byte(benchConfig), "bench.hcl")
	if err != nil {
		b.Fatal(err)
	}
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if err := st.CreateAccount(ctx, store.Account{ID: "acct", Status: store.AccountActive}, money.Credits(1<<30), ""); err != nil {
		b.Fatal(err)
	}
	raw := keys.Prefix + strings.Repeat("ab", 32)
	k := store.Key{ID: "key", AccountID: "acct", Name: "bench", Prefix: raw[:16], Hash: keys.Hash(raw), Enabled: true, Kind: store.KindConsole}
	if err := st.CreateKey(ctx, k); err != nil {
		b.Fatal(err)
	}
	var ds store.Store = st
	if wrap != nil {
		ds = wrap(st)
	}
	d := &Deps{Config: cfg, Store: ds, Logger: hclog.NewNullLogger(), Now: time.Now,
		Vendors: map[string]vendor.Vendor{"fake": v}}
	g := &benchGateway{stages: map[string]Stage{}, raw: raw}
	reg := NewRegistry()
	if g.chain, err = Build(reg, d, nil, nil); err != nil {
		b.Fatal(err)
	}
	for _, s := range g.chain.all.stages {
		g.stages[s.Name()] = s
	}
	return g
}

// benchRequest is one case's request as net/http hands it to the
// server, built once: the chain reads its method, URL and headers and
// neither changes nor keeps them, and takes the body from Call.Body (read
// once, as the server hands it over), so every call gets the same request
// with its body reader rewound. The response writer stands for net/http's
// per-request one: its header map is emptied per call and given back the
// two ids ServeHTTP sets before the chain runs. What the gateway itself
// makes per call (the Call, the ResponseWriter wrapper with its write
// timeout, as Server.writer builds it) stays counted.
type benchRequest struct {
	r       *http.Request
	body    *bytes.Reader
	w       discardWriter
	pattern string // the route's pattern, as the mux sets it
	idValue []string
	cancel  context.CancelFunc
}

type benchKey struct{}

func (g *benchGateway) request(path string, body []byte) *benchRequest {
	br := &benchRequest{body: bytes.NewReader(body), w: discardWriter{h: http.Header{}}, pattern: "POST " + path}
	br.r, _ = http.NewRequest(http.MethodPost, "http://gw"+path, br.body)
	// Its context can end, as net/http's does when the client goes away,
	// and carries a value, as ServeHTTP's id. (A fresh one per request
	// would also make the children map of its first child: one
	// allocation per call more than the bench shows.)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), benchKey{}, "id"))
	br.cancel = cancel
	br.r = br.r.WithContext(ctx)
	br.r.Header.Set("Authorization", "Bearer "+g.raw)
	br.r.Header.Set("Content-Type", "application/json")
	br.r.Header.Set("anthropic-version", "2023-06-01")
	return br
}

func (g *benchGateway) call(p protocol.ID, path string, body []byte) *Call {
	return g.callOn(g.request(path, body), p, body)
}

// callOn is a call on br, reset to what the server hands the chain.
func (g *benchGateway) callOn(br *benchRequest, p protocol.ID, body []byte) *Call {
	br.body.Reset(body)
	id := g.ids.id()
	clear(br.w.h)
	br.idValue = append(br.idValue[:0], id)
	br.w.h["X-Gateway-Trace"], br.w.h["X-Request-Id"] = br.idValue, br.idValue
	c := &Call{ID: id, Start: time.Now(), Kind: KindChat, Protocol: p, Billed: true, Request: br.r,
		Pattern: br.pattern, Body: body}
	c.W = c.Writer(&br.w).WithWriteTimeout(config.DefaultWriteTimeout) // as Server.writer
	return c
}

// copyCall is a fresh copy of base, as a stage finds the call. The
// contexts a Call holds were not started on base (the stages that start
// them come later), so their locks are copied unheld; the builtin copy
// says so without vet's warning about copying a lock.
func copyCall(base *Call) *Call {
	c := new(Call)
	copy(unsafe.Slice(c, 1), unsafe.Slice(base, 1))
	return c
}

// upTo runs the stages before name on c.
func (g *benchGateway) upTo(b *testing.B, c *Call, name string) {
	for _, s := range g.chain.all.stages {
		if s.Name() == name {
			return
		}
		if err := s.Serve(context.Background(), c); err != nil {
			b.Fatalf("%s: %v", s.Name(), err)
		}
	}
}

// BenchmarkStage times each stage alone on a call the stages before it
// prepared (a fresh copy per iteration, so nothing a stage sets carries
// over). precharge places a hold per iteration and log settles one.
func BenchmarkStage(b *testing.B) {
	g := newBenchGateway(b)
	ctx := context.Background()
	for _, name := range DefaultOrder {
		b.Run(name, func(b *testing.B) {
			base := g.call(protocol.OpenAIChat, "/v1/chat/completions", benchChatBody)
			g.upTo(b, base, name)
			s := g.stages[name]
			b.ReportAllocs()
			for b.Loop() {
				c := copyCall(base)
				c.deferred = nil
				if name == "precharge" || name == "log" {
					c.ID = g.ids.id()
				}
				if name == "log" {
					if err := g.stages["precharge"].Serve(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Serve(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChain is the whole chain per call: non-streaming, a 20-chunk
// stream, and a messages-style call translated to completions, whole and
// streamed (stream-20's upstream answer).
func BenchmarkChain(b *testing.B) {
	g := newBenchGateway(b)
	for _, tc := range []struct {
		name string
		p    protocol.ID
		path string
		body []byte
	}{
		{"completions", protocol.OpenAIChat, "/v1/chat/completions", benchChatBody},
		{"stream-20", protocol.OpenAIChat, "/v1/chat/completions", benchStreamBody},
		{"messages-translated", protocol.AnthropicMessages, "/v1/messages", benchMessagesBody},
		{"messages-stream-translated", protocol.AnthropicMessages, "/v1/messages", benchMessagesStreamBody},
	} {
		b.Run(tc.name, func(b *testing.B) {
			br := g.request(tc.path, tc.body)
			defer br.cancel()
			b.ReportAllocs()
			for b.Loop() {
				c := g.callOn(br, tc.p, tc.body)
				g.chain.Run(br.r.Context(), c)
				if c.Err != nil || c.Row == nil {
					b.Fatalf("call failed: %v", c.Err)
				}
			}
			br.w.report(b)
		})
	}
}

// BenchmarkRelay is the SSE relay alone: 23 upstream events to the
// client, as one batch (one flush) or one by one, native or translated.
func BenchmarkRelay(b *testing.B) {
	g := newBenchGateway(b)
	evs := benchEvents()
	for _, tc := range []struct {
		name  string
		p     protocol.ID
		path  string
		body  []byte
		batch bool
	}{
		{"native/batch", protocol.OpenAIChat, "/v1/chat/completions", benchStreamBody, true},
		{"native/one-by-one", protocol.OpenAIChat, "/v1/chat/completions", benchStreamBody, false},
		{"to-messages/batch", protocol.AnthropicMessages, "/v1/messages", []byte(`{"model":"m","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"hi"}]}`), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			base := g.call(tc.p, tc.path, tc.body)
			g.upTo(b, base, "dispatch")
			if err := base.Route.prepare(base, base.Route.Candidates[0]); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				rl := newRelay(copyCall(base), nil, FlushWait)
				if err := rl.Head(vendor.Head{Status: 200}); err != nil {
					b.Fatal(err)
				}
				var err error
				if tc.batch {
					err = rl.Events(evs)
				} else {
					for _, e := range evs {
						if err = rl.Event(e); err != nil {
							break
						}
					}
				}
				rl.hold.quiet() // as dispatch does once the upstream call returns
				if err != nil || !rl.track.Complete() {
					b.Fatalf("relay: %v, complete %v", err, rl.track.Complete())
				}
			}
		})
	}
}
