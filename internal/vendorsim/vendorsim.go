// Package vendorsim serves the sim engine behind the vendors' real HTTP
// APIs (OpenAI chat completions, responses, images, speech and videos,
// Anthropic messages, Gemini generateContent, a Suno-style music task API,
// ElevenLabs' voices and text to speech, Tavily's search), with their
// paths, auth headers, error bodies, state vocabularies and SSE framing, so
// the real vendor plugins can be tested against exact wire formats and
// benchmarked against a fast upstream.
package vendorsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Request is what one call carried, as the Record hook sees it.
type Request struct {
	Method   string
	Path     string // escaped path, as sent
	RawQuery string
	Header   http.Header
	Body     []byte
}

// Options configure a Server.
type Options struct {
	// APIKey is the key every call must carry; "" accepts any non-empty key.
	APIKey string
	// Record, when set, is called with a copy of each request before it is
	// answered. It may be called concurrently.
	Record func(Request)
	// Knobs are the default behaviour, as a sim channel's settings; markers
	// in a prompt override them.
	Knobs sim.Knobs
	// MaxBody bounds a request body; 0 means 64 MB.
	MaxBody int64
	// Leak makes errors name the server's base URL, its host:port and the
	// key the call carried, as a careless upstream or proxy does (the
	// gateway must mask them, PRODUCT.md §7): the message of an error
	// status, and a stream cut by [sim:cut=N] ends with the vendor's
	// in-stream error event (then a clean close) instead of a dropped
	// connection.
	Leak bool
}

// Server answers the vendors' chat APIs with the sim engine.
type Server struct {
	opts   Options
	engine *sim.Engine
	bufs   sync.Pool // *bytes.Buffer for request bodies
	jobs   jobTable  // the task APIs' jobs (media.go)
	voices voiceTable

	mu  sync.Mutex
	srv *http.Server
	ln  net.Listener

	syncso syncJobs // the sync.so-style generations (syncso.go)
}

// New returns a server; serve it with Handler (httptest) or Start.
func New(opts Options) *Server {
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 20
	}
	return &Server{opts: opts, engine: sim.NewEngine()}
}

// Handler is the HTTP handler of all four APIs.
func (s *Server) Handler() http.Handler { return s }

// Start listens on addr (host:port; port 0 picks one) and serves in the
// background until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	s.mu.Lock()
	s.srv, s.ln = srv, ln
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// Addr is the address Start listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the base URL of a started server, the vendor root without /v1.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Shutdown stops a started server, letting calls in flight finish until
// ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// Close stops a started server at once.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// route is what a path asks for.
type route struct {
	p      protocol.ID
	op     string
	model  string // gemini: from the path
	stream int    // gemini: 0 no, 1 SSE, 2 JSON array; others: read from the body
}

func parseRoute(r *http.Request) (route, bool) {
	path := r.URL.Path
	switch path {
	case "/v1/chat/completions":
		return route{p: protocol.OpenAIChat}, true
	case "/v1/responses":
		return route{p: protocol.OpenAIResponses}, true
	case "/v1/messages":
		return route{p: protocol.AnthropicMessages}, true
	case "/v1/messages/count_tokens":
		return route{p: protocol.AnthropicMessages, op: vendor.OpCountTokens}, true
	}
	for _, prefix := range [...]string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return route{p: protocol.GeminiNative}, false
		}
		rt := route{p: protocol.GeminiNative, model: rest[:i]}
		switch rest[i+1:] {
		case "generateContent":
			return rt, true
		case "streamGenerateContent":
			rt.stream = 2
			if r.URL.Query().Get("alt") == "sse" {
				rt.stream = 1
			}
			return rt, true
		}
		return rt, false
	}
	if strings.HasPrefix(path, "/v1beta/") {
		return route{p: protocol.GeminiNative}, false
	}
	return route{p: protocol.OpenAIChat}, false
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveMedia(w, r) { // media.go
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/images/") || strings.HasPrefix(r.URL.Path, "/sim-files/") {
		s.serveImages(w, r) // images.go
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v2/generate") || strings.HasPrefix(r.URL.Path, "/sync-files/") {
		s.serveSync(w, r) // syncso.go
		return
	}
	rt, ok := parseRoute(r)
	if !ok {
		writeError(w, rt.p, http.StatusNotFound, "", "Unknown request URL: "+r.Method+" "+r.URL.Path+".")
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, rt.p, http.StatusMethodNotAllowed, "", "Method "+r.Method+" is not allowed on "+r.URL.Path+".")
		return
	}
	buf := s.getBuf()
	defer s.putBuf(buf)
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, s.opts.MaxBody+1)); err != nil {
		return // the client went away mid-body
	}
	if int64(buf.Len()) > s.opts.MaxBody {
		writeError(w, rt.p, http.StatusRequestEntityTooLarge, "", "The request body is too large.")
		return
	}
	body := buf.Bytes()
	if s.opts.Record != nil {
		s.opts.Record(Request{
			Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: bytes.Clone(body),
		})
	}
	if !s.authorized(w, r, rt.p) {
		return
	}
	call := sim.Call{Protocol: string(rt.p), Model: rt.model, Body: body, Operation: rt.op, Knobs: s.opts.Knobs, ReuseEventData: true}
	stream := rt.stream != 0
	if rt.p != protocol.GeminiNative && rt.op == "" {
		stream = gjson.GetBytes(body, "stream").Bool()
	}
	if !stream {
		s.chat(w, r, &call, rt.p)
		return
	}
	sk := sinkPool.Get().(*sseSink)
	*sk = sseSink{w: w, array: rt.stream == 2, line: sk.line[:0]}
	sk.f, _ = w.(http.Flusher)
	if s.opts.Leak {
		sk.p, sk.leak = rt.p, leakMessage(r)
	}
	err := s.engine.Stream(r.Context(), &call, sk)
	if err == nil && sk.array && sk.n > 0 {
		_, err = w.Write([]byte{']'})
	}
	if s.opts.Leak && !sk.array && sk.n > 0 && isBroken(err) {
		err = sk.Event(streamError(rt.p, sk.n, sk.leak))
	}
	sk.w, sk.f = nil, nil
	sinkPool.Put(sk)
	abortOn(err)
}

