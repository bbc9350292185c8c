package badgerstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The books (store.Books): every money move leaves an entry numbered by
// its write-ahead journal record, written in the Badger transaction that
// applies the move. The entries of one applied batch share one key,
// book/{seq of the batch's first entry}: one Badger write per batch, not
// per move (a batch is applied once: its records are replayed only if it
// was not). Nothing rewrites or deletes an entry. A store written before the books began gets, once at open and
// before its journal is replayed, a carry entry per wallet and a hold
// entry per open hold, numbered just below its first new move.

const vBook = 1

// Entry kinds as stored.
var (
	bookKinds = map[string]byte{store.EntryCredit: 'c', store.EntryHold: 'h', store.EntrySettle: 's',
		store.EntryRefund: 'r', store.EntryCarry: 'k', store.EntryRelease: 'x'}
	bookKindNames = func() map[byte]string {
		m := map[byte]string{}
		for n, c := range bookKinds {
			m[c] = n
		}
		return m
	}()
)

// bookEntrySize is about what one entry takes, key and value.
const bookEntrySize = 128

// appendBook appends entry x of a value whose key names seq first: its
// distance from first, then its fields.
func appendBook(b []byte, first uint64, x *store.BookEntry) []byte {
	e := enc{b}
	e.byte(vBook)
	e.uint(x.Seq - first)
	c, ok := bookKinds[x.Kind]
	if !ok {
		c = '?'
	}
	e.byte(c)
	e.str(x.AccountID)
	e.int(int64(x.Amount))
	e.int(int64(x.Charge))
	e.str(x.HoldID)
	e.str(x.RequestID)
	e.str(x.TaskID)
	e.str(x.OrderID)
	e.str(x.AdminToken)
	e.str(x.UserID)
	e.uint(x.LedgerID)
	e.uint(x.LogID)
	e.str(x.Owner)
	e.str(x.Note)
	e.time(x.At)
	return e.b
}

// decodeBooks yields the entries of the value v of key book/{first}.
func decodeBooks(first uint64, v []byte, yield func(store.BookEntry) bool) error {
	d := dec{s: string(v)}
	for d.i < len(d.s) && d.err == nil {
		d.version(vBook)
		seq := first + d.uint()
		c := d.byte()
		kind, ok := bookKindNames[c]
		if !ok {
			kind = fmt.Sprintf("unknown (%q)", c) // an audit names it
		}
		x := store.BookEntry{
			Seq: seq, Kind: kind, AccountID: d.str(), Amount: money.Nano(d.int()), Charge: money.Nano(d.int()),
			HoldID: d.str(), RequestID: d.str(), TaskID: d.str(), OrderID: d.str(), AdminToken: d.str(),
			UserID: d.str(), LedgerID: d.uint(), LogID: d.uint(), Owner: d.str(), Note: d.str(), At: d.time(),
		}
		if d.err != nil {
			break
		}
		if !yield(x) {
			return nil
		}
	}
	if err := d.done(); err != nil {
		return fmt.Errorf("book entries from %d: %w", first, err)
	}
	return nil
}

// bookOf is the book entry of a journaled move; false for a move that
// moves no money (a row without a hold, an order's write without a
// credit, an account opened with nothing).
func bookOf(e *entry) (store.BookEntry, bool, error) {
	x := store.BookEntry{Seq: e.seq, AccountID: e.account, At: e.at}
	switch e.kind {
	case kindHold:
		x.Kind, x.Amount, x.HoldID, x.RequestID = store.EntryHold, e.amount, e.holdID, e.holdID
		x.TaskID, x.Owner = e.causeTask, e.owner
	case kindSettle, kindFinish:
		if e.holdID == "" {
			return x, false, nil
		}
		x.Kind = store.EntrySettle
		if e.kind == kindFinish && e.charge == 0 {
			x.Kind = store.EntryRefund
		}
		x.Amount, x.Charge, x.HoldID, x.LogID = e.amount, e.charge, e.holdID, e.rowID()
		x.RequestID, x.TaskID = e.causeReq, e.causeTask
	case kindAccount, kindCredit, kindOrder:
		if e.ledger == nil {
			return x, false, nil
		}
		var l store.LedgerEntry
		if err := json.Unmarshal(e.ledger, &l); err != nil {
			return x, false, fmt.Errorf("badgerstore: ledger entry %d: %w", e.ledgID, err)
		}
		x.Kind, x.Amount, x.LedgerID, x.Note, x.At = store.EntryCredit, e.amount, e.ledgID, l.Note, l.CreatedAt
		x.OrderID, x.AdminToken, x.UserID = l.OrderID, l.AdminToken, l.UserID
	default:
		return x, false, nil
	}
	return x, true, nil
}

// writeBooks sets the book entries of a batch's moves in txn, under
// one key.
func writeBooks(txn *badger.Txn, es []*entry) error {
	var val []byte
	var first uint64
	for _, e := range es {
		x, ok, err := bookOf(e)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if val == nil {
			first, val = e.seq, make([]byte, 0, len(es)*bookEntrySize)
		}
		val = appendBook(val, first, &x)
	}
	if val == nil {
		return nil
	}
	return txn.Set(bookKey(first), val)
}

