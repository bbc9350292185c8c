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

// Ready reports whether the channel may be tried now: its breaker is
// closed, or its cooldown has passed and no probe is out. It claims
// nothing; Begin does, when the channel is actually called.
func (h *Health) Ready(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.m[channel]
	return b == nil || b.failures < h.Threshold || !h.now().Before(b.openUntil) && !b.probing
}

// Begin is called right before a request goes to the channel. When the
// breaker is open and its cooldown has passed, this request is the one
// probe; Success, Failure or Release must follow.
func (h *Health) Begin(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.m[channel]; b != nil && b.failures >= h.Threshold {
		b.probing = true
	}
}

// Open reports whether the channel is taken out (without admitting a probe).
func (h *Health) Open(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.m[channel]
	return b != nil && b.failures >= h.Threshold && (h.now().Before(b.openUntil) || b.probing)
}

// Release ends a request that says nothing about the channel's health
// (the client went away): a probe it carried may be sent again.
func (h *Health) Release(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.m[channel]; b != nil {
		b.probing = false
	}
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

// Breaker states, as State reports them (and metrics show them).
const (
	BreakerClosed   = 0 // the channel is used
	BreakerOpen     = 1 // taken out until its cooldown ends
	BreakerHalfOpen = 2 // cooldown over: the next call is a probe
)

// State reports the channel's breaker.
func (h *Health) State(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.m[channel]
	switch {
	case b == nil || b.failures < h.Threshold:
		return BreakerClosed
	case h.now().Before(b.openUntil):
		return BreakerOpen
	}
	return BreakerHalfOpen
}
