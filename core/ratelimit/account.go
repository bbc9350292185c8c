package ratelimit

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/english"
)

// buckets is the number of one-second buckets of the sliding window: the 60
// seconds before the current one, plus the current one.
const buckets = 61

// Account limits requests per minute and requests in flight per account.
//
// The minute is a sliding window of one-second buckets. At an instant t in
// second s, the count is the sum of buckets s-60 .. s, which covers the whole
// interval (t-60s, t] and up to one second more. A request is admitted only
// while that count is below the limit, so for any 60-second interval the
// requests admitted inside it never exceed the limit (the last one admitted
// in the interval saw all earlier ones in its count). The price of that
// exactness is being conservative by under one second: a slot frees up to a
// second after it strictly would.
//
// Each account has its own mutex guarding a fixed-size ring (no allocation
// per request); accounts are spread over sharded maps, so different accounts
// never contend and one busy account holds its lock for a few dozen
// nanoseconds per request. A refused request is not counted.
type Account struct {
	defaults
	now    func() time.Time
	shards [shardCount]accountShard
}

// defaults are the configured limits of an account that has none of its
// own (0: unlimited), for Account and Shared alike.
type defaults struct {
	p atomic.Pointer[[2]int] // rpm, concurrency
}

// SetDefaults replaces the configured defaults (a config reload); the
// windows and the calls in flight of every account carry over.
func (d *defaults) SetDefaults(rpm, concurrency int) {
	d.p.Store(&[2]int{rpm, concurrency})
}

// limits are an account's own limits, each replaced by its default where
// it is not above 0.
func (d *defaults) limits(rpm, concurrency int) (int, int) {
	def := d.p.Load()
	if rpm <= 0 {
		rpm = def[0]
	}
	if concurrency <= 0 {
		concurrency = def[1]
	}
	return rpm, concurrency
}

type accountShard struct {
	mu        sync.RWMutex
	entries   map[string]*accountEntry
	lastSweep atomic.Int64 // unix second of the last eviction pass
}

type accountEntry struct {
	mu       sync.Mutex
	head     int64 // unix second of the newest bucket
	total    int   // sum of the buckets head-60 .. head
	inflight int
	dead     bool // evicted from its shard; callers look up again
	ring     [buckets]uint32
}

// NewAccount returns an account limiter with the configured defaults; 0
// means unlimited for that dimension. now is the clock (time.Now when nil).
func NewAccount(defaultRPM, defaultConcurrency int, now func() time.Time) *Account {
	if now == nil {
		now = time.Now
	}
	a := &Account{now: now}
	a.SetDefaults(defaultRPM, defaultConcurrency)
	for i := range a.shards {
		a.shards[i].entries = make(map[string]*accountEntry)
	}
	return a
}

func noRelease() {}

// Acquire counts one request of accountID. rpm and concurrency override the
// defaults when > 0 (store.Account.RPM and .Concurrency). When the request
// is allowed it returns a release func that must be called when the request
// ends (calling it more than once is harmless) and a nil error.
//
// When refused it returns a nil func and a 429 rate_limit_exceeded whose
// message names the dimension reached and whose Header carries Retry-After
// and x-ratelimit-limit/-remaining/-reset for that dimension (for
// concurrency: the concurrency limit, 0 remaining, 1 second). The error is
// returned as the concrete *apierr.Error so the caller can write it without
// a type assertion; compare it with nil as a pointer, never store it in an
// error interface before the nil check.
// ctx is unused: the counts are in memory (Shared is the limiter whose
// counts are in a store).
func (a *Account) Acquire(_ context.Context, accountID string, rpm, concurrency int) (release func(), err *apierr.Error) {
	rpm, concurrency = a.limits(rpm, concurrency)
	if rpm <= 0 && concurrency <= 0 {
		return noRelease, nil
	}
	t := a.now()
	sec := t.Unix()
	sh := &a.shards[shardOf(accountID)]
	a.sweep(sh, sec)
	for {
		e := sh.get(accountID, sec)
		e.mu.Lock()
		if e.dead {
			e.mu.Unlock()
			continue
		}
		e.advance(sec)
		if rpm > 0 && e.total >= rpm {
			retry := e.retryAfter(rpm, t)
			e.mu.Unlock()
			return nil, refused("requests per minute", rpm, 0, retry)
		}
		if concurrency > 0 && e.inflight >= concurrency {
			e.mu.Unlock()
			return nil, refused("concurrency", concurrency, 0, time.Second)
		}
		e.ring[e.head%buckets]++
		e.total++
		if concurrency > 0 {
			e.inflight++
		}
		e.mu.Unlock()
		if concurrency <= 0 {
			return noRelease, nil
		}
		return e.releaser(), nil
	}
}

