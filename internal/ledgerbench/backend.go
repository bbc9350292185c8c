package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/internal/ledgerseed"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
	"github.com/tollgate-gw/tollgate/store/pgstore"
)

// Backends the benchmark runs on.
const (
	Badger   = "badger"
	Postgres = "postgres"
)

// backend is one store under measurement and what differs between them:
// how rows are seeded, how background work settles, what the disk holds
// and what CPU the database spends outside this process.
type backend struct {
	st    store.Store
	close func() error
	// seed writes rows [from, to) of total.
	seed func(ctx context.Context, from, to, total int, start, end time.Time, keys []store.Key, progress func(int)) error
	// settle waits for or runs the store's background work (Badger's
	// compactions; PostgreSQL's VACUUM ANALYZE, whose statistics the
	// planner needs to pick the logs indexes).
	settle    func(ctx context.Context) error
	diskBytes func(ctx context.Context) int64
	// serverCPU is the CPU the database server has used so far (0 for
	// the embedded store, whose work is this process's).
	serverCPU func() time.Duration
}

func openBackend(ctx context.Context, c *Config, dir string) (*backend, error) {
	switch c.Backend {
	case "", Badger:
		st, err := badgerstore.Open(dir, badgerstore.Options{})
		if err != nil {
			return nil, err
		}
		return &backend{
			st: st, close: st.Close,
			seed: func(ctx context.Context, from, to, total int, start, end time.Time, keys []store.Key, progress func(int)) error {
				return ledgerseed.Seed(ctx, st, from, to, total, c.Workers, start, end, acctID, keys, progress)
			},
			settle:    func(context.Context) error { quiesce(c); return nil },
			diskBytes: func(context.Context) int64 { return dirSize(dir) },
			serverCPU: func() time.Duration { return 0 },
		}, nil
	case Postgres:
		if c.PostgresURL == "" {
			return nil, fmt.Errorf("no PostgreSQL URL")
		}
		st, err := pgstore.Open(ctx, pgstore.Options{URL: c.PostgresURL})
		if err != nil {
			return nil, err
		}
		b := &backend{st: st, close: st.Close, serverCPU: func() time.Duration { return testpg.GroupCPU(c.PostgresPID) }}
		b.seed = func(ctx context.Context, from, to, total int, start, end time.Time, keys []store.Key, progress func(int)) error {
			return copySeed(ctx, st, from, to, total, start, end, keys, progress)
		}
		b.settle = func(ctx context.Context) error {
			t0 := time.Now()
			err := sql(ctx, c.PostgresURL, "VACUUM ANALYZE", nil)
			c.logf("VACUUM ANALYZE took %s", time.Since(t0).Round(time.Millisecond))
			return err
		}
		b.diskBytes = func(ctx context.Context) int64 {
			var n int64
			_ = sql(ctx, c.PostgresURL, "SELECT pg_database_size(current_database())", &n)
			return n
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown backend %q (badger or postgres)", c.Backend)
}

// copySeed loads rows through pgstore.ImportRows (COPY), from 4 writers:
// a million rows settled one by one would take minutes and measure only
// the seeding; the chat path is measured on its own.
func copySeed(ctx context.Context, st *pgstore.Store, from, to, total int, start, end time.Time, keys []store.Key, progress func(int)) error {
	const chunk, workers = 5000, 4
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	var done atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows := make([]store.LogRow, 0, chunk)
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= to || ctx.Err() != nil {
					return
				}
				rows = rows[:0]
				for i := lo; i < min(lo+chunk, to); i++ {
					rows = append(rows, ledgerseed.RowAt(i, total, start, end, acctID, keys))
				}
				if err := st.ImportRows(ctx, rows); err != nil {
					once.Do(func() { first = fmt.Errorf("seed rows %d..: %w", lo, err) })
					return
				}
				if n := done.Add(int64(len(rows))); progress != nil && n%100_000 < chunk {
					progress(from + int(n))
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// sql runs one statement on its own connection, scanning into dst when
// given.
func sql(ctx context.Context, url, q string, dst any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if dst != nil {
		return conn.QueryRow(ctx, q).Scan(dst)
	}
	_, err = conn.Exec(ctx, q)
	return err
}