// newRun names one open of the store: the owner of the holds it places.
func newRun() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// startRun reads the previous run's name (the owner of holds its journal
// may replay) and records this one's.
func (s *Store) startRun() (prev string, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		err := get(txn, runKey, func(v []byte) error { prev = string(v); return nil })
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return prev, s.db.Update(func(txn *badger.Txn) error { return txn.Set(runKey, []byte(s.run)) })
}

// carryBooks starts the books of a store written before them, as Badger
// holds it at journal record applied (before any replay): a hold entry
// per open hold and a carry entry per wallet, numbered up to applied
// (numbers no entry can have, since the books did not exist), written a
// chunk per transaction with a count that resumes an interrupted carry.
func (s *Store) carryBooks(applied uint64) error {
	var started bool
	var done uint64
	var es []store.BookEntry
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		if started, err = exists(txn, booksKey); err != nil || started {
			return err
		}
		err = get(txn, carryKey, func(v []byte) error {
			if len(v) != 8 {
				return errCorrupt
			}
			done = binary.BigEndian.Uint64(v)
			return nil
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		now := time.Now().UTC()
		err = scanPrefix(txn, []byte(pHold), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				h, err := decodeHold(v)
				es = append(es, store.BookEntry{Kind: store.EntryHold, AccountID: h.AccountID, Amount: h.Amount,
					HoldID: h.ID, RequestID: h.ID, TaskID: h.TaskID, At: h.SubmittedAt})
				return err
			})
		})
		if err != nil {
			return err
		}
		lastRow, err := lastLogID(txn)
		if err != nil {
			return err
		}
		return scanPrefix(txn, []byte(pWallet), true, func(it *badger.Item) error {
			account := string(bytes.TrimPrefix(it.Key(), []byte(pWallet)))
			return it.Value(func(v []byte) error {
				w, err := decodeWallet(account, v)
				es = append(es, store.BookEntry{Kind: store.EntryCarry, AccountID: account, Amount: w.Balance,
					LogID: lastRow, Note: "the balance when the books began", At: now})
				return err
			})
		})
	})
	if err != nil || started {
		return err
	}
	if uint64(len(es)) > applied {
		return fmt.Errorf("badgerstore: %d wallets and open holds but only %d journal records: the store is inconsistent", len(es), applied)
	}
	first := applied - uint64(len(es)) + 1
	const chunk = 1024
	for done < uint64(len(es)) {
		n := min(uint64(len(es))-done, chunk)
		err := s.db.Update(func(txn *badger.Txn) error {
			var val []byte
			for i := done; i < done+n; i++ {
				es[i].Seq = first + i
				val = appendBook(val, first+done, &es[i])
			}
			if err := txn.Set(bookKey(first+done), val); err != nil {
				return err
			}
			return txn.Set(carryKey, encodeSeq(done+n))
		})
		if err != nil {
			return fmt.Errorf("badgerstore: starting the books: %w", err)
		}
		done += n
	}
	if len(es) > 0 {
		s.log.Info("the books began: each wallet's balance and each open hold carried in", "entries", len(es))
	}
	return s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(booksKey, nil); err != nil {
			return err
		}
		return txn.Delete(carryKey)
	})
}

// lastLogID is the id of the last row written, 0 for none.
func lastLogID(txn *badger.Txn) (uint64, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pLog), Reverse: true})
	defer it.Close()
	it.Seek(append([]byte(pLog), bytes.Repeat([]byte{0xff}, 9)...))
	if !it.Valid() {
		return 0, nil
	}
	k := it.Item().Key()
	if len(k) != len(pLog)+8 {
		return 0, errCorrupt
	}
	return tailID(k), nil
}

// AuditView implements store.Books: one Badger read transaction, opened
// once Badger has every move made before the call. The store does not
// close while a view is open.
func (s *Store) AuditView(ctx context.Context) (store.BooksView, error) {
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	return &booksView{s: s, txn: s.db.NewTransaction(false), at: time.Now().UTC()}, nil
}

type booksView struct {
	s      *Store
	txn    *badger.Txn
	at     time.Time
	closed bool
}

func (v *booksView) At() time.Time { return v.at }

// Live: the holds of this run belong to calls this process still serves;
// those of earlier runs to none (recovery releases them at open).
func (v *booksView) Live(owner string) bool { return owner != "" && owner == v.s.run }

func (v *booksView) Close() error {
	if !v.closed {
		v.closed = true
		v.txn.Discard()
		v.s.mu.RUnlock()
	}
	return nil
}

// scan yields what decode makes of each key under prefix, in key order,
// checking ctx every so often.
func scan[T any](ctx context.Context, txn *badger.Txn, prefix string, values bool,
	decode func(k, v []byte) (T, bool, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix), PrefetchValues: values, PrefetchSize: 256})
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				yield(zero, ctx.Err())
				return
			}
			var x T
			var ok bool
			err := it.Item().Value(func(v []byte) (err error) {
				x, ok, err = decode(it.Item().Key(), v)
				return err
			})
			if err != nil {
				yield(zero, err)
				return
			}
			if ok && !yield(x, nil) {
				return
			}
		}
	}
}

