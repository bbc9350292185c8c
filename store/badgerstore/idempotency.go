package badgerstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// Idempotency records live under idem/{account}\x00{key}. The store decides
// liveness by the record's ExpiresAt against the caller's clock; Badger's
// TTL (an hour later, on the wall clock) only collects dead records.

func idemKey(account, key string) []byte {
	return append(scoped(pIdem, account), key...)
}

var errBadIdemKey = errors.New("badgerstore: empty idempotency key")

// ClaimIdempotencyKey implements store.Idempotency.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, accountID, key string, rec store.IdemRecord, now time.Time) (store.IdemRecord, bool, error) {
	if err := checkID("account", accountID); err != nil {
		return store.IdemRecord{}, false, err
	}
	if key == "" {
		return store.IdemRecord{}, false, errBadIdemKey
	}
	k, v := idemKey(accountID, key), encodeIdem(&rec)
	var live store.IdemRecord
	won := false
	err := s.update(ctx, func(txn *badger.Txn) error {
		won = false
		var cur store.IdemRecord
		err := get(txn, k, func(v []byte) (e error) {
			cur, e = decodeIdem(v)
			return e
		})
		switch {
		case err == nil && now.Before(cur.ExpiresAt):
			live = cur
			return nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return err
		}
		won = true
		return txn.SetEntry(idemEntry(k, v, rec.ExpiresAt))
	})
	if err != nil {
		return store.IdemRecord{}, false, err
	}
	if won {
		return rec, true, nil
	}
	return live, false, nil
}

// CompleteIdempotencyKey implements store.Idempotency.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, accountID, key string, rec store.IdemRecord) error {
	if err := checkID("account", accountID); err != nil {
		return err
	}
	k, v := idemKey(accountID, key), encodeIdem(&rec)
	return s.update(ctx, func(txn *badger.Txn) error {
		ok, err := ownsRunning(txn, k, rec.Owner)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		return txn.SetEntry(idemEntry(k, v, rec.ExpiresAt))
	})
}

// ReleaseIdempotencyKey implements store.Idempotency.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, accountID, key, owner string) error {
	if err := checkID("account", accountID); err != nil {
		return err
	}
	k := idemKey(accountID, key)
	return s.update(ctx, func(txn *badger.Txn) error {
		if ok, err := ownsRunning(txn, k, owner); err != nil || !ok {
			return err
		}
		return txn.Delete(k)
	})
}

func ownsRunning(txn *badger.Txn, k []byte, owner string) (bool, error) {
	var cur store.IdemRecord
	err := get(txn, k, func(v []byte) (e error) {
		cur, e = decodeIdem(v)
		return e
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil && cur.Owner == owner && cur.State == store.IdemRunning, err
}

func idemEntry(k, v []byte, expires time.Time) *badger.Entry {
	return badger.NewEntry(k, v).WithTTL(max(time.Until(expires), 0) + time.Hour)
}

// idemMeta is a record without its body, which follows the JSON raw.
type idemMeta struct {
	Owner       string              `json:"owner"`
	Fingerprint []byte              `json:"fp"`
	State       string              `json:"state"`
	Status      int                 `json:"status,omitempty"`
	Header      map[string][]string `json:"header,omitempty"`
	CreatedAt   time.Time           `json:"created_at"`
	ExpiresAt   time.Time           `json:"expires_at"`
}

// encodeIdem is len(meta) (4) meta body.
func encodeIdem(r *store.IdemRecord) []byte {
	meta, _ := json.Marshal(idemMeta{r.Owner, r.Fingerprint, r.State, r.Status, r.Header, r.CreatedAt, r.ExpiresAt})
	b := make([]byte, 4, 4+len(meta)+len(r.Body))
	binary.BigEndian.PutUint32(b, uint32(len(meta)))
	return append(append(b, meta...), r.Body...)
}

func decodeIdem(v []byte) (store.IdemRecord, error) {
	if len(v) < 4 || int(binary.BigEndian.Uint32(v)) > len(v)-4 {
		return store.IdemRecord{}, errCorrupt
	}
	n := 4 + int(binary.BigEndian.Uint32(v))
	var m idemMeta
	if err := json.Unmarshal(v[4:n], &m); err != nil {
		return store.IdemRecord{}, errCorrupt
	}
	r := store.IdemRecord{Owner: m.Owner, Fingerprint: m.Fingerprint, State: m.State, Status: m.Status,
		Header: m.Header, CreatedAt: m.CreatedAt, ExpiresAt: m.ExpiresAt}
	if n < len(v) {
		r.Body = append([]byte(nil), v[n:]...)
	}
	return r, nil
}
