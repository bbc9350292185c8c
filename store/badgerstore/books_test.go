package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
	"github.com/tollgate-gw/tollgate/store/storetest"
)

func TestBooks(t *testing.T) {
	storetest.RunBooks(t, func(t *testing.T) store.Store { return openTemp(t, t.TempDir(), Options{}) },
		func(t *testing.T, s store.Store) storetest.Tamperer {
			bs := s.(*Store)
			if err := bs.seen(t.Context()); err != nil {
				t.Fatal(err)
			}
			return &tamperer{t: t, s: bs}
		})
}

// tamperer writes Badger's records directly.
type tamperer struct {
	t *testing.T
	s *Store
}

func (x *tamperer) update(fn func(txn *badger.Txn) error) {
	x.t.Helper()
	if err := x.s.db.Update(fn); err != nil {
		x.t.Fatal(err)
	}
}

func (x *tamperer) SetWallet(account string, balance, held money.Nano) {
	x.update(func(txn *badger.Txn) error {
		return txn.Set(walletKey(account), encodeWallet(store.Wallet{Balance: balance, Held: held}))
	})
}

// rewrite finds the value holding entry seq and writes it again with fn's
// change to its entries (fn drops an entry by returning false).
func (x *tamperer) rewrite(seq uint64, fn func(*store.BookEntry) bool) {
	x.update(func(txn *badger.Txn) error {
		var key []byte
		var es []store.BookEntry
		err := scanPrefix(txn, []byte(pBook), true, func(it *badger.Item) error {
			if key != nil {
				return nil
			}
			first := tailID(it.Key())
			var got []store.BookEntry
			err := it.Value(func(v []byte) error {
				return decodeBooks(first, v, func(e store.BookEntry) bool { got = append(got, e); return true })
			})
			if slices.ContainsFunc(got, func(e store.BookEntry) bool { return e.Seq == seq }) {
				key, es = it.KeyCopy(nil), got
			}
			return err
		})
		if err != nil || key == nil {
			return errors.Join(err, fmt.Errorf("no book entry %d", seq))
		}
		first := tailID(key)
		var val []byte
		for _, e := range es {
			if e.Seq != seq || fn(&e) {
				val = appendBook(val, first, &e)
			}
		}
		if val == nil {
			return txn.Delete(key)
		}
		return txn.Set(key, val)
	})
}

func (x *tamperer) EditEntry(seq uint64, fn func(*store.BookEntry)) {
	x.rewrite(seq, func(e *store.BookEntry) bool { fn(e); return true })
}

func (x *tamperer) DeleteEntry(seq uint64) {
	x.rewrite(seq, func(*store.BookEntry) bool { return false })
}

func (x *tamperer) AddEntry(e store.BookEntry) {
	x.update(func(txn *badger.Txn) error {
		last := uint64(0)
		err := scanPrefix(txn, []byte(pBook), true, func(it *badger.Item) error {
			first := tailID(it.Key())
			return it.Value(func(v []byte) error {
				return decodeBooks(first, v, func(e store.BookEntry) bool { last = e.Seq; return true })
			})
		})
		if err != nil {
			return err
		}
		e.Seq = last + 1
		return txn.Set(bookKey(e.Seq), appendBook(nil, e.Seq, &e))
	})
}

func (x *tamperer) SetRowCost(id uint64, cost money.Nano) {
	x.update(func(txn *badger.Txn) error {
		var r store.LogRow
		err := get(txn, logKey(id), func(v []byte) (err error) {
			r, err = decodeRow(v, id)
			return err
		})
		if err != nil {
			return err
		}
		r.Cost = cost
		return txn.Set(logKey(id), encodeRow(nil, &r))
	})
}

func (x *tamperer) DeleteRow(id uint64) {
	x.update(func(txn *badger.Txn) error { return txn.Delete(logKey(id)) })
}

func (x *tamperer) DeleteHold(id string) {
	x.update(func(txn *badger.Txn) error { return txn.Delete(holdKey(id)) })
}

