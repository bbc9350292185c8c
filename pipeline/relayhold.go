package pipeline

import (
	"net/http"
	"sync"
	"time"
)

// FlushWait is how long a stream's relay keeps a complete stream's last
// batch (its terminator, and the finish and usage chunks that came with
// it) unflushed, waiting for the upstream call to return: the upstream
// ends its answer right after the terminator, and the batch then goes out
// with the response's end, after the settlement, in one write to the
// client's socket instead of two. An upstream that lingers longer gets
// the batch flushed by a timer: it delays the terminator by no more.
const FlushWait = 2 * time.Millisecond

// relayHold is what a relay holds unflushed and the timer that flushes it
// after FlushWait. The timer runs on its own goroutine, so the relay
// stops it (quiet) before it writes again; until then the relay does not
// touch the writer.
type relayHold struct {
	wait  time.Duration
	w     http.Flusher
	timer *time.Timer
	fire  func() // h.flushLate, bound once
	armed bool   // the relay's side: the timer may run

	mu   sync.Mutex
	held bool      // written and not flushed
	due  time.Time // when the timer may flush what is held
	open bool      // the timer may flush (cleared by quiet)
}

// hold marks what was written as held and arms the timer.
func (h *relayHold) hold() {
	h.mu.Lock()
	h.held, h.open, h.due = true, true, time.Now().Add(h.wait)
	h.mu.Unlock()
	h.armed = true
	if h.timer == nil {
		h.fire = h.flushLate
		h.timer = time.AfterFunc(h.wait, h.fire)
		return
	}
	h.timer.Reset(h.wait)
}

// flushLate is the timer's: it flushes what is still held, unless the
// relay took the writer back first. A run left over from an earlier hold
// (Stop came too late for it) finds its time not due and leaves the
// current hold to its own run.
func (h *relayHold) flushLate() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open && h.held && !time.Now().Before(h.due) {
		h.held, h.open = false, false
		h.w.Flush()
	}
}

// quiet takes the writer back from the timer: once it returns, the timer
// writes nothing until the next hold. Whether it flushed what was held
// does not matter to the relay: held bytes go out in order either way.
func (h *relayHold) quiet() {
	if !h.armed {
		return
	}
	h.armed = false
	h.timer.Stop()
	h.mu.Lock()
	h.open = false
	h.mu.Unlock()
}
