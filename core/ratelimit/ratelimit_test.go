package ratelimit

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
)

// clock is a settable time source safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

var base = time.Date(2025, 3, 14, 9, 26, 0, 0, time.UTC) // a minute boundary

func TestPerKey(t *testing.T) {
	tests := []struct {
		desc       string
		offset     time.Duration // into the minute
		calls      int
		wantOK     int
		wantReset  string
		wantRetry  string
		wantRemain string
	}{
		{desc: "under the limit", offset: 0, calls: 3, wantOK: 3, wantReset: "60", wantRemain: "2"},
		{desc: "exactly the limit", offset: 10 * time.Second, calls: 5, wantOK: 5, wantReset: "50", wantRemain: "0"},
		{desc: "over the limit is refused with retry-after", offset: 45*time.Second + 500*time.Millisecond, calls: 7, wantOK: 5, wantReset: "15", wantRetry: "15", wantRemain: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := newClock(base.Add(tc.offset))
			p := NewPerKey(5, time.Minute, c.Now)
			ok := 0
			var last Decision
			for i := 0; i < tc.calls; i++ {
				last = p.Allow("k1")
				if last.Allowed {
					ok++
				}
			}
			if ok != tc.wantOK {
				t.Fatalf("allowed %d, want %d", ok, tc.wantOK)
			}
			h := http.Header{}
			last.SetHeaders(h)
			if got := h.Get("x-ratelimit-limit"); got != "5" {
				t.Errorf("limit header %q", got)
			}
			if got := h.Get("x-ratelimit-remaining"); got != tc.wantRemain {
				t.Errorf("remaining header %q, want %q", got, tc.wantRemain)
			}
			if got := h.Get("x-ratelimit-reset"); got != tc.wantReset {
				t.Errorf("reset header %q, want %q", got, tc.wantReset)
			}
			if got := h.Get("Retry-After"); got != tc.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tc.wantRetry)
			}
		})
	}
}

func TestPerKeyKeysAreIndependentAndWindowResets(t *testing.T) {
	c := newClock(base)
	p := NewPerKey(2, time.Minute, c.Now)
	// b shares a's shard, so a's first call of the next window evicts it.
	b := "b"
	for i := 0; shardOf(b) != shardOf("a"); i++ {
		b = "b" + strconv.Itoa(i)
	}
	for i := 0; i < 2; i++ {
		if !p.Allow("a").Allowed {
			t.Fatalf("call %d of a refused", i)
		}
	}
	if p.Allow("a").Allowed {
		t.Fatal("third call of a allowed")
	}
	if !p.Allow(b).Allowed {
		t.Fatal("b refused because of a")
	}
	c.Advance(time.Minute)
	if d := p.Allow("a"); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("new window: %+v", d)
	}
	// b has been idle a whole window: it is evicted by the next pass.
	if n := p.size(); n != 1 {
		t.Fatalf("tracked keys %d, want 1 after eviction", n)
	}
}

func TestAccountRPMAcrossKeysSlidingWindow(t *testing.T) {
	c := newClock(base)
	a := NewAccount(3, 0, c.Now)
	// Three requests, at 0 s, 10 s and 20 s, from "different keys": the limit
	// is the account's, so keys do not matter to the limiter.
	for i := 0; i < 3; i++ {
		if rel, err := a.Acquire(context.Background(), "acct", 0, 0); err != nil {
			t.Fatalf("request %d refused: %v", i, err)
		} else {
			rel()
		}
		c.Advance(10 * time.Second)
	}
	// At 30 s the window holds 3: refused, until the first one slides out.
	_, err := a.Acquire(context.Background(), "acct", 0, 0)
	if err == nil {
		t.Fatal("fourth request in the window allowed")
	}
	if err.Status != 429 || err.Code != apierr.RateLimitExceeded || !strings.Contains(err.Message, "requests per minute") {
		t.Fatalf("error %+v", err)
	}
	// The request at 0 s leaves the window at 61 s (one second conservative).
	if got := err.Header.Get("Retry-After"); got != "31" {
		t.Errorf("Retry-After %q, want 31", got)
	}
	for _, h := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} {
		if err.Header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
	c.Advance(30 * time.Second) // 60 s: the request at 0 s is still counted
	if _, err := a.Acquire(context.Background(), "acct", 0, 0); err == nil {
		t.Fatal("allowed at 60 s, the window still holds the 0 s request")
	}
	c.Advance(time.Second) // 61 s
	if _, err := a.Acquire(context.Background(), "acct", 0, 0); err != nil {
		t.Fatalf("refused after the window slid: %v", err)
	}
	if _, err := a.Acquire(context.Background(), "acct", 0, 0); err == nil {
		t.Fatal("allowed a fifth while 10 s, 20 s and 61 s are in the window")
	}
	// Another account is independent.
	if _, err := a.Acquire(context.Background(), "other", 0, 0); err != nil {
		t.Fatalf("other account refused: %v", err)
	}
}

