package ratelimit

import (
	"hash/maphash"
	"net/http"
	"strconv"
	"sync"
	"time"
)

const shardCount = 32

// seed is fixed for the life of the process; it is read-only after start.
var seed = maphash.MakeSeed()

func shardOf(id string) int {
	return int(maphash.String(seed, id) % shardCount)
}

// Decision is the outcome of one PerKey.Allow call.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is the time until the current window ends.
	Reset time.Duration
	// RetryAfter is set when the request is refused.
	RetryAfter time.Duration
}

// SetHeaders sets x-ratelimit-limit, x-ratelimit-remaining and
// x-ratelimit-reset (whole seconds, rounded up), plus Retry-After when the
// request was refused.
func (d Decision) SetHeaders(h http.Header) {
	h.Set("x-ratelimit-limit", strconv.Itoa(d.Limit))
	h.Set("x-ratelimit-remaining", strconv.Itoa(d.Remaining))
	h.Set("x-ratelimit-reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
	if !d.Allowed {
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(d.RetryAfter), 10))
	}
}

// ceilSeconds rounds d up to whole seconds, at least 1 for a positive d.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// PerKey allows limit requests per fixed window per key. Windows are aligned
// on multiples of the window length (the minute, for a one-minute window), so
// x-ratelimit-reset is the same for every key. A fixed window may admit up to
// twice the limit across a window edge; for the logs API that is acceptable.
type PerKey struct {
	limit  int
	window time.Duration
	now    func() time.Time
	shards [shardCount]perKeyShard
}

type perKeyShard struct {
	mu        sync.Mutex
	counts    map[string]*perKeyCount
	lastSweep int64 // window start of the last eviction pass, unix nanos
}

type perKeyCount struct {
	start int64 // window start, unix nanos
	n     int
}

// NewPerKey returns a limiter of limit requests per window per key. now is
// the clock (time.Now when nil).
func NewPerKey(limit int, window time.Duration, now func() time.Time) *PerKey {
	if now == nil {
		now = time.Now
	}
	if window <= 0 {
		window = time.Minute
	}
	p := &PerKey{limit: limit, window: window, now: now}
	for i := range p.shards {
		p.shards[i].counts = make(map[string]*perKeyCount)
	}
	return p
}

// Allow counts one request of keyID and reports whether it may proceed.
// A refused request is not counted.
func (p *PerKey) Allow(keyID string) Decision {
	t := p.now().UnixNano()
	w := int64(p.window)
	start := t - mod(t, w)
	d := Decision{Limit: p.limit, Reset: time.Duration(start + w - t)}

	s := &p.shards[shardOf(keyID)]
	s.mu.Lock()
	if s.lastSweep != start {
		// Once per window and shard: drop keys of earlier windows.
		for k, c := range s.counts {
			if c.start != start {
				delete(s.counts, k)
			}
		}
		s.lastSweep = start
	}
	c := s.counts[keyID]
	if c == nil {
		c = &perKeyCount{start: start}
		s.counts[keyID] = c
	} else if c.start != start {
		c.start, c.n = start, 0
	}
	if c.n < p.limit {
		c.n++
		d.Allowed = true
	}
	d.Remaining = p.limit - c.n
	s.mu.Unlock()

	if !d.Allowed {
		d.RetryAfter = d.Reset
	}
	return d
}

// mod is a non-negative t mod w.
func mod(t, w int64) int64 {
	m := t % w
	if m < 0 {
		m += w
	}
	return m
}

// size is the number of tracked keys (tests).
func (p *PerKey) size() int {
	n := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		n += len(s.counts)
		s.mu.Unlock()
	}
	return n
}
