// Package badgerstore is the embedded store.Store, on Badger.
//
// Money moves (holds, settlements, credits, new accounts) are decided in
// memory and written to a journal before the call returns; one goroutine
// applies them to Badger in batches (money.go, journal.go). Other writes
// are short transactions retried on conflict. docs/store.md has the key
// layout and the durability rules.
package badgerstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/store"
)

// Options configure Open.
type Options struct {
	// Logger receives Badger's own messages: errors and warnings as such,
	// its chatty info lines at debug. Nil discards them.
	Logger hclog.Logger
	// Strict fsyncs every money move's journal record before the call
	// returns (one fsync for all the calls waiting: group commit), and
	// every other commit.
	Strict bool
	// InMemory keeps everything in memory (tests); dir is ignored.
	InMemory bool
	// GCInterval is how often the value log is garbage collected;
	// 0 means every 10 minutes. Ignored InMemory.
	GCInterval time.Duration
	// ProbeInterval is how often the data directory is checked for
	// writes (health.go); 0 means every 2 seconds.
	ProbeInterval time.Duration
	// CloseTimeout bounds Close: a database that cannot flush (its
	// directory is gone) is left behind after it, with its journal kept
	// for the next start; 0 means 10 seconds.
	CloseTimeout time.Duration
	// Reserve is the size of the file of real blocks kept in the database
	// directory and let go when the disk fills, so that Badger's work
	// under way finds room (space.go); 0 means DefaultReserve, negative
	// none. Ignored InMemory.
	Reserve int64

	memTableSize int64         // tests shrink it to reach ErrTxnTooBig
	applyDelay   time.Duration // tests lengthen it to gather big batches
	segmentMax   int64         // tests shrink it to rotate the journal often
}

const (
	maxConflictRetries = 16
	maxBatch           = 256
	seqBandwidth       = 10000
)

// Store is a store.Store on one Badger database.
type Store struct {
	db  *badger.DB
	log hclog.Logger

	logSeq, ledgerSeq *badger.Sequence

	// mu guards closed. Calls hold it shared while they touch db; Close
	// takes it exclusively so no call is inside db when it closes.
	mu     sync.RWMutex
	closed bool

	cache  *readCache
	books  *books
	txnFit txnFit // the applier's transactions' size (txnfit.go)

	// kbMu serializes knowledge-base writes, so page changes commit in
	// the order of their numbers (kb.go).
	kbMu sync.Mutex
	// signInMu serializes failed sign-in counts: an attack hammers one
	// record, and retrying conflicts would lose counts (sessions.go).
	signInMu sync.Mutex

	stopGC chan struct{}
	gcDone chan struct{}

	health       *health
	closeTimeout time.Duration

	// run names this open of the store: the owner of the holds it
	// places (books.go).
	run string
}

