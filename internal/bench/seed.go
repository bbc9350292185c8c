package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// SeedRows writes n success rows of key's account straight into the store,
// as row-only settlements (no hold, charge 0), spread over the last 30
// days. Writers run in parallel so the store's group commit batches them.
func SeedRows(ctx context.Context, st store.Store, key benchKey, n int, now time.Time) error {
	const writers = 64
	var next atomic.Int64
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	span := 30 * 24 * time.Hour
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				at := now.Add(-span + time.Duration(i)*span/time.Duration(n))
				row := &store.LogRow{
					AccountID: key.AccountID, CreatedAt: at, SubmittedAt: at.Add(-300 * time.Millisecond),
					KeyID: key.KeyID, KeyName: key.Name, KeyPrefix: key.Prefix, Model: Model,
					Status: store.StatusSuccess, InputTokens: 20, OutputTokens: 16,
					LatencyMS: 300, RequestID: fmt.Sprintf("seed-%d", i),
				}
				if err := st.Settle(ctx, store.Settlement{Row: row}); err != nil {
					errs <- fmt.Errorf("seed row %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// seeded stops the default gateway, seeds its store, restarts it and
// measures the completions case at c=64 again, interleaved with the
// direct call and the proxy.
func (e *env) seeded(ctx context.Context, res *Results) error {
	g := e.gateway
	g.p.stop()
	t0 := time.Now()
	data := filepath.Join(e.dir, "gateway")
	st, err := badgerstore.Open(filepath.Join(data, "badger"), badgerstore.Options{})
	if err != nil {
		return fmt.Errorf("open the gateway's store to seed it: %w", err)
	}
	err = SeedRows(ctx, st, g.key, e.o.SeedRows, time.Now())
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	took := time.Since(t0)
	fmt.Fprintf(e.o.Log, "seeded %d log rows in %s\n", e.o.SeedRows, took.Round(time.Millisecond))
	if err := e.launch(g, "gateway", data); err != nil {
		return err
	}
	cases := e.cases([]string{"completions"})
	if len(cases) == 0 {
		return nil
	}
	if err := e.probe(ctx, cases); err != nil {
		return err
	}
	// A bulk load leaves Badger compacting for a while; measure the
	// steady state, not the compaction.
	if err := e.waitQuiet(ctx, time.Minute); err != nil {
		return err
	}
	client := NewClient(64)
	e.warmUp(ctx, cases, client, 64)
	acc := &caseAcc{}
	for round := 1; round <= e.o.Rounds; round++ {
		if err := e.round(ctx, cases[0], 64, round, client, acc, tInProcess); err != nil {
			return err
		}
	}
	rss, err := e.proc.TreePeakRSS(g.p.pid())
	if err != nil {
		return err
	}
	anon, err := e.proc.TreeRssAnon(g.p.pid())
	if err != nil {
		return err
	}
	r := acc.result(cases[0].Case, 64, rss)
	r.SeededRows = e.o.SeedRows
	res.Cases = append(res.Cases, r)
	res.Notes = append(res.Notes, fmt.Sprintf("Large-ledger check: %d log rows written straight into the store (%.0f rows/s), the gateway restarted on them and left to finish compacting; then its peak RSS was %.1f MB (mapped files included), its anonymous memory after the windows %.1f MB (not part of the budget lines above).",
		e.o.SeedRows, float64(e.o.SeedRows)/took.Seconds(), float64(rss)/(1<<20), float64(anon)/(1<<20)))
	return nil
}

// waitQuiet waits until the gateway's processes use under a fifth of a
// core over half a second, or until limit has passed.
func (e *env) waitQuiet(ctx context.Context, limit time.Duration) error {
	const step = 500 * time.Millisecond
	deadline := time.Now().Add(limit)
	prev, err := e.proc.TreeCPU(e.gateway.p.pid())
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
		cur, err := e.proc.TreeCPU(e.gateway.p.pid())
		if err != nil {
			return err
		}
		if cur.Total()-prev.Total() < step/5 {
			return nil
		}
		prev = cur
	}
	fmt.Fprintf(e.o.Log, "gateway still busy after %s (store compaction); measuring anyway\n", limit)
	return nil
}