func TestAccountNeverExceedsLimitInAnyWindow(t *testing.T) {
	const limit = 7
	c := newClock(base.Add(123 * time.Millisecond))
	a := NewAccount(limit, 0, c.Now)
	var admitted []time.Time
	// Offer a request every 700 ms for 5 minutes.
	for i := 0; i < 430; i++ {
		if _, err := a.Acquire(context.Background(), "acct", 0, 0); err == nil {
			admitted = append(admitted, c.Now())
		}
		c.Advance(700 * time.Millisecond)
	}
	if len(admitted) < 5*limit {
		t.Fatalf("only %d admitted in 5 minutes", len(admitted))
	}
	// Any 60 s interval starting at an admitted request holds at most limit.
	for i, t0 := range admitted {
		n := 0
		for _, t1 := range admitted[i:] {
			if t1.Sub(t0) < time.Minute {
				n++
			}
		}
		if n > limit {
			t.Fatalf("%d requests within 60 s of %v", n, t0)
		}
	}
}

func TestAccountOverridesAndUnlimited(t *testing.T) {
	tests := []struct {
		desc       string
		defRPM     int
		rpm        int
		wantAllows int
	}{
		{desc: "default applies", defRPM: 2, rpm: 0, wantAllows: 2},
		{desc: "override wins", defRPM: 2, rpm: 4, wantAllows: 4},
		{desc: "zero default is unlimited", defRPM: 0, rpm: 0, wantAllows: 10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			a := NewAccount(tc.defRPM, 0, newClock(base).Now)
			n := 0
			for i := 0; i < 10; i++ {
				if rel, err := a.Acquire(context.Background(), "acct", tc.rpm, 0); err == nil {
					n++
					rel()
				}
			}
			if n != tc.wantAllows {
				t.Fatalf("allowed %d, want %d", n, tc.wantAllows)
			}
		})
	}
}

func TestAccountConcurrencyReleased(t *testing.T) {
	c := newClock(base)
	a := NewAccount(0, 2, c.Now)
	r1, err := a.Acquire(context.Background(), "acct", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Acquire(context.Background(), "acct", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Acquire(context.Background(), "acct", 0, 0)
	if err == nil {
		t.Fatal("third concurrent request allowed")
	}
	if !strings.Contains(err.Message, "concurrency") || err.Header.Get("Retry-After") != "1" ||
		err.Header.Get("x-ratelimit-limit") != "2" {
		t.Fatalf("error %+v header %v", err, err.Header)
	}
	r1()
	r1() // a second call must not free another slot
	r3, err := a.Acquire(context.Background(), "acct", 0, 0)
	if err != nil {
		t.Fatalf("refused after release: %v", err)
	}
	if _, err := a.Acquire(context.Background(), "acct", 0, 0); err == nil {
		t.Fatal("double release freed two slots")
	}
	r2()
	r3()
	if _, err := a.Acquire(context.Background(), "acct", 0, 0); err != nil {
		t.Fatalf("refused with nothing in flight: %v", err)
	}
}

func TestAccountConcurrentCallersRespectLimit(t *testing.T) {
	c := newClock(base)
	a := NewAccount(100, 0, c.Now)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := a.Acquire(context.Background(), "acct", 0, 0); err == nil {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 100 {
		t.Fatalf("admitted %d of 800, want exactly 100", ok.Load())
	}
}

func TestAccountEvictsIdleEntries(t *testing.T) {
	c := newClock(base)
	a := NewAccount(10, 5, c.Now)
	busy, err := a.Acquire(context.Background(), "busy", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		rel, err := a.Acquire(context.Background(), "idle-"+strconv.Itoa(i), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	c.Advance(2 * time.Minute)
	// Touch every shard so each runs its eviction pass.
	for i := 0; i < 200; i++ {
		if rel, err := a.Acquire(context.Background(), "probe", 0, 0); err == nil {
			rel()
		}
		a.sweep(&a.shards[i%shardCount], c.Now().Unix())
	}
	if n := a.size(); n != 2 {
		t.Fatalf("tracked %d accounts, want 2 (busy, still in flight, and probe)", n)
	}
	busy()
	if rel, err := a.Acquire(context.Background(), "busy", 0, 0); err != nil {
		t.Fatalf("busy refused after release: %v", err)
	} else {
		rel()
	}
}

func BenchmarkAccountAcquire(b *testing.B) {
	b.Run("one account", func(b *testing.B) {
		a := NewAccount(1<<30, 1<<20, nil)
		b.ReportAllocs()
		b.SetParallelism(32) // 64 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rel, err := a.Acquire(context.Background(), "acct", 0, 0)
				if err != nil {
					b.Error(err)
					return
				}
				rel()
			}
		})
	})
	b.Run("many accounts", func(b *testing.B) {
		a := NewAccount(1<<30, 1<<20, nil)
		ids := make([]string, 1024)
		for i := range ids {
			ids[i] = "acct-" + strconv.Itoa(i)
		}
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1))
			for pb.Next() {
				rel, err := a.Acquire(context.Background(), ids[i%len(ids)], 0, 0)
				if err != nil {
					b.Error(err)
					return
				}
				rel()
				i++
			}
		})
	})
}