// Open opens (creating if needed) the database in dir.
func Open(dir string, o Options) (*Store, error) {
	lg := o.Logger
	if lg == nil {
		lg = hclog.NewNullLogger()
	}
	memTable := int64(4 << 20)
	if o.memTableSize > 0 {
		memTable = o.memTableSize
	}
	bo := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{lg}).
		WithSyncWrites(o.Strict).
		WithMetricsEnabled(false).
		WithNumCompactors(2).
		// Sized for a gateway, not a database server: Badger's defaults
		// (64 MB memtables x5, a 256 MB block cache) would dominate RSS.
		// Without compression, tables are read in place from their memory
		// maps, so a block cache would only copy them (Badger's advice).
		WithMemTableSize(memTable).
		WithNumMemtables(2).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		// Every level's tables 1 MB: a compaction keeps up to
		// 8+splits table builders of twice the table size, and Badger's
		// pool keeps 8 of them, so tables that doubled per level made
		// memory grow with the ledger's depth (a 30-minute soak: +180 MB).
		WithBaseTableSize(1 << 20).
		WithValueLogFileSize(256 << 20).
		// Rows with a large technical view go to the value log, so index
		// scans read compact LSM tables.
		WithValueThreshold(1 << 10)
	bo.TableSizeMultiplier = 1 // no With method for it
	if o.InMemory {
		// No value log in memory: every value sits in the LSM tree, so
		// the threshold is the largest value (a long knowledge page).
		bo = bo.WithDir("").WithValueDir("").WithInMemory(true).WithValueThreshold(512 << 10)
	}
	if !o.InMemory {
		if err := dropEmptyValueLogs(dir, lg); err != nil {
			return nil, err
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		return nil, err
	}
	s := &Store{
		db: db, log: lg, cache: newReadCache(), books: newBooks(o.applyDelay), txnFit: newTxnFit(bo),
		stopGC: make(chan struct{}),
		gcDone: make(chan struct{}),
		health: newHealth(dir), closeTimeout: o.CloseTimeout,
		run: newRun(),
	}
	if o.InMemory {
		s.health.dir = ""
	} else {
		reserve := o.Reserve
		if reserve == 0 {
			reserve = DefaultReserve
		}
		s.health.space = newSpace(dir, reserve, memTable)
		s.books.space = s.health.space
		public, _ := s.health.probe()
		setErr(&s.health.probeErr, public)
	}
	if s.closeTimeout <= 0 {
		s.closeTimeout = DefaultCloseTimeout
	}
	if s.logSeq, err = db.GetSequence(seqLogKey, seqBandwidth); err == nil {
		s.ledgerSeq, err = db.GetSequence(seqLedgerKey, seqBandwidth)
	}
	if err == nil {
		err = s.recoverBooks(dir, o)
	}
	if err == nil {
		err = s.indexLogValues()
	}
	if err == nil {
		err = s.indexTaskCollections()
	}
	if err != nil {
		if s.logSeq != nil {
			_ = s.logSeq.Release()
		}
		if s.ledgerSeq != nil {
			_ = s.ledgerSeq.Release()
		}
		db.Close()
		return nil, err
	}
	go s.applyLoop()
	probe := o.ProbeInterval
	if probe <= 0 {
		probe = defaultProbeInterval
	}
	go s.probeLoop(probe)
	if o.InMemory {
		close(s.gcDone)
	} else {
		every := o.GCInterval
		if every <= 0 {
			every = 10 * time.Minute
		}
		go s.gcLoop(every)
	}
	return s, nil
}

// Close finishes pending money moves, stops the maintenance goroutines and
// closes the database. Later calls return store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	close(s.health.stop)
	<-s.health.done
	// Bounded: Badger retries a failed memtable flush forever (a removed
	// data directory), and the process must still end. What was journaled
	// and not applied stays in the journal for the next start.
	done := make(chan error, 1)
	go func() { done <- s.close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(s.closeTimeout):
		return fmt.Errorf("badgerstore: the database did not close within %s (%v); left behind, the journal is kept for the next start", s.closeTimeout, s.health.failure())
	}
}

func (s *Store) close() error {
	b := s.books
	close(b.stop)
	<-b.done
	var err error
	if b.j != nil {
		// Every move is in Badger now, unless applying failed: then the
		// journal stays for the next start.
		err = b.j.close(b.applied.Load() == b.seq)
	}
	close(s.stopGC)
	<-s.gcDone
	// Release hands back the unused part of each lease, so a clean
	// restart leaves no gap in the ids.
	err = errors.Join(err, s.logSeq.Release(), s.ledgerSeq.Release())
	return errors.Join(err, s.db.Close())
}

