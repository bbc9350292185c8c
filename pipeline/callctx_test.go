package pipeline

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

type ctxKey struct{}

// ended waits (bounded) for ctx to end.
func ended(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end")
	}
}

// The call's deadline keeps context.WithTimeout's semantics: Deadline,
// Done, Err, Cause, Value, children and AfterFunc. fire stands for the
// timer firing.
func TestCallDeadlineIsWithTimeout(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	var d callDeadline
	before := time.Now()
	ctx := d.start(parent, time.Hour)
	defer d.cancel()
	if dl, ok := ctx.Deadline(); !ok || dl.Before(before.Add(time.Hour)) || dl.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Deadline = %v, %v; want an hour from now", dl, ok)
	}
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
	done := ctx.Done()
	if ctx.Err() != nil || context.Cause(ctx) != nil {
		t.Fatalf("Err %v, Cause %v before the end", ctx.Err(), context.Cause(ctx))
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	shorter, cancelShorter := context.WithTimeout(ctx, time.Minute)
	defer cancelShorter()
	if dl, _ := shorter.Deadline(); dl.After(time.Now().Add(time.Minute)) {
		t.Fatalf("a shorter child's deadline is %v", dl)
	}
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	stopped := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
	if !stopped() {
		t.Fatal("stopping an AfterFunc before the end failed")
	}

	d.fire()
	select {
	case <-done:
	default:
		t.Fatal("Done is not closed at the deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("Err %v, Cause %v; want the deadline exceeded", ctx.Err(), context.Cause(ctx))
	}
	for _, c := range []context.Context{child, shorter} {
		ended(t, c)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("a child ended with %v", c.Err())
		}
	}
	ended(t, ctxOf(ran))
	// After the end: a new AfterFunc runs at once, a new child is done.
	late := make(chan struct{})
	context.AfterFunc(ctx, func() { close(late) })
	ended(t, ctxOf(late))
	lateChild, cancelLate := context.WithCancel(ctx)
	defer cancelLate()
	ended(t, lateChild)
	d.cancel() // after the end: nothing changes
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("cancel after the deadline changed Err to %v", ctx.Err())
	}
}

// ctxOf is a context that ends when ch is closed.
func ctxOf(ch chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-ch; cancel() }()
	return ctx
}

// The parent's end is the call's: a client that hangs up cancels the
// call, and a parent ending sooner lends its deadline.
func TestCallDeadlineEndsWithItsParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	var d callDeadline
	ctx := d.start(parent, time.Hour)
	defer d.cancel()
	cancel()
	ended(t, ctx)
	if ctx.Err() != context.Canceled || context.Cause(ctx) != context.Canceled {
		t.Fatalf("Err %v, Cause %v; want canceled", ctx.Err(), context.Cause(ctx))
	}

	var gone callDeadline
	if ctx := gone.start(parent, time.Hour); ctx.Err() != context.Canceled {
		t.Fatalf("a parent that had ended: Err %v", ctx.Err())
	}

	sooner, cancelSooner := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSooner()
	var d2 callDeadline
	ctx2 := d2.start(sooner, time.Hour)
	defer d2.cancel()
	got, _ := ctx2.Deadline()
	if want, _ := sooner.Deadline(); !got.Equal(want) {
		t.Fatalf("Deadline = %v, want the parent's %v", got, want)
	}
	if d2.timer != nil {
		t.Fatal("a timer was started though the parent ends first")
	}

	var d3 callDeadline
	if ctx := d3.start(context.Background(), 0); ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("no time left: Err %v", ctx.Err())
	}
}

// cancel ends the context and lets go of its timer.
func TestCallDeadlineCancel(t *testing.T) {
	var d callDeadline
	ctx := d.start(context.Background(), time.Hour)
	d.cancel()
	ended(t, ctx)
	if ctx.Err() != context.Canceled {
		t.Fatalf("Err %v after cancel", ctx.Err())
	}
	if d.timer.Stop() {
		t.Fatal("the timer still ran after cancel")
	}
}

// The timer is wired: a short deadline ends the context by itself.
func TestCallDeadlineTimerFires(t *testing.T) {
	var d callDeadline
	ctx := d.start(context.Background(), time.Millisecond)
	defer d.cancel()
	ended(t, ctx)
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err %v", ctx.Err())
	}
}

// The deadline's end fails the client's bound writes itself, and not
// once they are unbound.
func TestCallDeadlineAbortsBoundWrites(t *testing.T) {
	under := &deadlineWriter{discardWriter: discardWriter{h: http.Header{}}, set: make(chan time.Time, 4)}
	w := NewResponseWriter(under).WithWriteTimeout(time.Minute)
	var d callDeadline
	ctx := d.start(context.Background(), time.Hour)
	w.Bound(ctx)
	d.fire()
	if at := <-under.set; at.After(time.Now()) {
		t.Fatalf("the deadline ended but the write deadline %v is ahead", at)
	}
	w.Unbind()
	<-under.set

	var d2 callDeadline
	ctx2 := d2.start(context.Background(), time.Hour)
	w.Bound(ctx2)
	w.Unbind()
	d2.cancel()
	if n := len(under.set); n != 0 {
		t.Fatalf("the writes were touched %d times after Unbind", n)
	}

	// Bound to a deadline that had ended: aborted at once.
	w.Bound(ctx2)
	if at := <-under.set; at.After(time.Now()) {
		t.Fatalf("bound after the end, the write deadline %v is ahead", at)
	}
	w.Unbind()
}

// detached is context.WithoutCancel.
func TestDetachedIsWithoutCancel(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
	cancel(errors.New("gone"))
	d := &detached{parent}
	want := context.WithoutCancel(parent)
	if d.Done() != nil || d.Err() != nil || context.Cause(d) != context.Cause(want) {
		t.Fatalf("Done %v, Err %v, Cause %v", d.Done(), d.Err(), context.Cause(d))
	}
	if _, ok := d.Deadline(); ok || d.Value(ctxKey{}) != "v" {
		t.Fatal("a deadline, or the parent's value lost")
	}
	child, stop := context.WithTimeout(d, time.Hour)
	defer stop()
	if child.Err() != nil {
		t.Fatalf("a child of the detached context ended with its canceled parent: %v", child.Err())
	}
}

// Done, Err, AfterFunc and the end race safely (go test -race).
func TestCallDeadlineRaces(t *testing.T) {
	for range 100 {
		parent, cancel := context.WithCancel(context.Background())
		var d callDeadline
		ctx := d.start(parent, time.Hour)
		go cancel()
		go d.fire()
		go func() { _ = ctx.Err(); <-ctx.Done() }()
		child, stop := context.WithCancel(ctx)
		ended(t, child)
		stop()
		d.cancel()
		if ctx.Err() == nil {
			t.Fatal("ended without an error")
		}
	}
}
