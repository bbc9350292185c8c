package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// A store whose directory is removed, made read-only or filled keeps
// answering for a while: the journal and Badger's own log are open files,
// and Linux lets a process write to a file that no longer has a name.
// Nothing would be durable, and the next memtable flush fails forever. So
// one goroutine checks the disk's free space (space.go) every
// spaceInterval and writes a small file beside the database every
// ProbeInterval; while either fails (or applying moves to Badger fails),
// the store refuses money moves with store.ErrUnavailable: calls fail
// closed instead of being served with charges that will be lost. Check
// answers from what that goroutine found, so probes cost nothing and
// cannot race.

// Defaults of Options.ProbeInterval and Options.CloseTimeout (the gateway
// counts the latter in the longest a stop takes).
const (
	defaultProbeInterval = 2 * time.Second
	DefaultCloseTimeout  = 10 * time.Second
	spaceInterval        = 200 * time.Millisecond
	probePattern         = ".probe-*"
)

// health is what the probe and the apply loop found.
type health struct {
	dir      string // "" in memory
	space    *space // nil in memory
	probeMu  sync.Mutex
	probeErr atomic.Pointer[error]
	applyErr atomic.Pointer[error]
	stop     chan struct{}
	done     chan struct{}
	back     chan struct{} // nudged when the store works again
}

func newHealth(dir string) *health {
	return &health{dir: dir, stop: make(chan struct{}), done: make(chan struct{}), back: make(chan struct{}, 1)}
}

// failure is why the store cannot take money moves now, nil when it can.
// Its text names no file: it reaches /readyz.
func (h *health) failure() error {
	if p := h.probeErr.Load(); p != nil {
		return *p
	}
	if err := h.space.failure(); err != nil {
		return err
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
	e := err
	if !errors.Is(err, store.ErrUnavailable) {
		e = fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	p.Store(&e)
}

// probe writes, syncs and removes a file of its own in the database
// directory. It returns the error to show (no path in it) and the one to
// log.
func (h *health) probe() (public, detail error) {
	if h.dir == "" {
		return nil, nil
	}
	h.probeMu.Lock()
	defer h.probeMu.Unlock()
	if _, err := os.Stat(h.dir); err != nil {
		return errors.New("the data directory is gone"), err
	}
	f, err := os.CreateTemp(h.dir, probePattern)
	if err == nil {
		_, err = f.Write([]byte{'.'})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if rerr := os.Remove(f.Name()); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("the data directory refuses writes: %v", bare(err)), err
	}
	return nil, nil
}

// bare is err without the path a file operation adds.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// probeLoop checks the disk every spaceInterval and probes the directory
// every `every`, until stop; it logs when the store stops and starts
// working.
func (s *Store) probeLoop(every time.Duration) {
	h := s.health
	defer close(h.done)
	t := time.NewTicker(min(every, spaceInterval))
	defer t.Stop()
	lastProbe := time.Now()
	was := h.failure()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		_ = h.space.admit()
		if time.Since(lastProbe) >= every {
			lastProbe = time.Now()
			public, detail := h.probe()
			setErr(&h.probeErr, public)
			if detail != nil && h.probeErr.Load() != nil {
				s.log.Debug("the store's probe failed", "error", detail)
			}
		}
		now := h.failure()
		switch {
		case now != nil && was == nil:
			s.log.Error("the store stopped working; money moves are refused until it recovers", "error", now, "dir", h.dir)
		case now == nil && was != nil:
			s.log.Info("the store works again")
			nudge(h.back)
		}
		was = now
	}
}

// Check reports whether the store works: open, its disk with room, its
// directory writable, Badger taking the moves, and a read answering. The
// disk and the directory are as the last periodic check found them.
func (s *Store) Check(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.health.failure(); err != nil {
		return err
	}
	if j := s.books.j; j != nil {
		s.books.mu.Lock()
		broken := j.broken
		s.books.mu.Unlock()
		if broken != nil {
			return fmt.Errorf("%w: the journal is unusable after a failed write", store.ErrUnavailable)
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

// refuseMoves is the check at the top of a money move.
func (s *Store) refuseMoves() error { return s.health.failure() }

var (
	_ store.Checker       = (*Store)(nil)
	_ store.StatsReporter = (*Store)(nil)
)
