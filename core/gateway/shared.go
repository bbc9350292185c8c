package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/pgstore"
)

// A postgres store is shared by several instances (docs/store.md): the
// instances must seal keys and sign file links with one master key, their
// account limits count in the store, the task engine shares tasks with the
// others, and expired holds are swept while the gateway runs, not only at
// start.

// sharedKeyProblem refuses a postgres store without a master key given to
// every instance alike (config check and serve).
func sharedKeyProblem(cfg *config.Config) error {
	if cfg.Store.Postgres() && cfg.Server.MasterKey == "" && os.Getenv("TOLLGATE_MASTER_KEY") == "" {
		return cfg.Refuse(config.Ref{Kind: "store"},
			"a postgres store is shared by instances that must seal keys and sign file links with one master key: set server { master_key } or $TOLLGATE_MASTER_KEY (64 hex characters) alike on every instance")
	}
	return nil
}

// openPostgres opens the store "postgres" block's database, migrating it.
func (g *Gateway) openPostgres(ctx context.Context) (store.Store, error) {
	if err := sharedKeyProblem(g.cfg); err != nil {
		return nil, err
	}
	return pgstore.Open(ctx, pgstore.Options{
		URL: g.cfg.Store.URL, Logger: g.log.Named("store"), Lease: g.cfg.Store.Lease,
	})
}

// sweepHolds runs Recover every half lease until stop closes: the holds
// of an instance that died are released once its lease has ended, by
// whichever instance takes the sweep lock first.
func sweepHolds(st store.Store, sh store.Shared, now func() time.Time, log hclog.Logger, stop <-chan struct{}) {
	every := max(sh.Lease()/2, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		n, err := Recover(ctx, st, now)
		cancel()
		switch {
		case err != nil:
			log.Error("releasing the holds of lapsed instances failed; the next sweep retries", "error", err)
		case n > 0:
			log.Warn("released the holds of an instance whose lease ended", "count", n)
		}
	}
}

// limiter is the account limits as the gateway holds them: a reload
// replaces their defaults.
type limiter interface {
	pipeline.Limiter
	SetDefaults(rpm, concurrency int)
}

// limiter counts the account limits in the store when it is shared, so
// they hold in total across instances; in memory otherwise.
func (g *Gateway) limiter() limiter {
	l := g.cfg.Limits
	if c, ok := g.store.(ratelimit.Counter); ok {
		return ratelimit.NewShared(c, l.RPM, l.Concurrency)
	}
	return ratelimit.NewAccount(l.RPM, l.Concurrency, g.now)
}

// taskLease is the task engine's lease: a shared store's (an instance's
// tasks and holds lapse together), else the engine's default.
func taskLease(st store.Store) time.Duration {
	if sh, ok := st.(store.Shared); ok {
		return sh.Lease()
	}
	return 0
}

// kbIndexPath is where this instance keeps its knowledge-base search
// index: <dir>/kb.bleve. Instances of a shared store may share a data
// directory (for the hosted files), and each needs an index of its own
// (bleve would wait forever on another's lock), so on a shared store each
// takes the first of kb.bleve, kb-1.bleve, ... whose lock file no running
// process holds; an index left by an earlier run is caught up from the
// store's change log, not rebuilt. The lock is held until cleanup.
func (g *Gateway) kbIndexPath() (string, error) {
	dir := g.cfg.Store.Dir
	if _, ok := g.store.(store.Shared); !ok {
		return filepath.Join(dir, "kb.bleve"), nil
	}
	for i := 0; i < 64; i++ {
		path := filepath.Join(dir, "kb.bleve")
		if i > 0 {
			path = filepath.Join(dir, fmt.Sprintf("kb-%d.bleve", i))
		}
		f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return "", err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		g.onCleanup(f.Close) // closing releases the lock
		return path, nil
	}
	return "", fmt.Errorf("no free knowledge-base index slot in %s (64 instances share it?)", dir)
}
