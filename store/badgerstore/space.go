package badgerstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tollgate-gw/tollgate/store"
)

// Badger writes through memory maps of files it sizes with truncate, so
// their pages are only found when first written: on a full disk such a
// write is a SIGBUS, which kills the process. Three things keep a full
// disk an error instead:
//
//   - Every Badger write the store makes (the applier's batches, the
//     short transactions, the value log's garbage collection) and every
//     money move first checks that the disk has margin bytes free beside
//     the reserve; below it they are refused with store.ErrUnavailable.
//   - The reserve is a file of real blocks (fallocate) in the database
//     directory. When the disk fills the store deletes it, so Badger's
//     own work already under way (a memtable flush, a compaction) finds
//     room; it is allocated again, and moves let in, once the disk has
//     room for it and the margin.
//   - Each memtable's write-ahead log is allocated for real as soon as
//     it appears, so the writes into it never find a hole.
//
// Only Linux has fallocate and statfs as used here; elsewhere the guard
// is off.

// DefaultReserve is the size of the reserve file (Options.Reserve).
const DefaultReserve = 32 << 20

const reserveFile = "reserve"

// walSize is how much of a memtable's log file is allocated: the
// memtable is full once its log passes memTableSize, and the last write
// group may run past it by a few batches (Badger's batch is 15% of the
// memtable).
func walSize(memTable int64) int64 { return memTable + memTable*45/100 }

// space is the disk guard of one store.
type space struct {
	dir     string
	reserve int64 // size of the reserve file; 0: none
	margin  int64 // free bytes wanted beside the reserve
	wal     int64 // bytes of each memtable log to allocate

	low atomic.Pointer[error] // why moves are refused; nil when there is room

	mu      sync.Mutex
	held    bool // the reserve file is allocated
	nextMem int  // first memtable file not yet allocated
}

// newSpace prepares the guard of dir: the logs of the memtables Badger
// opened are allocated, the reserve file created when there is room.
func newSpace(dir string, reserve, memTable int64) *space {
	sp := &space{dir: dir, reserve: reserve, wal: walSize(memTable), margin: walSize(memTable)}
	if reserve < 0 {
		sp.reserve = 0
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.nextMem = firstMemFid(dir)
	sp.allocateLogs()
	// Badger's discard statistics are a mapped file too (written by
	// compactions and value-log GC).
	if f, err := os.OpenFile(filepath.Join(dir, "DISCARD"), os.O_RDWR, 0); err == nil {
		if fi, err := f.Stat(); err == nil {
			_ = allocate(f, fi.Size())
		}
		f.Close()
	}
	if fi, err := os.Stat(sp.path()); err == nil && fi.Size() == sp.reserve && allocated(fi) >= sp.reserve {
		sp.held = true
	}
	sp.checkLocked()
	return sp
}

func (sp *space) path() string { return filepath.Join(sp.dir, reserveFile) }

// failure is why moves are refused for lack of space; nil when there is
// room.
func (sp *space) failure() error {
	if sp == nil {
		return nil
	}
	if p := sp.low.Load(); p != nil {
		return *p
	}
	return nil
}

// admit checks the disk right before a Badger write: nil when there is
// room, else the refusal (and the reserve is let go).
func (sp *space) admit() error {
	if sp == nil {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.checkLocked()
}

// wrote follows a Badger write: a memtable Badger opened for it gets its
// log allocated.
func (sp *space) wrote() {
	if sp == nil {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, err := os.Stat(memPath(sp.dir, sp.nextMem)); err == nil {
		sp.allocateLogs()
	}
}

// full records that a write failed for lack of space (the journal's
// write said so before a check did).
func (sp *space) full(err error) {
	if sp == nil || !errors.Is(err, errNoSpace) {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.refuse(0)
}

// checkLocked reads the free space and updates the state: below the
// margin, or without the reserve, moves are refused and the reserve is
// let go; with room for the reserve and the margin again, the reserve is
// allocated and moves let in.
func (sp *space) checkLocked() error {
	free, err := diskFree(sp.dir)
	if err != nil {
		return nil // unknown: the guard is off (not Linux)
	}
	if !sp.held && free >= sp.reserve+sp.margin {
		if sp.reserve == 0 || allocateFile(sp.path(), sp.reserve) == nil {
			sp.held = true
			free -= sp.reserve
		}
	}
	if !sp.held || free < sp.margin {
		return sp.refuse(free)
	}
	sp.allocateLogs() // a log left unallocated while the disk was full
	sp.low.Store(nil)
	return nil
}

// refuse lets the reserve go and records why moves are refused.
func (sp *space) refuse(free int64) error {
	if sp.held && sp.reserve > 0 {
		if err := os.Remove(sp.path()); err == nil || errors.Is(err, os.ErrNotExist) {
			sp.held = false
		}
	}
	// No path: this reaches /readyz.
	e := fmt.Errorf("%w: the disk of the data directory is full (%s free; the store wants %s free beside its reserve of %s before it writes)",
		store.ErrUnavailable, mb(free), mb(sp.margin), mb(sp.reserve))
	sp.low.Store(&e)
	return e
}

// allocateLogs allocates the log of every memtable from nextMem on that
// exists. A log that cannot be allocated (no space) is tried again at the
// next check.
func (sp *space) allocateLogs() {
	for {
		p := memPath(sp.dir, sp.nextMem)
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			// Gone already (flushed), or not there yet: look one further
			// only when a later one exists.
			if _, err2 := os.Stat(memPath(sp.dir, sp.nextMem+1)); err2 != nil {
				return
			}
			sp.nextMem++
			continue
		}
		fi, err := f.Stat()
		if err == nil {
			err = allocate(f, min(sp.wal, fi.Size()))
		}
		f.Close()
		if err != nil && !errors.Is(err, errUnsupported) {
			return
		}
		sp.nextMem++
	}
}

// firstMemFid is the lowest memtable file number in dir, 1 when none.
func firstMemFid(dir string) int {
	entries, _ := os.ReadDir(dir)
	first := 0
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), ".mem")
		if !ok {
			continue
		}
		if fid, err := strconv.Atoi(n); err == nil && (first == 0 || fid < first) {
			first = fid
		}
	}
	return max(first, 1)
}

// memPath is Badger's name for memtable fid's log.
func memPath(dir string, fid int) string { return filepath.Join(dir, fmt.Sprintf("%05d.mem", fid)) }

// allocateFile creates path with size bytes of real blocks; on failure
// nothing is left.
func allocateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = grow(f, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func mb(n int64) string {
	return strconv.FormatFloat(float64(max(n, 0))/(1<<20), 'f', 1, 64) + " MB"
}