// recoverBooks applies the journal's records that Badger lacks, starts a
// fresh journal and loads the open holds.
func (s *Store) recoverBooks(dir string, o Options) error {
	b := s.books
	var applied uint64
	err := s.db.View(func(txn *badger.Txn) error {
		err := get(txn, journalKey, func(v []byte) error {
			if len(v) != 8 {
				return errCorrupt
			}
			applied = binary.BigEndian.Uint64(v)
			return nil
		})
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	// The books begin (once) with Badger's state before any replay; the
	// replayed moves then add their own entries.
	if err := s.carryBooks(applied); err != nil {
		return err
	}
	prevRun, err := s.startRun()
	if err != nil {
		return err
	}
	b.seq = applied
	if !o.InMemory {
		j, recs, err := openJournal(filepath.Join(dir, journalDirName), o.Strict, applied)
		if err != nil {
			return fmt.Errorf("badgerstore: journal: %w", err)
		}
		if o.segmentMax > 0 {
			j.segmentMax = o.segmentMax
		}
		var es []*entry
		for _, r := range recs {
			if r.seq != b.seq+1 {
				s.log.Error("journal has a gap; records after it are not applied", "after", b.seq, "next", r.seq)
				break
			}
			e, err := replayEntry(r, prevRun)
			if err != nil {
				return fmt.Errorf("badgerstore: journal record %d: %w", r.seq, err)
			}
			es = append(es, e)
			b.seq = r.seq
		}
		if len(es) > 0 {
			if err := s.health.space.admit(); err != nil {
				return fmt.Errorf("badgerstore: replaying the journal: %w", err)
			}
		}
		for len(es) > 0 {
			n, err := s.applyEntries(es[:min(len(es), 4096)])
			if err != nil {
				return fmt.Errorf("badgerstore: replaying the journal: %w", err)
			}
			es = es[n:]
		}
		if len(recs) > 0 {
			s.log.Info("journal replayed", "records", len(recs))
		}
		if err := j.start(b.seq + 1); err != nil {
			return fmt.Errorf("badgerstore: journal: %w", err)
		}
		b.j = j
	}
	b.applied.Store(b.seq)
	return s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, []byte(pHold), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				h, err := decodeHold(v)
				b.holds[h.ID] = &h
				b.heldByKey(h)
				return err
			})
		})
	})
}

func (s *Store) gcLoop(every time.Duration) {
	defer close(s.gcDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopGC:
			return
		case <-t.C:
			n := 0
			for s.health.space.admit() == nil && s.db.RunValueLogGC(0.5) == nil {
				n++
			}
			if n > 0 {
				s.log.Debug("value log gc", "rewritten", n)
			}
		}
	}
}

// enter takes the shared lock unless the store is closed; callers defer
// s.mu.RUnlock when it returns nil.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	return nil
}

// view runs a read-only transaction.
func (s *Store) view(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return s.db.View(fn)
}

// update runs fn in a read-write transaction, again on a conflict, a
// bounded number of times. fn must only read and build writes: it runs
// once per attempt.
func (s *Store) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.health.space.admit(); err != nil {
		return err
	}
	defer s.health.space.wrote()
	var err error
	for range maxConflictRetries {
		if err = s.db.Update(fn); !errors.Is(err, badger.ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("badgerstore: gave up after %d conflicts: %w", maxConflictRetries, err)
}

// get calls fn with the value under k, or returns store.ErrNotFound.
func get(txn *badger.Txn, k []byte, fn func(v []byte) error) error {
	it, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	return it.Value(fn)
}

func exists(txn *badger.Txn, k []byte) (bool, error) {
	_, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// scanPrefix calls fn for every key under prefix in key order.
func scanPrefix(txn *badger.Txn, prefix []byte, values bool, fn func(it *badger.Item) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: values, PrefetchSize: 64})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := fn(it.Item()); err != nil {
			return err
		}
	}
	return nil
}

// badgerLogger routes Badger's printf logging to hclog.
type badgerLogger struct{ l hclog.Logger }

func msg(format string, args []any) string {
	return strings.TrimSpace(fmt.Sprintf(format, args...))
}

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l.IsError() {
		b.l.Error(msg(f, a))
	}
}

func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l.IsWarn() {
		b.l.Warn(msg(f, a))
	}
}

func (b badgerLogger) Infof(f string, a ...any) {
	if b.l.IsDebug() {
		b.l.Debug(msg(f, a))
	}
}

func (b badgerLogger) Debugf(f string, a ...any) {
	if b.l.IsTrace() {
		b.l.Trace(msg(f, a))
	}
}

var _ store.Store = (*Store)(nil)
