package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/store"
)

// SettleQueue keeps the settlements the store refused as unavailable (its
// disk full, its database gone) when their calls ended, and writes them
// in order, with backoff, once the store takes writes again. Each one's
// hold stays open meanwhile: it is the evidence of the call, and should
// the process die before the settlement is written, crash recovery
// releases it as for any call cut by a crash. While settlements with a
// hold wait, new calls are refused (the precharge stage) and /readyz says
// so: the gateway serves nothing it might not be able to bill. The queue
// is bounded: past its limit a settlement is refused as before (its hold
// kept for recovery), and the rows of calls without a hold (refusals, at
// cost 0) are kept only up to half of it.
type SettleQueue struct {
	log   hclog.Logger
	limit int
	now   func() time.Time
	after func(time.Duration) <-chan time.Time // the backoff's wait (tests)

	waiting, holding atomic.Int64 // len(items), and those with a hold

	mu      sync.Mutex
	items   []waiting
	since   time.Time // when the first of the current wait was queued
	dropped int       // rows without a hold not kept since then
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// waiting is one settlement in the queue: write makes it (the store step
// with its fallbacks) and is retried while the store is unavailable.
type waiting struct {
	id    string // request id
	hold  bool
	write func(ctx context.Context) error
}

// ErrSettlementWaits is what Queue answers for a settlement it queued.
var ErrSettlementWaits = errors.New("the store refused the settlement; it waits in memory and is written once the store takes writes")

// DefaultSettleLimit bounds the settlements waiting in memory.
const DefaultSettleLimit = 50000

// Retry pace of the queue's head: fast at first, at most every
// settleBackoffMax, so the queue empties within a second of the store
// taking writes again.
const (
	settleBackoffMin = 20 * time.Millisecond
	settleBackoffMax = 500 * time.Millisecond
	settleAttempt    = 10 * time.Second
	settleStall      = 2 * time.Second
)

// NewSettleQueue starts a queue of at most limit settlements (0:
// DefaultSettleLimit); Close stops it.
func NewSettleQueue(log hclog.Logger, limit int, now func() time.Time) *SettleQueue {
	return newSettleQueue(log, limit, now, time.After)
}

func newSettleQueue(log hclog.Logger, limit int, now func() time.Time, after func(time.Duration) <-chan time.Time) *SettleQueue {
	if limit <= 0 {
		limit = DefaultSettleLimit
	}
	q := &SettleQueue{log: log, limit: limit, now: now, after: after,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// Waiting is the number of settlements waiting for the store: when 0, a
// settlement goes straight to the store.
func (q *SettleQueue) Waiting() int {
	if q == nil {
		return 0
	}
	return int(q.waiting.Load())
}

// Holding is the number of waiting settlements that close a hold: calls
// served whose charge is not yet booked.
func (q *SettleQueue) Holding() int {
	if q == nil {
		return 0
	}
	return int(q.holding.Load())
}

// Queue puts a settlement behind those waiting, to be made by write, again
// until the store takes it: one the store refused as unavailable (cause),
// or one not tried because others wait (cause nil). It returns an error
// wrapping ErrSettlementWaits, or the refusal of a full queue (wrapping
// cause, else store.ErrUnavailable). A nil queue keeps nothing.
func (q *SettleQueue) Queue(id string, hold bool, write func(ctx context.Context) error, cause error) error {
	if cause == nil {
		cause = fmt.Errorf("%w: settlements wait for it", store.ErrUnavailable)
	}
	if q == nil {
		return cause
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.items); n >= q.limit || !hold && n >= q.limit/2 {
		if !hold {
			q.dropped++
		}
		return fmt.Errorf("the queue of %d waiting settlements is full: %w", n, cause)
	}
	if len(q.items) == 0 {
		q.since = q.now()
	}
	q.items = append(q.items, waiting{id: id, hold: hold, write: write})
	q.count(hold, 1)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return fmt.Errorf("%w: %w", ErrSettlementWaits, cause)
}

// count moves the counters by d for an item with or without a hold; q.mu
// is held.
func (q *SettleQueue) count(hold bool, d int64) {
	q.waiting.Add(d)
	if hold {
		q.holding.Add(d)
	}
}

// run writes the head of the queue until the store takes it, then the
// next, until stopped.
func (q *SettleQueue) run() {
	defer close(q.done)
	backoff := settleBackoffMin
	for {
		q.mu.Lock()
		var head waiting
		n := len(q.items)
		if n > 0 {
			head = q.items[0]
		}
		q.mu.Unlock()
		if n == 0 {
			select {
			case <-q.wake:
				continue
			case <-q.stop:
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleAttempt)
		err := head.write(ctx)
		cancel()
		if errors.Is(err, store.ErrUnavailable) {
			select {
			case <-q.after(backoff):
			case <-q.stop:
				return
			}
			backoff = min(2*backoff, settleBackoffMax)
			continue
		}
		backoff = settleBackoffMin
		q.mu.Lock()
		q.items[0] = waiting{}
		q.items = q.items[1:]
		q.count(head.hold, -1)
		left, since, dropped := len(q.items), q.since, q.dropped
		if left == 0 {
			q.items, q.dropped = nil, 0
		}
		q.mu.Unlock()
		if err != nil {
			q.log.Error("a waiting settlement was refused; its hold stays open for recovery", "request_id", head.id, "error", err)
		}
		if left == 0 {
			q.log.Info("every waiting settlement is written", "waited", q.now().Sub(since).Round(time.Millisecond), "rows_not_kept", dropped)
		}
	}
}

// Close gives the waiting settlements up to wait to be written, as long
// as the store takes some (it stops waiting after settleStall without
// progress), then stops; those still waiting keep their holds, which the
// next start releases (docs/operations.md).
func (q *SettleQueue) Close(wait time.Duration) {
	deadline := time.Now().Add(wait)
	last, progress := q.Waiting(), time.Now()
	for n := last; n > 0 && time.Now().Before(deadline) && time.Since(progress) < settleStall; n = q.Waiting() {
		if n < last {
			last, progress = n, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(q.stop)
	<-q.done
	if n := q.Waiting(); n > 0 {
		q.log.Error("settlements still wait for the store at stop; their holds stay open and the next start releases them", "count", n)
	}
}
