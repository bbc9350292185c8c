package badgerstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The journal is the write-ahead log of money moves. Each hold,
// settlement, credit and new account is appended to it, with one write
// call, before the store call returns; Badger gets them afterwards, in
// batches, off the caller's path. A killed process loses nothing that was
// written (the kernel holds it); in strict mode the record is also fsynced
// (one fsync for all the records waiting, group commit) before the call
// returns. Badger keeps the sequence number of the last record it
// applied, in the same transaction as the record's writes, so on open the
// records after it are applied again, exactly once.
//
// A record: length (4, of what follows the checksum), CRC-32C (4, of the
// same), sequence number (8), kind (1), payload. Segments are named by
// the sequence number of their first record and removed once applied.
type journal struct {
	dir        string
	strict     bool
	segmentMax int64

	f        *os.File
	size     int64
	segments []uint64 // first sequence number of each segment, the current one last
	rotated  int      // segments opened since start (tests)
	buf      []byte
	broken   error // a failed write could not be undone: refuse all later ones

	written atomic.Uint64 // last sequence number written to the current file

	syncMu  sync.Mutex
	syncing bool
	synced  uint64
	cond    *sync.Cond
}

const (
	recordHeader = 4 + 4 + 8 + 1
	// A segment is closed at 1 MB and deleted once applied, so the
	// journal stays small on a small disk.
	segmentMax     = 1 << 20
	maxRecord      = 64 << 20
	journalSuffix  = ".journal"
	journalDirName = "journal"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var errJournalCorrupt = errors.New("badgerstore: journal record corrupt")

// openJournal prepares dir and returns the records of its segments with a
// sequence number above applied, in order. A torn last record (the
// process died inside a write) ends the replay; the segments are kept
// until start.
func openJournal(dir string, strict bool, applied uint64) (*journal, []record, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	j := &journal{dir: dir, strict: strict, segmentMax: segmentMax}
	j.cond = sync.NewCond(&j.syncMu)
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range names {
		n, ok := strings.CutSuffix(e.Name(), journalSuffix)
		if !ok {
			continue
		}
		first, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			continue
		}
		j.segments = append(j.segments, first)
	}
	sort.Slice(j.segments, func(a, b int) bool { return j.segments[a] < j.segments[b] })
	var recs []record
	for _, first := range j.segments {
		rs, err := readSegment(j.path(first), applied)
		recs = append(recs, rs...)
		if err != nil {
			// Records after a torn one cannot be trusted to follow it.
			break
		}
	}
	return j, recs, nil
}

func (j *journal) path(first uint64) string {
	return filepath.Join(j.dir, fmt.Sprintf("%020d%s", first, journalSuffix))
}

// readSegment reads the records above applied; it stops at the first
// record that is cut or fails its checksum, returning what came before.
func readSegment(path string, applied uint64) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var out []record
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, errJournalCorrupt
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 9 || n > maxRecord {
			return out, errJournalCorrupt
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return out, errJournalCorrupt
		}
		if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(hdr[4:]) {
			return out, errJournalCorrupt
		}
		r := record{seq: binary.BigEndian.Uint64(body), kind: body[8], payload: body[9:]}
		if r.seq > applied {
			out = append(out, r)
		}
	}
}

// record is one journal record as read back.
type record struct {
	seq     uint64
	kind    byte
	payload []byte
}

// start removes the replayed segments and opens a fresh one whose first
// record will be next.
func (j *journal) start(next uint64) error {
	for _, first := range j.segments {
		if err := os.Remove(j.path(first)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	j.segments = nil
	j.written.Store(next - 1)
	j.synced = next - 1
	return j.rotate(next)
}

// rotate opens a new segment starting at next. A sync in progress on the
// old segment finishes first; in strict mode the old one is fsynced, so
// sync never has to reach back to it.
func (j *journal) rotate(next uint64) error {
	f, err := os.OpenFile(j.path(next), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	j.syncMu.Lock()
	for j.syncing {
		j.cond.Wait()
	}
	old := j.f
	if old != nil && j.strict {
		if err := old.Sync(); err != nil {
			j.syncMu.Unlock()
			f.Close()
			os.Remove(j.path(next))
			return err
		}
		j.synced = j.written.Load()
	}
	j.f = f
	j.syncMu.Unlock()
	if old != nil {
		if err := old.Close(); err != nil {
			return err
		}
	}
	if j.strict {
		if d, err := os.Open(j.dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	j.size = 0
	j.segments = append(j.segments, next)
	j.rotated++
	return nil
}

// append writes one record. The caller serialises calls (the books lock)
// and numbers them without gaps.
func (j *journal) append(seq uint64, kind byte, payload []byte) error {
	if j.broken != nil {
		return j.broken
	}
	if len(payload)+9 > maxRecord {
		return fmt.Errorf("badgerstore: a journal record of %d bytes is too large", len(payload))
	}
	if j.size >= j.segmentMax {
		if err := j.rotate(seq); err != nil {
			return err
		}
	}
	b := append(j.buf[:0], make([]byte, recordHeader)...)
	binary.BigEndian.PutUint64(b[8:], seq)
	b[16] = kind
	b = append(b, payload...)
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-8))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], crcTable))
	if cap(b) <= 64<<10 {
		j.buf = b
	}
	if _, err := j.f.Write(b); err != nil {
		// Cut a partly written record off, so the next one does not
		// follow garbage; if that fails too, write nothing more.
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = fmt.Errorf("badgerstore: journal unusable after a failed write: %w", terr)
		}
		return err
	}
	j.size += int64(len(b))
	j.written.Store(seq)
	return nil
}

// sync makes every record up to seq durable (strict mode): one fsync
// covers all records written when it starts, and callers that arrive
// meanwhile wait for the next.
func (j *journal) sync(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	for j.synced < seq {
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		target, f := j.written.Load(), j.f
		j.syncMu.Unlock()
		err := f.Sync()
		j.syncMu.Lock()
		j.syncing = false
		if err == nil && target > j.synced {
			j.synced = target
		}
		j.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// applied drops the segments every record of which is at or below seq
// (Badger has them); the current segment stays.
func (j *journal) applied(seq uint64) {
	for len(j.segments) > 1 && j.segments[1] <= seq+1 {
		_ = os.Remove(j.path(j.segments[0]))
		j.segments = j.segments[1:]
	}
}

// close closes the current segment; remove deletes every segment (all
// applied).
func (j *journal) close(remove bool) error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if remove && err == nil {
		for _, first := range j.segments {
			if rerr := os.Remove(j.path(first)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = rerr
			}
		}
		j.segments = nil
	}
	return err
}
