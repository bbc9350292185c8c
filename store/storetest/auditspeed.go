package storetest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// AuditBudget is how long an audit may take per million log rows.
const AuditBudget = 10 * time.Second

// AuditRows is how many billed calls RunAuditSpeed seeds: $TOLLGATE_AUDIT_ROWS,
// else def (a million is the budget's own measure; `make bench-audit`).
func AuditRows(t testing.TB, def int) int {
	v := os.Getenv("TOLLGATE_AUDIT_ROWS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("TOLLGATE_AUDIT_ROWS=%q: want a whole number of rows, 1 or more", v)
	}
	return n
}

// SeedBilled makes n billed calls through the store, as the gateway does:
// each a hold placed and settled with its row, spread over accounts
// credited enough, from workers goroutines at once.
func SeedBilled(ctx context.Context, s store.Store, n, accounts, workers int) error {
	cost, held := money.MustParse("0.0012345"), money.MustParse("0.01")
	for i := range accounts {
		a := store.Account{ID: fmt.Sprintf("seed-%03d", i), Status: store.AccountActive, CreatedAt: t0}
		if err := s.CreateAccount(ctx, a, money.Credits(1_000_000), "seeded"); err != nil {
			return err
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				h := hold(fmt.Sprintf("seed-%03d", i%accounts), "req-seed-"+strconv.Itoa(i), held)
				if _, err := s.PlaceHold(ctx, h); err != nil {
					errs <- fmt.Errorf("hold %d: %w", i, err)
					return
				}
				if err := s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cost, Row: rowFor(h, cost)}); err != nil {
					errs <- fmt.Errorf("settle %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// RunAuditSpeed seeds rows billed calls into s (seed: SeedBilled, or a
// backend's faster writer of the same moves) and audits them: the books
// must pass, and the audit take under AuditBudget of CPU per million rows,
// this process's and the database server's (serverCPU, nil for none),
// times slow (how much slower the build runs: Slowdown).
func RunAuditSpeed(t *testing.T, s store.Store, rows int, slow float64, serverCPU func() time.Duration,
	seed func(ctx context.Context, n int) error) {
	if serverCPU == nil {
		serverCPU = func() time.Duration { return 0 }
	}
	ctx := context.Background()
	start := time.Now()
	if err := seed(ctx, rows); err != nil {
		t.Fatalf("seeding %d billed calls: %v", rows, err)
	}
	t.Logf("seeded %d billed calls in %s", rows, time.Since(start).Round(time.Millisecond))
	runtime.GC() // the seeding's garbage is not the audit's
	start, cpu0, server0 := time.Now(), cpuTime(t), serverCPU()
	rep, err := audit.Run(ctx, s, audit.Options{})
	took, cpu, server := time.Since(start), cpuTime(t)-cpu0, serverCPU()-server0
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Rows != int64(rows) {
		t.Fatalf("audit of %d seeded rows read %d: %s", rows, rep.Rows, violations(rep))
	}
	perMillion := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * 1e6 / float64(rows)).Round(time.Millisecond)
	}
	t.Logf("audit of %d rows, %d entries, %d accounts: %s wall, %s of CPU here and %s in the server "+
		"(per million rows: %s wall, %s of CPU)", rep.Rows, rep.Entries, rep.Accounts, took.Round(time.Millisecond),
		cpu.Round(time.Millisecond), server.Round(time.Millisecond), perMillion(took), perMillion(cpu+server))
	// The budget holds the CPU spent (the audit, and the store's own
	// background work beside it): on a shared machine the wall clock also
	// counts the time spent waiting for a core.
	if budget := time.Duration(float64(AuditBudget) * slow); perMillion(cpu+server) > budget {
		t.Errorf("the audit takes %s of CPU per million rows, over the budget of %s", perMillion(cpu+server), budget)
	}
}

// cpuTime is the CPU time the process has spent, user and system.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
