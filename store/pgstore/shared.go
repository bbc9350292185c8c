package pgstore

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// Each instance holds a lease in the instances table, renewed every third
// of its length on the database's clock (instances' clocks never compare).
// The holds and in-flight counts an instance takes name it and are live
// while its lease runs: a crashed instance's holds are left alone until
// then, and released afterwards, by one sweeper at a time (an advisory
// lock), each exactly once (the settlement deletes the hold). A renewal
// that finds its row gone (tidied away after a long outage) writes it
// again. The calls an instance served while its lease lapsed may find
// their holds released by a sweep: they are charged late (lateSQL).

// Lease implements store.Shared.
func (s *Store) Lease() time.Duration { return s.lease }

// renew extends this instance's lease.
func (s *Store) renew(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO instances (id, lease_until)
		VALUES ($1, now() + $2 * interval '1 millisecond')
		ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until`,
		s.instance, s.lease.Milliseconds())
	return err
}

// tidyEvery is how often the maintenance pass runs (by one instance).
const tidyEvery = time.Minute

// heartbeat renews the lease until the store closes, and runs the
// maintenance pass now and then. While the database does not answer, or
// holds wait in doubt, it tries again every retryEvery rather than every
// third of the lease, so that the lease is renewed and the doubtful holds
// released within a moment of the database answering again.
func (s *Store) heartbeat() {
	defer s.wg.Done()
	t := time.NewTimer(s.lease / 3)
	defer t.Stop()
	failing := false
	lastTidy := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.lease/3)
		err := s.renew(ctx)
		if err == nil && s.inDoubt() > 0 {
			err = s.releaseDoubts(ctx)
		}
		if err == nil && time.Since(lastTidy) >= tidyEvery {
			lastTidy = time.Now()
			if terr := s.tidy(ctx); terr != nil {
				s.log.Warn("store maintenance failed", "error", terr)
			}
		}
		cancel()
		switch {
		case err != nil && !failing:
			s.log.Error("cannot renew this instance's lease in the store; its calls stop placing holds once it lapses", "instance", s.instance, "lease", s.lease, "error", err)
			failing = true
		case err == nil && failing:
			s.log.Info("lease renewed again", "instance", s.instance)
			failing = false
		}
		next := s.lease / 3
		if failing || s.inDoubt() > 0 {
			next = min(next, retryEvery)
		}
		t.Reset(next)
	}
}

// retryEvery is the heartbeat's pace while the database does not answer.
const retryEvery = 250 * time.Millisecond

// SweepExpiredHolds implements store.Shared.
func (s *Store) SweepExpiredHolds(ctx context.Context, fn func(ctx context.Context, holds []store.Hold) error) (bool, error) {
	if err := s.enter(ctx); err != nil {
		return false, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, s.fail(err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockSpace, lockSweep).Scan(&locked); err != nil {
		return false, s.fail(err)
	}
	if !locked {
		return false, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, lockSpace, lockSweep)
	}()
	rows, err := conn.Query(ctx, `SELECT `+holdCols+` FROM holds h
		WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = h.owner AND i.lease_until >= now())
		ORDER BY h.submitted_at, h.id`)
	if err != nil {
		return true, s.fail(err)
	}
	holds, err := scanHolds(rows)
	if err != nil {
		return true, s.fail(err)
	}
	if len(holds) == 0 {
		return true, nil
	}
	return true, fn(context.WithValue(ctx, sweepKey{}, true), holds)
}

// tidy deletes what no one needs any more, by one instance at a time:
// in-flight counts of lapsed instances, buckets past the window, instances
// gone for a day without holds, idempotency records an hour past their
// end.
func (s *Store) tidy(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockSpace, lockTidy).Scan(&locked); err != nil || !locked {
		return err
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, lockSpace, lockTidy)
	}()
	_, err = conn.Exec(ctx, `
		DELETE FROM rate_inflight r WHERE NOT EXISTS
			(SELECT 1 FROM instances i WHERE i.id = r.owner AND i.lease_until >= now());
		DELETE FROM rate_buckets WHERE second < extract(epoch FROM now())::bigint - 120;
		DELETE FROM instances i WHERE lease_until < now() - interval '1 day'
			AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.owner = i.id);`)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `DELETE FROM idempotency WHERE expires_at < $1`, ns(time.Now().Add(-time.Hour)))
	return err
}

var _ store.Shared = (*Store)(nil)
