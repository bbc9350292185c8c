package badgerstore

import (
	"context"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Spend caps are decided with the hold, under the books' lock, like the
// wallet: a capped hold passes when its amount fits the cap minus the
// key's lifetime spend minus the key's open holds. The books keep every
// key's open holds, and the spend of each capped key from its first
// capped hold on: read once from Badger when Badger has every charge of
// the key, then kept up to date by each settlement, so the check never
// waits on Badger again.

// heldByKey counts a new open hold against its key; b.mu is held.
func (b *books) heldByKey(h store.Hold) {
	if h.KeyID == "" {
		return
	}
	// A key's holds are part of one account's held sum, which the books
	// keep within money's range.
	b.keyHeld[h.KeyID], _ = money.Add(b.keyHeld[h.KeyID], h.Amount)
}

// closed books a hold's settlement against its key; b.mu is held.
func (b *books) closed(h store.Hold, charge money.Nano) {
	if h.KeyID == "" {
		return
	}
	if held, _ := money.Sub(b.keyHeld[h.KeyID], h.Amount); held > 0 {
		b.keyHeld[h.KeyID] = held
	} else {
		delete(b.keyHeld, h.KeyID)
	}
	if charge == 0 {
		return // no usage record changes (writeSettlement)
	}
	b.unapplied[h.KeyID]++
	if sp, ok := b.spent[h.KeyID]; ok {
		total, fits := money.Add(sp, charge)
		if !fits {
			total = money.Max // the usage total's clamp (commitEntries)
		}
		b.spent[h.KeyID] = total
	}
}

// inBadger notes that es are in Badger; b.mu is held.
func (b *books) inBadger(es []*entry) {
	for _, e := range es {
		if e.kind == kindOrder {
			b.orderApplied(e.order.ID)
		}
		if (e.kind == kindSettle || e.kind == kindFinish) && e.keyID != "" && e.charge != 0 {
			if n := b.unapplied[e.keyID] - 1; n > 0 {
				b.unapplied[e.keyID] = n
			} else {
				delete(b.unapplied, e.keyID)
			}
		}
	}
}

// capFits reports whether h fits its key's spend cap; b.mu is held and
// the key's spend is loaded.
func (b *books) capFits(h store.Hold) bool {
	left, ok := store.RemainingCap(*h.SpendCap, b.spent[h.KeyID], b.keyHeld[h.KeyID])
	return ok && h.Amount <= left
}

// loadSpent makes sure the books know the key's lifetime spend. b.mu is
// held on entry and on return; it is let go only to wait for Badger to
// take the key's charges still queued, so Badger's total is whole when it
// is read (under the lock, once per key and process).
func (s *Store) loadSpent(ctx context.Context, keyID string) error {
	b := s.books
	for {
		if _, ok := b.spent[keyID]; ok {
			return nil
		}
		if b.unapplied[keyID] == 0 {
			var n money.Nano
			err := s.db.View(func(txn *badger.Txn) error {
				return get(txn, keyUseKey(keyID), func(v []byte) (e error) {
					n, e = decodeNano(v)
					return e
				})
			})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			b.spent[keyID] = n
			return nil
		}
		seq := b.seq
		b.mu.Unlock()
		err := s.catchUp(ctx, seq)
		b.mu.Lock()
		if err != nil {
			return err
		}
	}
}
