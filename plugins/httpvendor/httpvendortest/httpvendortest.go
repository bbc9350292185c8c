// Package httpvendortest has the test doubles the vendor plugin tests share:
// an upstream HTTP server that records what reached it, and a recording
// vendor.Sink. The upstream is a real server on loopback, so the plugin's
// whole HTTP path runs.
package httpvendortest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Request is what one upstream call carried.
type Request struct {
	Method   string
	Path     string // escaped path, as sent
	RawQuery string
	Header   http.Header
	Body     []byte
}

// Upstream is a loopback HTTP server that records each request, then
// answers with its handler.
type Upstream struct {
	*httptest.Server
	mu       sync.Mutex
	reqs     []Request
	newConns atomic.Int64
}

// NewUpstream starts an upstream answering with h; it closes with the test.
func NewUpstream(t testing.TB, h http.HandlerFunc) *Upstream {
	u := &Upstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, Request{
			Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body,
		})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	u.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.newConns.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// Requests returns the requests so far.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.reqs...)
}

// Last returns the latest request; the test fails when there is none.
func (u *Upstream) Last(t testing.TB) Request {
	t.Helper()
	rs := u.Requests()
	if len(rs) == 0 {
		t.Fatal("the upstream got no request")
	}
	return rs[len(rs)-1]
}

// NewConns counts the TCP connections the upstream accepted.
func (u *Upstream) NewConns() int64 { return u.newConns.Load() }

// Reply answers with status, body and header pairs (name, value, ...).
func Reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Add(header[i], header[i+1])
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Stream answers 200 text/event-stream and writes each raw chunk (already
// framed, "data: ...\n\n") with a flush after each.
func Stream(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for _, c := range chunks {
			_, _ = io.WriteString(w, c)
			f.Flush()
		}
	}
}

// Sink records a stream. When StopAfter > 0 it refuses the event after
// that many with ErrStop.
type Sink struct {
	mu        sync.Mutex
	Heads     []vendor.Head
	Events    []vendor.Event
	StopAfter int
	// OnEvent, if set, runs after each recorded event.
	OnEvent func(n int)
}

// ErrStop is what a Sink with StopAfter returns.
var ErrStop = io.ErrClosedPipe

// Head records h.
func (s *Sink) Head(h vendor.Head) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Heads = append(s.Heads, h)
	return nil
}

// Event records ev, or refuses it past StopAfter.
func (s *Sink) Event(ev vendor.Event) error {
	s.mu.Lock()
	if s.StopAfter > 0 && len(s.Events) >= s.StopAfter {
		s.mu.Unlock()
		return ErrStop
	}
	s.Events = append(s.Events, ev)
	n := len(s.Events)
	s.mu.Unlock()
	if s.OnEvent != nil {
		s.OnEvent(n)
	}
	return nil
}

// Kind returns the failure kind of err, or -1 when err is not a *vendor.Failure.
func Kind(err error) vendor.FailureKind {
	var f *vendor.Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return -1
}

// ClientHeaders are headers a client of the gateway sends (its own key,
// version pins, SDK and session headers). A plugin given them in
// ChatRequest.Headers must not pass any of them on, except what its vendor
// needs (anthropic-beta to Anthropic).
func ClientHeaders() map[string]string {
	return map[string]string{
		"authorization":            "Bearer sk-tollgate-client",
		"x-api-key":                "sk-tollgate-client",
		"x-goog-api-key":           "sk-tollgate-client",
		"x-tollgate-api-key":       "sk-tollgate-client",
		"anthropic-version":        "2099-01-01",
		"anthropic-beta":           "prompt-caching-2024-07-31",
		"user-agent":               "claude-cli/2.0 (external, cli)",
		"x-stainless-os":           "Linux",
		"session_id":               "sess-1",
		"x-claude-code-session-id": "sess-2",
		"openai-organization":      "org-client",
		"cookie":                   "a=b",
		"x-request-id":             "client-req",
	}
}

// NoClientHeaders fails when h carries a client header value, other than
// the names in allowed.
func NoClientHeaders(t testing.TB, h http.Header, allowed ...string) {
	t.Helper()
	for name, val := range ClientHeaders() {
		if slices.Contains(allowed, name) {
			continue
		}
		for _, got := range h.Values(name) {
			if got == val || strings.Contains(got, "tollgate-client") || strings.Contains(got, "claude-cli") {
				t.Errorf("client header %s: %q reached the upstream", name, got)
			}
		}
	}
}

// Configure configures v with the one channel ch, failing the test on error.
func Configure(t testing.TB, v vendor.Vendor, ch vendor.Channel) {
	t.Helper()
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{ch}}); err != nil {
		t.Fatal(err)
	}
}