func bookSeq(k []byte) (uint64, error) {
	if len(k) != len(pBook)+8 {
		return 0, errCorrupt
	}
	return tailID(k), nil
}

func (v *booksView) Entries(ctx context.Context) iter.Seq2[store.BookEntry, error] {
	return func(yield func(store.BookEntry, error) bool) {
		it := v.txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pBook), PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n++; n%1024 == 0 && ctx.Err() != nil {
				yield(store.BookEntry{}, ctx.Err())
				return
			}
			first, err := bookSeq(it.Item().Key())
			stopped := false
			if err == nil {
				err = it.Item().Value(func(val []byte) error {
					return decodeBooks(first, val, func(x store.BookEntry) bool {
						stopped = !yield(x, nil)
						return !stopped
					})
				})
			}
			if err != nil {
				yield(store.BookEntry{}, err)
				return
			}
			if stopped {
				return
			}
		}
	}
}

// Settlements: the journal numbers a settlement and its row together,
// under the books' lock, so in seq order they are in row order too (an
// audit names an entry that breaks the order).
func (v *booksView) Settlements(ctx context.Context) iter.Seq2[store.BookEntry, error] {
	return func(yield func(store.BookEntry, error) bool) {
		for x, err := range v.Entries(ctx) {
			if err != nil || x.Settles() {
				if !yield(x, err) || err != nil {
					return
				}
			}
		}
	}
}

func (v *booksView) Wallets(ctx context.Context) iter.Seq2[store.Wallet, error] {
	return scan(ctx, v.txn, pWallet, true, func(k, val []byte) (store.Wallet, bool, error) {
		w, err := decodeWallet(string(k[len(pWallet):]), val)
		return w, err == nil, err
	})
}

func (v *booksView) Holds(ctx context.Context) iter.Seq2[store.HoldRecord, error] {
	return scan(ctx, v.txn, pHold, true, func(_, val []byte) (store.HoldRecord, bool, error) {
		h, err := decodeHold(val)
		return store.HoldRecord{ID: h.ID, AccountID: h.AccountID, TaskID: h.TaskID, Amount: h.Amount}, err == nil, err
	})
}

func (v *booksView) Tasks(ctx context.Context) iter.Seq2[store.TaskBrief, error] {
	return scan(ctx, v.txn, pTask, true, func(k, val []byte) (store.TaskBrief, bool, error) {
		var t struct {
			ID          string    `json:"id"`
			AccountID   string    `json:"account_id"`
			Status      string    `json:"status"`
			HoldID      string    `json:"hold_id"`
			CompletedAt time.Time `json:"completed_at"`
		}
		if err := json.Unmarshal(val, &t); err != nil {
			return store.TaskBrief{}, false, fmt.Errorf("task %s: %w", k[len(pTask):], err)
		}
		return store.TaskBrief{ID: t.ID, AccountID: t.AccountID, Status: t.Status, HoldID: t.HoldID, CompletedAt: t.CompletedAt}, true, nil
	})
}

func (v *booksView) Rows(ctx context.Context) iter.Seq2[store.RowBrief, error] {
	return scan(ctx, v.txn, pLog, true, func(k, val []byte) (store.RowBrief, bool, error) {
		if len(k) != len(pLog)+8 {
			return store.RowBrief{}, false, errCorrupt
		}
		r, err := rowBrief(val)
		r.ID = tailID(k)
		if err != nil {
			err = fmt.Errorf("row %d: %w", r.ID, err)
		}
		return r, err == nil, err
	})
}

// rowBrief reads what an audit needs of an encoded row, skipping the
// rest (encodeRow's order).
func rowBrief(v []byte) (store.RowBrief, error) {
	var r store.RowBrief
	b := byteDec{b: v}
	if b.byte() != vRow {
		return r, errCorrupt
	}
	r.AccountID = string(b.str())
	b.skipTime()  // created
	b.skipTime()  // submitted
	for range 7 { // key id, key name, key prefix, model, status, error code, error message
		b.str()
	}
	b.varint() // input tokens
	b.varint() // output
	b.varint() // cached
	b.str()    // unit type
	r.Cost = money.Nano(b.varint())
	b.varint() // latency
	r.RequestID = string(b.str())
	r.TaskID = string(b.str())
	return r, b.err
}

// byteDec reads encodeRow's fields from bytes without copying them.
type byteDec struct {
	b   []byte
	err error
}

func (d *byteDec) byte() byte {
	if len(d.b) == 0 {
		d.err = errCorrupt
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *byteDec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = errCorrupt, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *byteDec) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = errCorrupt, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *byteDec) str() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err, d.b = errCorrupt, nil
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *byteDec) skipTime() { d.varint(); d.uvarint() }

var _ store.Books = (*Store)(nil)
