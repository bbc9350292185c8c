package pgstore

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/ratelimit"
)

// The account limits live in two unlogged tables of counters, rate_buckets
// (requests per account and second) and rate_inflight (requests in flight
// per account and instance), updated by the function tollgate_admit in one
// round trip per request, and by one UPDATE when a request ends
// (migrations/0001_init.sql; docs/decisions.md has the algorithm and its
// error).

// Admit implements ratelimit.Counter.
func (s *Store) Admit(ctx context.Context, accountID string, rpm, concurrency int) (ratelimit.Admission, error) {
	if err := s.enter(ctx); err != nil {
		return ratelimit.Admission{}, err
	}
	var a ratelimit.Admission
	var retryMS int64
	err := s.pool.QueryRow(ctx, `SELECT allowed, by_concurrency, retry_ms FROM tollgate_admit($1, $2, $3, $4)`,
		txt(accountID), s.instance, rpm, concurrency).Scan(&a.Allowed, &a.Concurrency, &retryMS)
	a.RetryAfter = time.Duration(retryMS) * time.Millisecond
	return a, s.fail(err)
}

// Release implements ratelimit.Counter: this instance has one request of
// the account fewer in flight.
func (s *Store) Release(ctx context.Context, accountID string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `UPDATE rate_inflight SET n = n - 1 WHERE account_id = $1 AND owner = $2 AND n > 0`,
		txt(accountID), s.instance)
	return s.fail(err)
}

var _ ratelimit.Counter = (*Store)(nil)
