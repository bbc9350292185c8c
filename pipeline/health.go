package pipeline

import (
	"sync"
	"time"
)

// Health is a circuit breaker per channel: after Threshold consecutive
// failures a channel is taken out for Cooldown, then one probe request is
// let through; its success puts the channel back, its failure reopens it.
type Health struct {
	Threshold int
	Cooldown  time.Duration
	now       func() time.Time

	mu sync.Mutex
	m  map[string]*breaker
}

type breaker struct {
	failures  int
	openUntil time.Time
	probing   bool
}

// NewHealth returns breakers that open after 3 failures for 30 seconds.
func NewHealth(now func() time.Time) *Health {
	return &Health{Threshold: 3, Cooldown: 30 * time.Second, now: now, m: map[string]*breaker{}}
}

// Usable reports whether a request may go to the channel now. For an open
// breaker whose cooldown has passed it admits exactly one probe.
func (h *Health) Usable(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.m[channel]
	if b == nil || b.failures < h.Threshold {
		return true
	}
	if h.now().Before(b.openUntil) || b.probing {
		return false
	}
	b.probing = true
	return true
}

// Open reports whether the channel is taken out (without admitting a probe).
func (h *Health) Open(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.m[channel]
	return b != nil && b.failures >= h.Threshold && (h.now().Before(b.openUntil) || b.probing)
}

// Success records a served request.
func (h *Health) Success(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.m[channel]; b != nil {
		delete(h.m, channel)
	}
}

// Failure records a failed attempt.
func (h *Health) Failure(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.m[channel]
	if b == nil {
		b = &breaker{}
		h.m[channel] = b
	}
	b.failures++
	b.probing = false
	if b.failures >= h.Threshold {
		b.openUntil = h.now().Add(h.Cooldown)
	}
}
