package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/store"
)

// SettleQueue keeps the settlements the store refused as unavailable (its
// disk full, its database gone) when their calls ended, and writes them
// in order, with backoff, once the store takes writes again. Each one's
// hold stays open meanwhile: it is the evidence of the call, and should
// the process die before the settlement is written, crash recovery
// releases it as for any call cut by a crash. While settlements wait, new
// calls are refused (the precharge stage) and /readyz says so: the
// gateway serves nothing it might not be able to bill. The queue is
// bounded: past its limit a settlement is refused as before (its hold
// kept for recovery), and the rows of calls without a hold (refusals, at
// cost 0) are kept only up to half of it.
type SettleQueue struct {
	log   hclog.Logger
	limit int
	now   func() time.Time
	after func(time.Duration) <-chan time.Time // the backoff's wait (tests)

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
	write func(ctx context.Context, late bool) error
}

// ErrSettlementWaits is what Submit answers for a settlement it queued.
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

// Waiting is the number of settlements waiting for the store.
func (q *SettleQueue) Waiting() int {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Submit makes write now (late false), unless settlements already wait:
// then it goes behind them, in order. A write the store refuses as
// unavailable is queued too, and made again from the queue (late true)
// until the store takes it. Submit returns nil once written, an error
// wrapping ErrSettlementWaits when queued, else write's own error (or the
// refusal of a full queue, which wraps the store's).
func (q *SettleQueue) Submit(ctx context.Context, id string, hold bool, write func(ctx context.Context, late bool) error) error {
	if q == nil {
		return write(ctx, false)
	}
	q.mu.Lock()
	cause := error(nil)
	if len(q.items) == 0 {
		q.mu.Unlock()
		cause = write(ctx, false)
		if !errors.Is(cause, store.ErrUnavailable) {
			return cause
		}
		q.mu.Lock()
	}
	defer q.mu.Unlock()
	if n := len(q.items); n >= q.limit || !hold && n >= q.limit/2 {
		if !hold {
			q.dropped++
		}
		if cause == nil {
			cause = fmt.Errorf("%w: %d settlements already wait for it", store.ErrUnavailable, n)
		}
		return fmt.Errorf("the queue of waiting settlements is full: %w", cause)
	}
	if len(q.items) == 0 {
		q.since = q.now()
	}
	q.items = append(q.items, waiting{id: id, hold: hold, write: write})
	select {
	case q.wake <- struct{}{}:
	default:
	}
	if cause == nil {
		return ErrSettlementWaits
	}
	return fmt.Errorf("%w: %w", ErrSettlementWaits, cause)
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
		err := head.write(ctx, true)
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
