package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

var errNoHash = errors.New("badgerstore: key without a hash")

func readKey(txn *badger.Txn, id string) (k store.Key, err error) {
	err = get(txn, keyKey(id), func(v []byte) (e error) {
		k, e = decodeKey(v)
		return e
	})
	return k, err
}

// CreateKey stores a new key of an existing account. A duplicate id or
// hash is ErrExists.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if err := errors.Join(checkID("key", k.ID), checkID("account", k.AccountID)); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return errNoHash
	}
	kk, kv, hk := keyKey(k.ID), encodeKey(&k), keyHashKey(k.Hash)
	return s.update(ctx, func(txn *badger.Txn) error {
		for _, key := range [][]byte{kk, hk} {
			dup, err := exists(txn, key)
			if err != nil {
				return err
			}
			if dup {
				return store.ErrExists
			}
		}
		ok, err := exists(txn, accountKey(k.AccountID))
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		return errors.Join(txn.Set(kk, kv), txn.Set(hk, []byte(k.ID)), txn.Set(keyAcctKey(k.AccountID, k.ID), nil))
	})
}

// GetKey reads a key by id, with its last use.
func (s *Store) GetKey(ctx context.Context, id string) (k store.Key, err error) {
	err = s.view(ctx, func(txn *badger.Txn) error {
		k, err = readKeyUsed(txn, id)
		return err
	})
	return k, err
}

// readKeyUsed is readKey with LastUsedAt from keyused/, which TouchKey
// writes apart so that a use never rewrites the key (nor clears the
// authentication cache).
func readKeyUsed(txn *badger.Txn, id string) (store.Key, error) {
	k, err := readKey(txn, id)
	if err != nil {
		return k, err
	}
	err = get(txn, keyUsedKey(id), func(v []byte) error {
		if len(v) != tsLen {
			return errCorrupt
		}
		t := parseTS(v)
		k.LastUsedAt = &t
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return k, err
}

// TouchKey records the key's last use.
func (s *Store) TouchKey(ctx context.Context, keyID string, at time.Time) error {
	if err := checkID("key", keyID); err != nil {
		return err
	}
	v := appendTS(nil, at)
	return s.update(ctx, func(txn *badger.Txn) error {
		ok, err := exists(txn, keyKey(keyID))
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		return txn.Set(keyUsedKey(keyID), v)
	})
}

// KeyByHash finds a key by the SHA-256 of its raw value: one index read
// and one row read.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (k store.Key, err error) {
	if len(hash) == 0 {
		return k, store.ErrNotFound
	}
	k, gen, ok := s.cache.key(hash)
	if ok {
		if err := s.enter(ctx); err != nil {
			return store.Key{}, err
		}
		s.mu.RUnlock()
		return k, nil
	}
	defer func() {
		if err == nil {
			s.cache.putKey(k, gen)
		}
	}()
	err = s.view(ctx, func(txn *badger.Txn) error {
		var id string
		if err := get(txn, keyHashKey(hash), func(v []byte) error {
			id = string(v)
			return nil
		}); err != nil {
			return err
		}
		k, err = readKey(txn, id)
		return err
	})
	return k, err
}

// ListKeys returns an account's keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	var out []store.Key
	err := s.view(ctx, func(txn *badger.Txn) error {
		prefix := scoped(pKeyAcct, accountID)
		var ids []string
		if err := scanPrefix(txn, prefix, false, func(it *badger.Item) error {
			ids = append(ids, string(it.Key()[len(prefix):]))
			return nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			k, err := readKeyUsed(txn, id)
			if err != nil {
				return err
			}
			out = append(out, k)
		}
		return nil
	})
	sortByCreation(out, func(k *store.Key) (time.Time, string) { return k.CreatedAt, k.ID })
	return out, err
}

// UpdateKey replaces an existing key, moving its hash and account index
// entries when those change.
func (s *Store) UpdateKey(ctx context.Context, k store.Key) error {
	if err := errors.Join(checkID("key", k.ID), checkID("account", k.AccountID)); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return errNoHash
	}
	kk, kv, hk := keyKey(k.ID), encodeKey(&k), keyHashKey(k.Hash)
	defer s.cache.invalidate()
	return s.update(ctx, func(txn *badger.Txn) error {
		old, err := readKey(txn, k.ID)
		if err != nil {
			return err
		}
		if !bytes.Equal(old.Hash, k.Hash) {
			taken, err := exists(txn, hk)
			if err != nil {
				return err
			}
			if taken {
				return store.ErrExists
			}
			if err := errors.Join(txn.Delete(keyHashKey(old.Hash)), txn.Set(hk, []byte(k.ID))); err != nil {
				return err
			}
		}
		if old.AccountID != k.AccountID {
			if err := errors.Join(txn.Delete(keyAcctKey(old.AccountID, k.ID)), txn.Set(keyAcctKey(k.AccountID, k.ID), nil)); err != nil {
				return err
			}
		}
		return txn.Set(kk, kv)
	})
}

// DeleteKey removes a key and its index entries. Its usage total and log
// rows stay.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	defer s.cache.invalidate()
	return s.update(ctx, func(txn *badger.Txn) error {
		k, err := readKey(txn, id)
		if err != nil {
			return err
		}
		return errors.Join(txn.Delete(keyKey(id)), txn.Delete(keyHashKey(k.Hash)), txn.Delete(keyAcctKey(k.AccountID, id)),
			txn.Delete(keyUsedKey(id)))
	})
}

// KeyUsage is the total charged to a key; 0 for a key never charged.
func (s *Store) KeyUsage(ctx context.Context, keyID string) (n money.Nano, err error) {
	if err := s.seen(ctx); err != nil {
		return 0, err
	}
	err = s.view(ctx, func(txn *badger.Txn) error {
		err := get(txn, keyUseKey(keyID), func(v []byte) (e error) {
			n, e = decodeNano(v)
			return e
		})
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	return n, err
}