// abortOn drops the connection when the engine broke the answer, so the
// client sees a truncated body, as from a failing upstream.
func abortOn(err error) {
	if isBroken(err) {
		panic(http.ErrAbortHandler)
	}
}

func isBroken(err error) bool {
	var f *vendor.Failure
	return errors.As(err, &f) && f.Kind == vendor.FailureBroken
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, call *sim.Call, p protocol.ID) {
	resp, err := s.engine.Chat(r.Context(), call)
	if err != nil {
		var f *vendor.Failure
		if errors.As(err, &f) && f.Kind == vendor.FailureBroken {
			// Promise a body, send a piece of it, and drop the connection.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"id":"`))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			panic(http.ErrAbortHandler)
		}
		return // cancelled: the client is gone
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h[http.CanonicalHeaderKey(k)] = []string{v}
	}
	body := resp.Body
	if s.opts.Leak && resp.Status >= 400 {
		body = sim.ErrorBody(p, resp.Status, "", leakMessage(r))
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(body)
}

func (s *Server) getBuf() *bytes.Buffer {
	if b, ok := s.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return bytes.NewBuffer(make([]byte, 0, 4096))
}

func (s *Server) putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		s.bufs.Put(b)
	}
}

var sinkPool = sync.Pool{New: func() any { return &sseSink{line: make([]byte, 0, 1024)} }}

// sseSink writes engine events as SSE (or, for Gemini without alt=sse,
// as the elements of one JSON array), flushing each.
type sseSink struct {
	w     http.ResponseWriter
	f     http.Flusher
	array bool
	n     int
	line  []byte
	p     protocol.ID
	leak  string // Options.Leak: the message error answers carry
}

func (k *sseSink) Head(h vendor.Head) error {
	hd := k.w.Header()
	if h.Status != http.StatusOK {
		for name, v := range h.Headers {
			hd[http.CanonicalHeaderKey(name)] = []string{v}
		}
		body := h.Body
		if k.leak != "" {
			body = sim.ErrorBody(k.p, h.Status, "", k.leak)
		}
		k.w.WriteHeader(h.Status)
		_, err := k.w.Write(body)
		return err
	}
	if k.array {
		hd.Set("Content-Type", "application/json; charset=UTF-8")
	} else {
		hd.Set("Content-Type", "text/event-stream")
		hd.Set("Cache-Control", "no-cache")
	}
	k.w.WriteHeader(http.StatusOK)
	if k.f != nil {
		k.f.Flush()
	}
	return nil
}

func (k *sseSink) Event(e vendor.Event) error {
	b := k.line[:0]
	if k.array {
		if k.n == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ",\r\n"...)
		}
		b = append(b, e.Data...)
	} else {
		b = sse.AppendEvent(b, protocol.Event{Name: e.Name, Data: e.Data})
	}
	k.line = b
	k.n++
	if _, err := k.w.Write(b); err != nil {
		return err
	}
	if k.f != nil {
		k.f.Flush()
	}
	return nil
}
