package badgerstore

import (
	"context"
	"encoding/json"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// GetAccount reads one account.
func (s *Store) GetAccount(ctx context.Context, id string) (a store.Account, err error) {
	a, gen, ok := s.cache.account(id)
	if ok {
		if err := s.enter(ctx); err != nil {
			return store.Account{}, err
		}
		s.mu.RUnlock()
		return a, nil
	}
	err = s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, accountKey(id), func(v []byte) (e error) {
			a, e = decodeAccount(v)
			return e
		})
	})
	if err == nil {
		s.cache.putAccount(a, gen)
	}
	return a, err
}

// ListAccounts returns every account in id order.
func (s *Store) ListAccounts(ctx context.Context) ([]store.Account, error) {
	var out []store.Account
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanPrefix(txn, []byte(pAccount), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				a, err := decodeAccount(v)
				out = append(out, a)
				return err
			})
		})
	})
	return out, err
}

// UpdateAccount replaces an existing account.
func (s *Store) UpdateAccount(ctx context.Context, a store.Account) error {
	if err := checkID("account", a.ID); err != nil {
		return err
	}
	k, v := accountKey(a.ID), encodeAccount(&a)
	defer s.cache.invalidate()
	return s.update(ctx, func(txn *badger.Txn) error {
		ok, err := exists(txn, k)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		return txn.Set(k, v)
	})
}

// ListLedger returns an account's ledger entries, oldest first. An
// unknown account has none.
func (s *Store) ListLedger(ctx context.Context, accountID string) ([]store.LedgerEntry, error) {
	var out []store.LedgerEntry
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanPrefix(txn, scoped(pLedger, accountID), true, func(it *badger.Item) error {
			if len(it.Key()) != len(pLedger)+len(accountID)+1+8 {
				return nil
			}
			return it.Value(func(v []byte) error {
				var e store.LedgerEntry
				err := json.Unmarshal(v, &e)
				out = append(out, e)
				return err
			})
		})
	})
	return out, err
}

// PutModel adds or replaces a runtime model.
func (s *Store) PutModel(ctx context.Context, m store.Model) error {
	if err := checkID("model", m.ID); err != nil {
		return err
	}
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	k := modelKey(m.ID)
	return s.update(ctx, func(txn *badger.Txn) error { return txn.Set(k, v) })
}

// ListModels returns the runtime models in id order.
func (s *Store) ListModels(ctx context.Context) ([]store.Model, error) {
	var out []store.Model
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanPrefix(txn, []byte(pModel), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				var m store.Model
				err := json.Unmarshal(v, &m)
				out = append(out, m)
				return err
			})
		})
	})
	return out, err
}