// A hold left open when the store closes (the process died) belongs to
// no live call once it opens again: the audit names it until crash
// recovery releases it.
func TestBooksHoldOfAnEarlierRun(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.CreateAccount(ctx, store.Account{ID: "a", Status: store.AccountActive, CreatedAt: time.Now()}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "req-1", AccountID: "a", Amount: money.Credits(2), SubmittedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Run(ctx, s, audit.Options{}); err != nil || !rep.OK {
		t.Fatalf("audit of a live hold: %+v, %v", rep, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTemp(t, dir, Options{})
	rep, err := audit.Run(ctx, s, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ByRule[audit.RuleHoldNotLive] != 1 || rep.Count != 1 || rep.Violations[0].HoldID != "req-1" {
		t.Fatalf("audit after a restart: %+v", rep)
	}
	row := &store.LogRow{AccountID: "a", CreatedAt: time.Now(), Status: store.StatusInterrupted, RequestID: "req-1"}
	if err := s.Settle(ctx, store.Settlement{HoldID: "req-1", Row: row}); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Run(ctx, s, audit.Options{}); err != nil || !rep.OK {
		t.Fatalf("audit once the hold is released: %+v, %v", rep, err)
	}
}

// A store written before the books began gets them at its next open: its
// balances and open holds carried in, its earlier rows exempt, and the
// moves its journal replays at that open booked after them.
func TestBooksCarriedIntoAnOlderStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{applyDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cr := money.Credits
	if err := s.CreateAccount(ctx, store.Account{ID: "a", Status: store.AccountActive, CreatedAt: time.Now()}, cr(10), ""); err != nil {
		t.Fatal(err)
	}
	hold := func(id string, n int64) {
		t.Helper()
		if _, err := s.PlaceHold(ctx, store.Hold{ID: id, AccountID: "a", Amount: cr(n), SubmittedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	settle := func(id string, charge int64) {
		t.Helper()
		row := &store.LogRow{AccountID: "a", CreatedAt: time.Now(), Status: store.StatusSuccess, Cost: cr(charge), RequestID: id}
		if err := s.Settle(ctx, store.Settlement{HoldID: id, Charge: cr(charge), Row: row}); err != nil {
			t.Fatal(err)
		}
	}
	hold("req-1", 2)
	settle("req-1", 1)
	hold("req-2", 2)
	if err := s.seen(ctx); err != nil {
		t.Fatal(err)
	}
	// What an older tollgate left: no books at all...
	err = s.db.Update(func(txn *badger.Txn) error {
		for _, k := range [][]byte{booksKey, runKey} {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return scanPrefix(txn, []byte(pBook), false, func(it *badger.Item) error { return txn.Delete(bytes.Clone(it.Key())) })
	})
	if err != nil {
		t.Fatal(err)
	}
	// ... and moves only its journal holds when it died.
	hold("req-3", 3)
	settle("req-2", 1)
	abandon(t, s)

	s = openTemp(t, dir, Options{})
	v, err := s.AuditView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for e, err := range v.Entries(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind+" "+e.HoldID+" "+e.Amount.String())
	}
	v.Close()
	want := []string{"hold req-2 2", "carry  9", "hold req-3 3", "settle req-2 2"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("entries %q, want %q", kinds, want)
	}
	rep, err := audit.Run(ctx, s, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The replayed hold belongs to no run of this store; nothing else
	// fails (req-1's row predates the books).
	if rep.Count != 1 || rep.ByRule[audit.RuleHoldNotLive] != 1 || rep.Violations[0].HoldID != "req-3" {
		t.Fatalf("audit of the carried books: %+v", rep)
	}
}

// An audit takes under 10 s per million log rows: billed calls seeded
// through the store on disk (TOLLGATE_AUDIT_ROWS=1000000 for the full
// million), then audited.
func TestAuditSpeed(t *testing.T) {
	s := openTemp(t, t.TempDir(), Options{})
	storetest.RunAuditSpeed(t, s, storetest.AuditRows(t, 50_000), storetest.Slowdown, nil, func(ctx context.Context, n int) error {
		if err := storetest.SeedBilled(ctx, s, n, 100, 64); err != nil {
			return err
		}
		return s.seen(ctx)
	})
}
