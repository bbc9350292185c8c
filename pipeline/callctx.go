package pipeline

import (
	"context"
	"sync"
	"time"
)

// The contexts a chat call makes on its hot path, kept in its Call: the
// dispatch deadline (what context.WithTimeout and an AfterFunc for the
// client's writes cost in eight allocations, here one timer) and the
// ledger's detached context (context.WithoutCancel). Both behave as the
// standard ones do, Cause and AfterFunc included (callctx_test.go).

// cancelCtxKey is the key under which the context package finds the
// canceler a context descends from (context.Cause and the children of
// WithCancel ask for it). Like the standard library's own contexts that
// end on their own terms, ours answer it with nil: Cause then reports
// their Err, and a child registers through their AfterFunc.
var cancelCtxKey = func() any {
	p := &keyProbe{Context: context.Background()}
	_ = context.Cause(p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}

// closedChan is the Done of a context that ended before anyone asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// callDeadline is a context that ends at its deadline or with its
// parent, whichever comes first, like context.WithDeadline; at its end it
// also fails the client's blocked writes it was bound to (Bound).
type callDeadline struct {
	parent   context.Context
	deadline time.Time

	mu      sync.Mutex
	timer   *time.Timer
	unwatch func() bool   // stops the watch on the parent; nil when it never ends
	done    chan struct{} // made on first ask
	err     error
	funcs   []*afterFunc
	writes  *writeDeadline // aborted at the end, unless unbound first
}

type afterFunc struct{ f func() }

// start makes d a child of parent ending after timeout. The caller calls
// d.cancel once done with it, as with context.WithTimeout.
func (d *callDeadline) start(parent context.Context, timeout time.Duration) context.Context {
	*d = callDeadline{parent: parent, deadline: time.Now().Add(timeout)}
	if err := parent.Err(); err != nil {
		d.end(err)
		return d
	}
	if timeout <= 0 {
		d.end(context.DeadlineExceeded)
		return d
	}
	// The timer and the watch may fire at once: end reads them under mu.
	// Both call one func value, fire.
	d.mu.Lock()
	defer d.mu.Unlock()
	var fire func()
	if pd, ok := parent.Deadline(); ok && !pd.After(d.deadline) {
		d.deadline = pd // the parent ends first: its end is ours
	} else {
		fire = d.fire
		d.timer = time.AfterFunc(timeout, fire)
	}
	if parent.Done() != nil {
		if fire == nil {
			fire = d.fire
		}
		d.unwatch = context.AfterFunc(parent, fire)
	}
	return d
}

// fire ends d at its deadline, or with its parent: the parent's error
// when it has ended.
func (d *callDeadline) fire() {
	if err := d.parent.Err(); err != nil {
		d.end(err)
		return
	}
	d.end(context.DeadlineExceeded)
}

// cancel ends d (if it had not ended) and lets go of its timer and of
// its watch on the parent.
func (d *callDeadline) cancel() { d.end(context.Canceled) }

func (d *callDeadline) end(err error) {
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		return
	}
	d.err = err
	if d.done == nil {
		d.done = closedChan
	} else {
		close(d.done)
	}
	funcs, writes, timer, unwatch := d.funcs, d.writes, d.timer, d.unwatch
	d.funcs, d.writes = nil, nil
	d.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if unwatch != nil {
		unwatch()
	}
	if writes != nil {
		writes.abort()
	}
	for _, a := range funcs {
		go a.f()
	}
}

func (d *callDeadline) Deadline() (time.Time, bool) { return d.deadline, true }

func (d *callDeadline) Done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = make(chan struct{})
	}
	return d.done
}

func (d *callDeadline) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

func (d *callDeadline) Value(key any) any {
	if key == cancelCtxKey {
		return nil
	}
	return d.parent.Value(key)
}

// AfterFunc is context.AfterFunc on d: f runs in its own goroutine once d
// ends; stop reports whether it kept f from running. The context package
// registers the children of d through it.
func (d *callDeadline) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	d.funcs = append(d.funcs, a)
	d.mu.Unlock()
	return func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, g := range d.funcs {
			if g == a {
				d.funcs = append(d.funcs[:i], d.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// bind makes d's end abort w's writes, as long as w stays bound; false
// when d has ended already.
func (d *callDeadline) bind(w *writeDeadline) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return false
	}
	d.writes = w
	return true
}

// detached is context.WithoutCancel: the parent's values, never done.
type detached struct{ parent context.Context }

func (detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detached) Done() <-chan struct{}       { return nil }
func (detached) Err() error                  { return nil }
func (d *detached) Value(key any) any {
	if key == cancelCtxKey {
		return nil
	}
	return d.parent.Value(key)
}
