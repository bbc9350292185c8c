package pipeline

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// deadlineWriter records the write deadlines set on it.
type deadlineWriter struct {
	discardWriter
	mu  sync.Mutex
	got []time.Time
	set chan time.Time
}

func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.got = append(w.got, t)
	w.mu.Unlock()
	if w.set != nil {
		w.set <- t
	}
	return nil
}

// A call's end fails a blocked write at once; Unbind gives the writes
// after it (a 504's body) a whole timeout again.
func TestBoundAbortsWritesWhenTheCallEnds(t *testing.T) {
	under := &deadlineWriter{discardWriter: discardWriter{h: http.Header{}}, set: make(chan time.Time, 4)}
	w := NewResponseWriter(under).WithWriteTimeout(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	w.Bound(ctx)
	before := time.Now()
	cancel()
	select {
	case at := <-under.set:
		if at.After(time.Now()) {
			t.Fatalf("the call ended but the write deadline %v is still ahead", at)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call ended and the writes were not aborted")
	}
	w.Unbind()
	if at := <-under.set; !at.After(before.Add(30 * time.Second)) {
		t.Fatalf("after Unbind the deadline is %v, want a whole timeout ahead", at)
	}
	w.Unbind() // again: nothing
	if len(under.set) != 0 {
		t.Fatal("a second Unbind moved the deadline")
	}
}

// After Unbind, the end of the call no longer touches the writes, even
// when both race.
func TestUnbindEndsTheWatch(t *testing.T) {
	under := &deadlineWriter{discardWriter: discardWriter{h: http.Header{}}}
	w := NewResponseWriter(under).WithWriteTimeout(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	w.Bound(ctx)
	w.Unbind()
	cancel()
	if n := len(under.got); n != 0 {
		t.Fatalf("the deadline moved %d times after Unbind", n)
	}
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		w.Bound(ctx)
		go cancel()
		w.Unbind()
		w.dl.mu.Lock()
		aborted, bound := w.dl.aborted, w.dl.bound
		w.dl.mu.Unlock()
		if aborted || bound {
			t.Fatalf("after Unbind: aborted %v, bound %v", aborted, bound)
		}
	}
}
