package admin

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The admin token guards every account and reveals every raw key: an
// address that keeps sending wrong tokens is refused for a while (429)
// instead of being told, at full speed, which tokens fail.

// Failures are counted per client address over a window that starts at
// its first failure.
const (
	maxFailures   = 10
	failureWindow = time.Minute
	maxTracked    = 10_000 // addresses tracked at once; the oldest windows go first
)

// throttle counts failed admin attempts per address.
type throttle struct {
	now func() time.Time
	log hclog.Logger

	mu    sync.Mutex
	addrs map[string]*failures
}

type failures struct {
	since time.Time // the window's start
	n     int
}

func newThrottle(now func() time.Time, log hclog.Logger) *throttle {
	if now == nil {
		now = time.Now
	}
	return &throttle{now: now, log: log, addrs: map[string]*failures{}}
}

// clientAddr is the address a request came from (no port); forwarded
// headers are not trusted, anyone can send them.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked reports whether addr used up its failures, and for how long
// more it is refused.
func (t *throttle) blocked(addr string) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.addrs[addr]
	if f == nil {
		return false, 0
	}
	left := failureWindow - t.now().Sub(f.since)
	if left <= 0 {
		delete(t.addrs, addr)
		return false, 0
	}
	return f.n >= maxFailures, left
}

// fail counts a failed attempt of addr; the one that reaches the ceiling
// is logged.
func (t *throttle) fail(addr string) {
	now := t.now()
	t.mu.Lock()
	f := t.addrs[addr]
	if f == nil || now.Sub(f.since) >= failureWindow {
		if len(t.addrs) >= maxTracked {
			t.sweep(now)
		}
		f = &failures{since: now}
		t.addrs[addr] = f
	}
	f.n++
	n := f.n
	t.mu.Unlock()
	if n == maxFailures {
		t.log.Warn("too many failed admin attempts; refusing the address for the rest of the window",
			"addr", addr, "failures", n, "window", failureWindow)
	}
}

// sweep drops the windows that ended, or the oldest half when none has.
func (t *throttle) sweep(now time.Time) {
	for a, f := range t.addrs {
		if now.Sub(f.since) >= failureWindow {
			delete(t.addrs, a)
		}
	}
	for a := range t.addrs {
		if len(t.addrs) < maxTracked/2 {
			break
		}
		delete(t.addrs, a)
	}
}

// retryAfter is a Retry-After value for d.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
