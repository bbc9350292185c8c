package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
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
}

// NewBodies returns a budget of limit bytes.
func NewBodies(limit int64) *Bodies { return &Bodies{limit: limit} }

// take reserves n bytes, or reports that they do not fit.
func (b *Bodies) take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Bodies) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
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
	read    bool  // a read was tried
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

// Read reads the whole body, within the body timeout and the budget.
func (b *body) Read() ([]byte, error) {
	b.read = true
	rc := http.NewResponseController(b.w)
	if b.timeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(b.timeout))
	}
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
			// The deadline would also bound the response: lift it.
			_ = rc.SetReadDeadline(time.Time{})
			return buf, nil
		}
		if err != nil {
			// The deadline stays: what is left of the body is not waited for.
			return nil, readError(err, b.limit, b.timeout)
		}
	}
}

func readError(err error, limit int64, timeout time.Duration) *apierr.Error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		e := apierr.Newf(apierr.InvalidRequest, "the request body did not arrive within %s", timeout)
		e.Status = http.StatusRequestTimeout
		return e
	}
	return apierr.New(apierr.InvalidRequest, "could not read the request body")
}

// done ends the call's hold on its body: the budget is given back, and a
// body never read (the key was refused on the headers) is not waited for
// either: the connection closes after the answer.
func (b *body) done() {
	b.bodies.give(b.held)
	if !b.read && b.r.ContentLength != 0 {
		b.w.Header().Set("Connection", "close")
		_ = http.NewResponseController(b.w).SetReadDeadline(time.Now())
	}
}
