package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/store"
)

// fakeLedger is a store step that refuses as unavailable while down and
// records what it took, in order.
type fakeLedger struct {
	mu    sync.Mutex
	down  bool
	took  []string
	tries int
	retry chan time.Time // the queue's backoff: one tick per retry
}

func (f *fakeLedger) write(id string) func(context.Context, bool) error {
	return func(context.Context, bool) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tries++
		if f.down {
			return store.ErrUnavailable
		}
		f.took = append(f.took, id)
		return nil
	}
}

func (f *fakeLedger) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func (f *fakeLedger) taken() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.took...)
}

func newTestQueue(t *testing.T, limit int, f *fakeLedger) *SettleQueue {
	t.Helper()
	f.retry = make(chan time.Time, 1)
	q := newSettleQueue(hclog.NewNullLogger(), limit, time.Now, func(time.Duration) <-chan time.Time { return f.retry })
	t.Cleanup(func() { q.Close(0) })
	return q
}

// A settlement the store refuses waits, its successors queue behind it
// without being tried, and all are written in order once the store takes
// writes; past the limit, rows without a hold are refused first.
func TestSettleQueueWaitsInOrder(t *testing.T) {
	f := &fakeLedger{}
	q := newTestQueue(t, 4, f)
	ctx := t.Context()
	if err := q.Submit(ctx, "a", true, f.write("a")); err != nil {
		t.Fatalf("a written directly: %v", err)
	}
	f.setDown(true)
	if err := q.Submit(ctx, "b", true, f.write("b")); !errors.Is(err, ErrSettlementWaits) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("b: %v, want it queued", err)
	}
	tried := false
	behind := func(ctx context.Context, late bool) error {
		tried = tried || !late
		return f.write("c")(ctx, late)
	}
	if err := q.Submit(ctx, "c", false, behind); !errors.Is(err, ErrSettlementWaits) || tried {
		t.Fatalf("c: %v (tried at once: %v), want it queued behind b untried", err, tried)
	}
	if err := q.Submit(ctx, "d", false, f.write("d")); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrSettlementWaits) {
		t.Fatalf("d (a row without a hold past half the limit): %v, want refused", err)
	}
	if err := q.Submit(ctx, "e", true, f.write("e")); !errors.Is(err, ErrSettlementWaits) {
		t.Fatalf("e (with a hold): %v, want queued", err)
	}
	if n := q.Waiting(); n != 3 {
		t.Fatalf("%d waiting, want 3", n)
	}
	f.setDown(false)
	f.retry <- time.Now() // the backoff after b's failed retry ends
	for deadline := time.Now().Add(5 * time.Second); q.Waiting() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d still waiting", q.Waiting())
		}
	}
	got := f.taken()
	want := []string{"a", "b", "c", "e"}
	if len(got) != len(want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("written %v, want %v", got, want)
		}
	}
	// Empty again: the next one goes straight to the store.
	if err := q.Submit(ctx, "f", false, f.write("f")); err != nil {
		t.Fatalf("f: %v", err)
	}
}

// Any other error of the store is the caller's, not queued.
func TestSettleQueuePassesOtherErrors(t *testing.T) {
	q := newTestQueue(t, 0, &fakeLedger{})
	err := q.Submit(t.Context(), "x", true, func(context.Context, bool) error { return store.ErrNotFound })
	if !errors.Is(err, store.ErrNotFound) || q.Waiting() != 0 {
		t.Fatalf("%v, %d waiting", err, q.Waiting())
	}
}
