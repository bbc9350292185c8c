package badgerstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The orders role. Every write of an order is a money move (credit.go's
// path, kindOrder): journaled under the books' lock, with the credit or
// debit it makes, and applied to Badger in the same transaction as the
// wallet and the ledger entry. The books keep the orders whose writes are
// not in Badger yet, so the compare-and-set on Version always compares
// with the newest write; an order not in the books is as Badger holds it.

// bookedOrder is an order with writes journaled but not yet in Badger.
type bookedOrder struct {
	o      store.Order
	queued int
}

func orderKey(id string) []byte     { return strKey(pOrder, id) }
func orderRefKey(ref string) []byte { return strKey(pOrderRef, ref) }

// orderJournaled books a journaled write of o; b.mu is held.
func (b *books) orderJournaled(o *store.Order) {
	bo := b.orders[o.ID]
	if bo == nil {
		bo = &bookedOrder{}
		b.orders[o.ID] = bo
	}
	bo.o = *o
	bo.queued++
}

// orderApplied notes that one write of the order is in Badger; b.mu is
// held.
func (b *books) orderApplied(id string) {
	if bo := b.orders[id]; bo != nil {
		if bo.queued--; bo.queued <= 0 {
			delete(b.orders, id)
		}
	}
}

// lockedOrder is the newest write of an order; b.mu is held, and kept
// while Badger is read (orders are few and rarely written).
func (s *Store) lockedOrder(id string) (store.Order, error) {
	if bo := s.books.orders[id]; bo != nil {
		return bo.o, nil
	}
	var o store.Order
	err := s.db.View(func(txn *badger.Txn) error { return getJSON(txn, orderKey(id), &o) })
	return o, err
}

// writeOrder writes an order and its index entries.
func writeOrder(txn *badger.Txn, o *store.Order, val []byte) error {
	acct := appendTS(scoped(pOrderAcct, o.AccountID), o.CreatedAt)
	all := appendTS([]byte(pOrderAll), o.CreatedAt)
	err := errors.Join(
		txn.Set(orderKey(o.ID), val),
		txn.Set(append(acct, o.ID...), nil),
		txn.Set(append(all, o.ID...), nil),
	)
	for _, ref := range []string{o.SessionID, o.PaymentID} {
		if err == nil && validID(ref) {
			err = txn.Set(orderRefKey(ref), []byte(o.ID))
		}
	}
	return err
}

func checkOrder(o *store.Order) error {
	if err := errors.Join(checkID("order", o.ID), checkID("account", o.AccountID)); err != nil {
		return err
	}
	if !slices.Contains(store.OrderStatuses, o.Status) {
		return fmt.Errorf("badgerstore: order %s: unknown status %q", o.ID, o.Status)
	}
	return nil
}

// CreateOrder implements store.Orders.
func (s *Store) CreateOrder(ctx context.Context, o store.Order) error {
	if err := checkOrder(&o); err != nil {
		return err
	}
	o.Version = 1
	e := &entry{kind: kindOrder, account: o.AccountID, order: &o}
	_, err := s.credit(ctx, e, "", func() error {
		_, err := s.lockedOrder(o.ID)
		switch {
		case err == nil:
			return store.ErrExists
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		e.orderVal, err = json.Marshal(&o)
		return err
	})
	return err
}

// UpdateOrder implements store.Orders.
func (s *Store) UpdateOrder(ctx context.Context, next *store.Order, credit money.Nano, note string) error {
	o := *next
	if err := checkOrder(&o); err != nil {
		return err
	}
	e := &entry{kind: kindOrder, account: o.AccountID, amount: credit, order: &o}
	_, err := s.credit(ctx, e, note, func() error {
		cur, err := s.lockedOrder(o.ID)
		switch {
		case err != nil:
			return err
		case cur.AccountID != o.AccountID:
			return fmt.Errorf("badgerstore: order %s belongs to account %s, not %s", o.ID, cur.AccountID, o.AccountID)
		case cur.Version != o.Version:
			return store.ErrChanged
		}
		o.Version++
		e.orderVal, err = json.Marshal(&o)
		return err
	})
	if err == nil {
		next.Version = o.Version
	}
	return err
}

// GetOrder implements store.Orders.
func (s *Store) GetOrder(ctx context.Context, id string) (store.Order, error) {
	if !validID(id) {
		return store.Order{}, store.ErrNotFound
	}
	if err := s.enter(ctx); err != nil {
		return store.Order{}, err
	}
	defer s.mu.RUnlock()
	s.books.mu.Lock()
	defer s.books.mu.Unlock()
	return s.lockedOrder(id)
}

// OrderByRef implements store.Orders: its index is written with the
// order, so Badger must hold every earlier move first.
func (s *Store) OrderByRef(ctx context.Context, ref string) (store.Order, error) {
	if !validID(ref) {
		return store.Order{}, store.ErrNotFound
	}
	if err := s.seen(ctx); err != nil {
		return store.Order{}, err
	}
	var id string
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, orderRefKey(ref), func(v []byte) error { id = string(v); return nil })
	})
	if err != nil {
		return store.Order{}, err
	}
	return s.GetOrder(ctx, id)
}

// ListOrders implements store.Orders: newest first along an account's
// index, or every order's.
func (s *Store) ListOrders(ctx context.Context, q store.OrderQuery) ([]store.Order, error) {
	if q.AccountID != "" && !validID(q.AccountID) {
		return nil, nil
	}
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > store.OrderListLimit {
		limit = store.OrderListLimit
	}
	prefix := []byte(pOrderAll)
	if q.AccountID != "" {
		prefix = scoped(pOrderAcct, q.AccountID)
	}
	var since []byte
	if !q.Since.IsZero() {
		since = appendTS(nil, q.Since)
	}
	out := []store.Order{}
	err := s.view(ctx, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(seekPast(prefix)); it.Valid() && len(out) < limit; it.Next() {
			k := it.Item().Key()[len(prefix):]
			if len(k) <= tsLen {
				continue
			}
			if since != nil && string(k[:tsLen]) < string(since) {
				break
			}
			var o store.Order
			if err := getJSON(txn, orderKey(string(k[tsLen:])), &o); err != nil {
				return err
			}
			if len(q.Statuses) == 0 || slices.Contains(q.Statuses, o.Status) {
				out = append(out, o)
			}
		}
		return nil
	})
	// A write journaled since is newer than Badger's.
	s.books.mu.Lock()
	for i := range out {
		if bo := s.books.orders[out[i].ID]; bo != nil {
			out[i] = bo.o
		}
	}
	s.books.mu.Unlock()
	return out, err
}

var _ store.Orders = (*Store)(nil)
