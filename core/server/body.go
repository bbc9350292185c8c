package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
)

// A request body is read only once the key on its headers is known (the
// auth stage calls Call.ReadBody), within the body timeout, and a body
// larger than the route allows is refused by its Content-Length before a
// byte of it is read. Bodies beyond largeBody draw on one budget shared by
// every call in flight, so a few slow uploads cannot hold the gateway's
// memory (docs/operations.md, Timeouts and size caps).

// largeBody is the size from which a body draws on the budget; smaller
// ones (nearly every chat call) never touch it.
const largeBody = 1 << 20

// Bodies is the budget of bytes that request bodies beyond largeBody may
// hold at once, across the gateway (server { max_body_memory }).
type Bodies struct {
	limit int64
	used  atomic.Int64
	mu    sync.Mutex        // orders the calls of watch
	watch func(inUse int64) // nil: nobody follows the bytes held
}

// NewBodies returns a budget of limit bytes.
func NewBodies(limit int64) *Bodies { return &Bodies{limit: limit} }

// take reserves n bytes, or reports that they do not fit. A body larger
// than the whole budget is let through when it is alone, so that a
// budget below a route's cap slows such bodies down but never refuses
// them all.
func (b *Bodies) take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	if u := b.used.Add(n); u > b.limit && u != n {
		b.used.Add(-n)
		return false
	}
	b.changed()
	return true
}

func (b *Bodies) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
		b.changed()
	}
}

// Watch has f called with the bytes held after each change, the calls in
// the order of the changes (the gateway's memory limit follows them). Set
// it before the first body.
func (b *Bodies) Watch(f func(inUse int64)) { b.watch = f }

func (b *Bodies) changed() {
	if b.watch == nil {
		return
	}
	b.mu.Lock()
	b.watch(b.used.Load())
	b.mu.Unlock()
}

// InUse is the bytes reserved now (tests, metrics).
func (b *Bodies) InUse() int64 { return b.used.Load() }

// body reads one request's body for the chain.
type body struct {
	w       http.ResponseWriter
	r       *http.Request
	limit   int64
	bodies  *Bodies
	timeout time.Duration
	held    int64 // budget reserved for it
}

// tooLarge is the 413 of a body over limit bytes.
func tooLarge(limit int64) *apierr.Error {
	e := apierr.Newf(apierr.InvalidRequest, "request body is larger than %s", sizeText(limit))
	e.Status = http.StatusRequestEntityTooLarge
	return e
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// precheck refuses by Content-Length, before anything is read.
func (b *body) precheck() *apierr.Error {
	if b.r.ContentLength > b.limit {
		return tooLarge(b.limit)
	}
	return nil
}

// busy is the refusal of a body the budget cannot take now.
func (b *body) busy() *apierr.Error {
	e := apierr.Newf(apierr.RateLimitExceeded, "the gateway is holding as many large request bodies as it may (%s); retry in a moment",
		sizeText(b.bodies.limit))
	return e.WithHeader("Retry-After", "1")
}

// Read reads the whole body, within the body timeout (timedBody) and the
// budget.
func (b *body) Read() ([]byte, error) {
	rd := http.MaxBytesReader(b.w, b.r.Body, b.limit)
	var buf []byte
	if n := b.r.ContentLength; n > 0 {
		if n > largeBody {
			if !b.bodies.take(n) {
				return nil, b.busy()
			}
			b.held = n
		}
		buf = make([]byte, 0, n+1) // the extra byte reads the EOF without growing
	}
	for {
		if len(buf) == cap(buf) {
			if next := int64(cap(buf)) * 2; next > largeBody && next > b.held {
				// A body of unknown length grows its reservation as it comes.
				grow := min(next, b.limit) - b.held
				if !b.bodies.take(grow) {
					return nil, b.busy()
				}
				b.held += grow
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, readError(err, b.limit, b.r.ContentLength, b.timeout)
		}
	}
}

func readError(err error, limit, length int64, timeout time.Duration) *apierr.Error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		e := apierr.Newf(apierr.InvalidRequest, "the request body did not arrive within %s", bodyDeadline(timeout, length).Round(time.Second))
		e.Status = http.StatusRequestTimeout
		return e
	}
	return apierr.New(apierr.InvalidRequest, "could not read the request body")
}

// done gives back the body's share of the budget.
func (b *body) done() { b.bodies.give(b.held) }

// timedBody is a request body read within a deadline armed by its first
// read (once the handler wants it, after the key was checked) and lifted
// at its end, which would otherwise bound the response too. The deadline
// is the body timeout, plus a second for each minBodyRate bytes of the
// length the body declares: a large upload on a slow link arrives, a
// trickle does not.
type timedBody struct {
	io.ReadCloser
	rc      http.ResponseController
	timeout time.Duration
	started bool
}

