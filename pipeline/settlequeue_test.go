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
	retry chan time.Time // the queue's backoff: one tick per retry
}

func (f *fakeLedger) write(id string) func(context.Context) error {
	return func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
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

// Settlements the store refused wait and are written in order once it
// takes writes; past the limit, rows without a hold are refused first;
// the counts say how many wait and how many of them close a hold.
func TestSettleQueueWaitsInOrder(t *testing.T) {
	f := &fakeLedger{}
	q := newTestQueue(t, 4, f)
	f.setDown(true)
	if err := q.Queue("b", true, f.write("b"), store.ErrUnavailable); !errors.Is(err, ErrSettlementWaits) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("b: %v, want it queued", err)
	}
	if err := q.Queue("c", false, f.write("c"), nil); !errors.Is(err, ErrSettlementWaits) {
		t.Fatalf("c: %v, want it queued", err)
	}
	if err := q.Queue("d", false, f.write("d"), nil); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrSettlementWaits) {
		t.Fatalf("d (a row without a hold past half the limit): %v, want refused", err)
	}
	if err := q.Queue("e", true, f.write("e"), nil); !errors.Is(err, ErrSettlementWaits) {
		t.Fatalf("e (with a hold): %v, want queued", err)
	}
	if w, h := q.Waiting(), q.Holding(); w != 3 || h != 2 {
		t.Fatalf("%d waiting, %d holding; want 3 and 2", w, h)
	}
	f.setDown(false)
	f.retry <- time.Now() // the backoff after the head's failed attempt ends
	for deadline := time.Now().Add(5 * time.Second); q.Waiting() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d still waiting", q.Waiting())
		}
	}
	if got, want := f.taken(), []string{"b", "c", "e"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("written %v, want %v", got, want)
	}
	if q.Holding() != 0 {
		t.Fatalf("%d holding after the queue emptied", q.Holding())
	}
}

// A nil queue keeps nothing: the store's refusal is the caller's.
func TestNilSettleQueue(t *testing.T) {
	var q *SettleQueue
	if err := q.Queue("x", true, nil, store.ErrUnavailable); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrSettlementWaits) || q.Waiting() != 0 {
		t.Fatalf("%v", err)
	}
}
