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
	rc      *http.ResponseController
	timeout time.Duration

	set     atomic.Int64 // when the deadline was last moved, unix nanoseconds
	mu      sync.Mutex
	aborted bool // the call's time is up: writes fail at once
}

// WithWriteTimeout sets the write timeout (0: none) and returns w.
func (w *ResponseWriter) WithWriteTimeout(d time.Duration) *ResponseWriter {
	if d > 0 {
		w.deadline = &writeDeadline{rc: http.NewResponseController(w.ResponseWriter), timeout: d}
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

// Bound makes a write blocked when ctx ends fail at once; the returned
// stop (which may be called again) undoes it, so the answer of a call
// that timed out (a 504) can still be written. Without a write timeout it
// does nothing.
func (w *ResponseWriter) Bound(ctx context.Context) (stop func()) {
	if w == nil || w.deadline == nil {
		return func() {}
	}
	d := w.deadline
	done := make(chan struct{})
	abort := context.AfterFunc(ctx, func() {
		defer close(done)
		d.mu.Lock()
		d.aborted = true
		_ = d.rc.SetWriteDeadline(time.Now())
		d.mu.Unlock()
	})
	var once sync.Once
	return func() { once.Do(func() { d.resume(abort, done) }) }
}

// resume undoes Bound once the writes it bounded are over.
func (d *writeDeadline) resume(abort func() bool, done <-chan struct{}) {
	if !abort() {
		<-done
	}
	d.mu.Lock()
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