func (e *accountEntry) releaser() func() {
	var done atomic.Bool
	return func() {
		if !done.CompareAndSwap(false, true) {
			return
		}
		e.mu.Lock()
		e.inflight--
		e.mu.Unlock()
	}
}

func refused(dimension string, limit, remaining int, retry time.Duration) *apierr.Error {
	e := apierr.Newf(apierr.RateLimitExceeded,
		"account rate limit reached: %s (limit %d); retry after %s",
		dimension, limit, english.Count(int(ceilSeconds(retry)), "second"))
	secs := strconv.FormatInt(ceilSeconds(retry), 10)
	return e.WithHeader("Retry-After", secs).
		WithHeader("x-ratelimit-limit", strconv.Itoa(limit)).
		WithHeader("x-ratelimit-remaining", strconv.Itoa(remaining)).
		WithHeader("x-ratelimit-reset", secs)
}

// get returns the entry of id, creating it when absent.
func (sh *accountShard) get(id string, sec int64) *accountEntry {
	sh.mu.RLock()
	e := sh.entries[id]
	sh.mu.RUnlock()
	if e != nil {
		return e
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e = sh.entries[id]; e == nil {
		e = &accountEntry{head: sec}
		sh.entries[id] = e
	}
	return e
}

// sweep evicts, at most once per window and shard, the entries with nothing
// in flight and nothing in their window.
func (a *Account) sweep(sh *accountShard, sec int64) {
	last := sh.lastSweep.Load()
	if sec-last < buckets || !sh.lastSweep.CompareAndSwap(last, sec) {
		return
	}
	sh.mu.Lock()
	for id, e := range sh.entries {
		e.mu.Lock()
		if e.inflight == 0 && sec-e.head >= buckets {
			e.dead = true
			delete(sh.entries, id)
		}
		e.mu.Unlock()
	}
	sh.mu.Unlock()
}

// advance moves the ring to second sec, emptying the buckets that left the
// window. A clock that steps back counts into the newest bucket.
func (e *accountEntry) advance(sec int64) {
	if sec <= e.head {
		return
	}
	if sec-e.head >= buckets {
		e.ring = [buckets]uint32{}
		e.total = 0
	} else {
		for s := e.head + 1; s <= sec; s++ {
			i := s % buckets
			e.total -= int(e.ring[i])
			e.ring[i] = 0
		}
	}
	e.head = sec
}

// retryAfter is the time from t until the count drops below limit: the k
// oldest buckets have left the window at the start of second head+k.
func (e *accountEntry) retryAfter(limit int, t time.Time) time.Duration {
	n := e.total
	for k := int64(1); k <= buckets; k++ {
		n -= int(e.ring[(e.head-buckets+k)%buckets])
		if n < limit {
			return time.Unix(e.head+k, 0).Sub(t)
		}
	}
	return time.Unix(e.head+buckets, 0).Sub(t)
}

// size is the number of tracked accounts (tests).
func (a *Account) size() int {
	n := 0
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.RLock()
		n += len(sh.entries)
		sh.mu.RUnlock()
	}
	return n
}
