package ratelimit

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
)

// Counter keeps the counts of a Shared limiter where every gateway
// instance sees them: a store several instances share (pgstore). The
// algorithm and its error are in docs/decisions.md.
type Counter interface {
	// Admit counts one request of the account in its sliding minute and,
	// when concurrency > 0, among its requests in flight, unless either
	// limit (0: none) is reached; then it counts nothing.
	Admit(ctx context.Context, accountID string, rpm, concurrency int) (Admission, error)
	// Release ends one request in flight that Admit counted (with a
	// concurrency limit).
	Release(ctx context.Context, accountID string) error
}

// Admission is a Counter's answer.
type Admission struct {
	Allowed bool
	// Concurrency: the concurrency limit refused the request (else, when
	// refused, the requests-per-minute limit did).
	Concurrency bool
	// RetryAfter is when the refused request would be admitted.
	RetryAfter time.Duration
}

// Shared is Account's limiter with its counts in a Counter, so the limits
// hold in total across instances rather than per instance. It answers
// like Account: the same refusal, message and headers.
type Shared struct {
	defaults
	c Counter
}

// NewShared returns a limiter over c with the configured defaults (0:
// unlimited).
func NewShared(c Counter, defaultRPM, defaultConcurrency int) *Shared {
	s := &Shared{c: c}
	s.SetDefaults(defaultRPM, defaultConcurrency)
	return s
}

// Acquire is Account.Acquire against the shared counts: one round trip to
// the store, and one more to lower the count in flight when the request ends. A
// store that does not answer refuses the request (limits fail closed).
func (s *Shared) Acquire(ctx context.Context, accountID string, rpm, concurrency int) (release func(), err *apierr.Error) {
	rpm, concurrency = s.limits(rpm, concurrency)
	if rpm <= 0 && concurrency <= 0 {
		return noRelease, nil
	}
	a, cerr := s.c.Admit(ctx, accountID, rpm, concurrency)
	if cerr != nil {
		return nil, apierr.Internal(cerr)
	}
	if !a.Allowed {
		if a.Concurrency {
			return nil, refused("concurrency", concurrency, 0, a.RetryAfter)
		}
		return nil, refused("requests per minute", rpm, 0, a.RetryAfter)
	}
	if concurrency <= 0 {
		return noRelease, nil
	}
	var done atomic.Bool
	rctx := context.WithoutCancel(ctx)
	return func() {
		if !done.CompareAndSwap(false, true) {
			return
		}
		if s.release(rctx, accountID) != nil {
			// The store did not answer: try again off the request's path.
			// A release that never lands counts until this instance's
			// lease ends (a restart).
			go func() {
				for wait := time.Second; wait <= 16*time.Second; wait *= 2 {
					time.Sleep(wait)
					if s.release(rctx, accountID) == nil {
						return
					}
				}
			}()
		}
	}, nil
}

func (s *Shared) release(ctx context.Context, accountID string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.c.Release(ctx, accountID)
}
