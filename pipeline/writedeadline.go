package pipeline

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A client that stops reading blocks the gateway's writes to it once the
// connection's buffers are full; nothing else would ever end such a call.
// Two deadlines bound it: the write timeout (server { write_timeout }), a
// deadline on the connection moved forward as bytes go out, so a write
// blocked that long fails; and the call's own deadline, which ends a
// write blocked when the call's time is up (Bound): the call, its hold
// and its upstream stream end then, not later.

// bigWrite is the size from which a lone Write moves the deadline itself;
// smaller writes are followed by a Flush, which does.
const bigWrite = 64 << 10

// writeDeadline is the write deadline of one response.
type writeDeadline struct {
	rc      http.ResponseController
	timeout time.Duration

	set     atomic.Int64 // when the deadline was last moved, unix nanoseconds
	mu      sync.Mutex
	aborted bool // the call's time is up: writes fail at once
	bound   bool // Bound's watch is on: its end may abort the writes
	// unwatch ends Bound's watch; only the goroutine that called Bound
	// touches it.
	unwatch func() bool
}

// WithWriteTimeout sets the write timeout (0: none) and returns w. The
// deadline lives in w: no allocation of its own.
func (w *ResponseWriter) WithWriteTimeout(d time.Duration) *ResponseWriter {
	if d > 0 {
		w.dl.rc, w.dl.timeout = *http.NewResponseController(w.ResponseWriter), d
		w.deadline = &w.dl
	}
	return w
}

// refresh moves the deadline to now plus the timeout, at most four times
// per timeout: a write blocked for the timeout fails within a quarter of it
// more.
func (d *writeDeadline) refresh(now time.Time) {
	if d == nil || time.Duration(now.UnixNano()-d.set.Load()) < d.timeout/4 {
		return
	}
	d.mu.Lock()
	if !d.aborted {
		d.set.Store(now.UnixNano())
		_ = d.rc.SetWriteDeadline(now.Add(d.timeout))
	}
	d.mu.Unlock()
}

// Bound makes a write blocked when ctx ends fail at once, until Unbind,
// so the answer of a call that timed out (a 504) can still be written.
// Without a write timeout it does nothing. A call's own deadline aborts
// the writes itself; another context is watched with AfterFunc.
func (w *ResponseWriter) Bound(ctx context.Context) {
	if w == nil || w.deadline == nil {
		return
	}
	d := w.deadline
	d.mu.Lock()
	d.bound = true
	d.mu.Unlock()
	if cd, ok := ctx.(*callDeadline); ok {
		if !cd.bind(d) {
			d.abort() // it has ended already
		}
		return
	}
	d.unwatch = context.AfterFunc(ctx, d.abort)
}

// abort fails the writes at once, unless Unbind came first.
func (d *writeDeadline) abort() {
	d.mu.Lock()
	if d.bound {
		d.aborted = true
		_ = d.rc.SetWriteDeadline(time.Now())
	}
	d.mu.Unlock()
}

// Unbind undoes Bound once the writes it bounded are over; it may be
// called again. An abort that already started finds the writes unbound
// (both hold mu), so it cannot fail a write made after Unbind.
func (w *ResponseWriter) Unbind() {
	if w == nil || w.deadline == nil {
		return
	}
	d := w.deadline
	if d.unwatch != nil {
		d.unwatch()
		d.unwatch = nil
	}
	d.mu.Lock()
	d.bound = false
	if d.aborted {
		now := time.Now()
		d.aborted = false
		d.set.Store(now.UnixNano())
		_ = d.rc.SetWriteDeadline(now.Add(d.timeout))
	}
	d.mu.Unlock()
}

// last gives what the server still writes once the chain is done (the
// rest of a buffered answer) a whole timeout; the next request on the
// connection starts without a deadline (the server lifts it).
func (d *writeDeadline) last() {
	if d != nil {
		d.mu.Lock()
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
		d.mu.Unlock()
	}
}
