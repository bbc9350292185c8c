package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// A store whose directory is removed, made read-only or filled keeps
// answering for a while: the journal and Badger's own log are open files,
// and Linux lets a process write to a file that no longer has a name.
// Nothing would be durable, and the next memtable flush fails forever. So
// a probe writes a small file beside the database every ProbeInterval;
// while it fails (or applying moves to Badger fails), the store refuses
// new money moves with store.ErrUnavailable: calls fail closed instead of
// being served with charges that will be lost.

// Defaults of Options.ProbeInterval and Options.CloseTimeout.
const (
	defaultProbeInterval = 2 * time.Second
	defaultCloseTimeout  = 10 * time.Second
	probeFile            = ".probe"
)

// health is what the probe and the apply loop found.
type health struct {
	dir      string // "" in memory
	probeErr atomic.Pointer[error]
	applyErr atomic.Pointer[error]
	stop     chan struct{}
	done     chan struct{}
}

func newHealth(dir string) *health {
	return &health{dir: dir, stop: make(chan struct{}), done: make(chan struct{})}
}

// failure is why the store cannot take money moves now, nil when it can.
func (h *health) failure() error {
	if p := h.probeErr.Load(); p != nil {
		return *p
	}
	if p := h.applyErr.Load(); p != nil {
		return *p
	}
	return nil
}

func setErr(p *atomic.Pointer[error], err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	e := fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	p.Store(&e)
}

// probe writes and removes a file in the database directory.
func (h *health) probe() error {
	if h.dir == "" {
		return nil
	}
	if _, err := os.Stat(h.dir); err != nil {
		return fmt.Errorf("the data directory %s is gone: %w", h.dir, err)
	}
	p := filepath.Join(h.dir, probeFile)
	if err := os.WriteFile(p, []byte{'.'}, 0o600); err != nil {
		return fmt.Errorf("the data directory %s refuses writes: %w", h.dir, err)
	}
	return os.Remove(p)
}

// loop probes until stop.
func (s *Store) probeLoop(every time.Duration) {
	h := s.health
	defer close(h.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		err := h.probe()
		was := h.probeErr.Load() != nil
		setErr(&h.probeErr, err)
		switch {
		case err != nil && !was:
			s.log.Error("the store stopped working; calls are refused until it recovers", "error", err)
		case err == nil && was:
			s.log.Info("the store works again")
		}
	}
}

// Check reports whether the store works: open, its directory writable,
// Badger taking the moves, and a read answering. It probes the directory
// itself rather than waiting for the loop.
func (s *Store) Check(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.health.probe(); err != nil {
		setErr(&s.health.probeErr, err)
		return s.health.failure()
	}
	if err := s.health.failure(); err != nil {
		return err
	}
	if j := s.books.j; j != nil {
		s.books.mu.Lock()
		broken := j.broken
		s.books.mu.Unlock()
		if broken != nil {
			return fmt.Errorf("%w: %v", store.ErrUnavailable, broken)
		}
	}
	return s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(journalKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		return err
	})
}

// Stats reports the open holds and the moves journaled but not yet in
// Badger.
func (s *Store) Stats() store.Stats {
	b := s.books
	b.mu.Lock()
	defer b.mu.Unlock()
	return store.Stats{OpenHolds: len(b.holds), JournalLag: b.seq - b.applied.Load()}
}

// refuseMoves is the check at the top of a new money move.
func (s *Store) refuseMoves() error { return s.health.failure() }

var (
	_ store.Checker       = (*Store)(nil)
	_ store.StatsReporter = (*Store)(nil)
)