// minBodyRate is the slowest a declared body may arrive beyond the body
// timeout, in bytes a second.
const minBodyRate = 512 << 10

// bodyDeadline is how long a body of length bytes (-1: unknown) may take.
func bodyDeadline(timeout time.Duration, length int64) time.Duration {
	if length > 0 {
		timeout += time.Duration(length) * time.Second / minBodyRate
	}
	return timeout
}

func (t *timedBody) Read(p []byte) (int, error) {
	if !t.started {
		t.started = true
		if t.timeout > 0 {
			_ = t.rc.SetReadDeadline(time.Now().Add(t.timeout))
		}
	}
	n, err := t.ReadCloser.Read(p)
	if err == io.EOF {
		_ = t.rc.SetReadDeadline(time.Time{})
	}
	// On another error the deadline stays: the rest is not waited for.
	return n, err
}

// A body never read (its key was refused on the headers, or its length
// was) must never be parsed as the next request on its connection: a
// body carrying one would have it served (a desync; request smuggling
// behind a proxy that shares connections). Whether the connection is kept
// is settled before the answer's head is written, when a Connection
// header still counts: a body of at most keepBytes that arrives within
// keepTime is read away first and the connection kept; any other (larger,
// chunked, slower) gets "Connection: close", and after the answer what it
// still sends is read away, unkept, for at most drainTime (the body
// timeout when shorter) and drainBytes, so that a client that writes its
// whole body before it reads sees the refusal rather than a reset
// connection, and a client that stalls is let go.
const (
	keepBytes  = 256 << 10 // Go's own bound for a body read away before an answer
	keepTime   = 250 * time.Millisecond
	drainTime  = 5 * time.Second
	drainBytes = 256 << 20
)

// bodyGuard is the writer of a request with a body: it settles the
// connection's fate at the answer's head when the body was never read.
// A body the handler did read is Go's to settle: it reads what is left
// before the head, bounded by the timedBody's deadline, and closes the
// connection when that fails.
type bodyGuard struct {
	http.ResponseWriter
	body    timedBody
	length  int64
	expect  bool // the client waits for 100 Continue: it sends no body after a refusal
	drain   time.Duration
	settled bool
	closing bool // the answer says Connection: close; end reads the body away after it
}

// guardBody wraps r's body in a timedBody and w in its bodyGuard; the
// returned end, called once the request is answered, sends the answer of
// a body never read and reads that body away.
func guardBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) (http.ResponseWriter, func()) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return w, func() {}
	}
	g := &bodyGuard{ResponseWriter: w, length: r.ContentLength, drain: drainTime,
		expect: strings.EqualFold(r.Header.Get("Expect"), "100-continue")}
	g.body = timedBody{ReadCloser: r.Body, rc: *http.NewResponseController(w), timeout: bodyDeadline(timeout, r.ContentLength)}
	if timeout > 0 {
		g.drain = min(g.drain, timeout)
	}
	r.Body = &g.body
	return g, g.end
}

func (g *bodyGuard) WriteHeader(code int) {
	if code >= http.StatusOK {
		g.settle()
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *bodyGuard) Write(p []byte) (int, error) {
	g.settle()
	return g.ResponseWriter.Write(p)
}

func (g *bodyGuard) Flush() {
	g.settle()
	_ = g.body.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (g *bodyGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// settle decides, before the answer's head, whether the connection of a
// body never read is kept.
func (g *bodyGuard) settle() {
	if g.settled {
		return
	}
	g.settled = true
	t := &g.body
	if t.started {
		return
	}
	if g.length > 0 && g.length <= keepBytes && !g.expect {
		_ = t.rc.SetReadDeadline(time.Now().Add(keepTime))
		if _, err := io.Copy(io.Discard, t.ReadCloser); err == nil {
			_ = t.rc.SetReadDeadline(time.Time{})
			return
		}
	}
	g.Header().Set("Connection", "close")
	_ = t.rc.EnableFullDuplex() // the body is read after the answer, not before
	g.closing = true
}

func (g *bodyGuard) end() {
	g.settle() // the handler wrote nothing
	if !g.closing {
		return
	}
	t := &g.body
	if !g.expect {
		_ = t.rc.Flush()
		_ = t.rc.SetReadDeadline(time.Now().Add(g.drain))
		_, _ = io.CopyN(io.Discard, t.ReadCloser, drainBytes)
	}
	_ = t.rc.SetReadDeadline(time.Now()) // the rest is not waited for: the connection closes
}
