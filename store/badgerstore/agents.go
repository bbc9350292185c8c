package badgerstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// The agents role: agents, key requests and organization policies are
// small JSON records with an index per account; an approval writes the
// key and the answered request in one transaction.

func agentKey(id string) []byte  { return strKey(pAgent, id) }
func keyReqKey(id string) []byte { return strKey(pKeyReq, id) }
func orgKey(id string) []byte    { return strKey(pOrg, id) }

func getJSON(txn *badger.Txn, k []byte, v any) error {
	return get(txn, k, func(b []byte) error { return json.Unmarshal(b, v) })
}

func setJSON(txn *badger.Txn, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(k, b)
}

func accountExists(txn *badger.Txn, id string) error {
	ok, err := exists(txn, accountKey(id))
	if err == nil && !ok {
		err = store.ErrNotFound
	}
	return err
}

// CreateAgent implements store.Agents.
func (s *Store) CreateAgent(ctx context.Context, a store.Agent) error {
	if err := errors.Join(checkID("agent", a.ID), checkID("account", a.AccountID)); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		dup, err := exists(txn, agentKey(a.ID))
		if err != nil {
			return err
		}
		if dup {
			return store.ErrExists
		}
		if err := accountExists(txn, a.AccountID); err != nil {
			return err
		}
		return errors.Join(setJSON(txn, agentKey(a.ID), a), txn.Set(append(scoped(pAgentAcct, a.AccountID), a.ID...), nil))
	})
}

// GetAgent implements store.Agents.
func (s *Store) GetAgent(ctx context.Context, id string) (a store.Agent, err error) {
	err = s.view(ctx, func(txn *badger.Txn) error { return getJSON(txn, agentKey(id), &a) })
	return a, err
}

// ListAgents implements store.Agents.
func (s *Store) ListAgents(ctx context.Context, accountID string) ([]store.Agent, error) {
	return listIndexed(s, ctx, scoped(pAgentAcct, accountID), agentKey,
		func(a *store.Agent) bool { return a.DeletedAt == nil },
		func(a *store.Agent) (time.Time, string) { return a.CreatedAt, a.ID })
}

// listIndexed reads the JSON records an index names (the ids after
// prefix, each record under key(id)), those keep accepts (nil: all),
// oldest first, then by id: the order of the roles' lists.
func listIndexed[T any](s *Store, ctx context.Context, prefix []byte, key func(string) []byte,
	keep func(*T) bool, order func(*T) (time.Time, string)) ([]T, error) {
	var out []T
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanIndex(txn, prefix, func(id string) error {
			var v T
			if err := getJSON(txn, key(id), &v); err != nil {
				return err
			}
			if keep == nil || keep(&v) {
				out = append(out, v)
			}
			return nil
		})
	})
	sortByCreation(out, order)
	return out, err
}

// sortByCreation sorts oldest first, then by id.
func sortByCreation[T any](out []T, order func(*T) (time.Time, string)) {
	slices.SortStableFunc(out, func(a, b T) int {
		ta, ia := order(&a)
		tb, ib := order(&b)
		return cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
	})
}

// scanIndex calls fn with the id after prefix of every index entry.
func scanIndex(txn *badger.Txn, prefix []byte, fn func(id string) error) error {
	var ids []string
	if err := scanPrefix(txn, prefix, false, func(it *badger.Item) error {
		ids = append(ids, string(it.Key()[len(prefix):]))
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

// UpdateAgent implements store.Agents.
func (s *Store) UpdateAgent(ctx context.Context, a store.Agent) error {
	if err := checkID("agent", a.ID); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var old store.Agent
		if err := getJSON(txn, agentKey(a.ID), &old); err != nil {
			return err
		}
		if old.DeletedAt != nil {
			return store.ErrNotFound
		}
		a.AccountID, a.CreatedAt, a.DeletedAt = old.AccountID, old.CreatedAt, nil
		return setJSON(txn, agentKey(a.ID), a)
	})
}

// DeleteAgent implements store.Agents.
func (s *Store) DeleteAgent(ctx context.Context, id string, at time.Time) error {
	if err := checkID("agent", id); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var a store.Agent
		if err := getJSON(txn, agentKey(id), &a); err != nil {
			return err
		}
		if a.DeletedAt != nil {
			return store.ErrNotFound
		}
		at := at.UTC()
		a.DeletedAt = &at
		return setJSON(txn, agentKey(id), a)
	})
}

// CreateKeyRequest implements store.Agents.
func (s *Store) CreateKeyRequest(ctx context.Context, r store.KeyRequest) error {
	if err := errors.Join(checkID("key request", r.ID), checkID("agent", r.AgentID)); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		dup, err := exists(txn, keyReqKey(r.ID))
		if err != nil {
			return err
		}
		if dup {
			return store.ErrExists
		}
		var a store.Agent
		if err := getJSON(txn, agentKey(r.AgentID), &a); err != nil {
			return err
		}
		if a.DeletedAt != nil {
			return store.ErrNotFound
		}
		r.AccountID = a.AccountID
		return errors.Join(setJSON(txn, keyReqKey(r.ID), r), txn.Set(append(scoped(pKeyReqAcc, r.AccountID), r.ID...), nil))
	})
}

// GetKeyRequest implements store.Agents.
func (s *Store) GetKeyRequest(ctx context.Context, id string) (r store.KeyRequest, err error) {
	err = s.view(ctx, func(txn *badger.Txn) error { return getJSON(txn, keyReqKey(id), &r) })
	return r, err
}

// ListKeyRequests implements store.Agents.
func (s *Store) ListKeyRequests(ctx context.Context, accountID string) ([]store.KeyRequest, error) {
	return listIndexed(s, ctx, scoped(pKeyReqAcc, accountID), keyReqKey, nil,
		func(r *store.KeyRequest) (time.Time, string) { return r.CreatedAt, r.ID })
}

// ApproveKeyRequest implements store.Agents: the key and the answered
// request in one transaction, so a conflicting second answer retries and
// then sees the request decided.
func (s *Store) ApproveKeyRequest(ctx context.Context, id string, k store.Key, at time.Time) (store.KeyRequest, error) {
	var out store.KeyRequest
	if err := errors.Join(checkID("key", k.ID), checkID("account", k.AccountID)); err != nil {
		return out, err
	}
	if len(k.Hash) == 0 {
		return out, errNoHash
	}
	kk, kv, hk := keyKey(k.ID), encodeKey(&k), keyHashKey(k.Hash)
	err := s.update(ctx, func(txn *badger.Txn) error {
		var r store.KeyRequest
		if err := getJSON(txn, keyReqKey(id), &r); err != nil {
			return err
		}
		if r.Status != store.KeyRequestPending {
			return store.ErrDecided
		}
		if r.AccountID != k.AccountID {
			return errors.New("badgerstore: the key's account is not the request's")
		}
		for _, key := range [][]byte{kk, hk} {
			dup, err := exists(txn, key)
			if err != nil {
				return err
			}
			if dup {
				return store.ErrExists
			}
		}
		at := at.UTC()
		r.Status, r.KeyID, r.DecidedAt = store.KeyRequestApproved, k.ID, &at
		out = r
		return errors.Join(txn.Set(kk, kv), txn.Set(hk, []byte(k.ID)), txn.Set(keyAcctKey(k.AccountID, k.ID), nil),
			setJSON(txn, keyReqKey(id), r))
	})
	return out, err
}

// RejectKeyRequest implements store.Agents.
func (s *Store) RejectKeyRequest(ctx context.Context, id string, at time.Time) (store.KeyRequest, error) {
	var out store.KeyRequest
	err := s.update(ctx, func(txn *badger.Txn) error {
		var r store.KeyRequest
		if err := getJSON(txn, keyReqKey(id), &r); err != nil {
			return err
		}
		if r.Status != store.KeyRequestPending {
			return store.ErrDecided
		}
		at := at.UTC()
		r.Status, r.DecidedAt = store.KeyRequestRejected, &at
		out = r
		return setJSON(txn, keyReqKey(id), r)
	})
	return out, err
}

// GetOrganization implements store.Agents.
func (s *Store) GetOrganization(ctx context.Context, accountID string) (o store.Organization, err error) {
	err = s.view(ctx, func(txn *badger.Txn) error {
		if err := accountExists(txn, accountID); err != nil {
			return err
		}
		err := getJSON(txn, orgKey(accountID), &o)
		if errors.Is(err, store.ErrNotFound) {
			o, err = store.Organization{AccountID: accountID}, nil
		}
		return err
	})
	return o, err
}

// SetOrganization implements store.Agents.
func (s *Store) SetOrganization(ctx context.Context, o store.Organization) error {
	if err := checkID("account", o.AccountID); err != nil {
		return err
	}
	if !o.RestrictModels {
		o.AllowedModels = nil
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		if err := accountExists(txn, o.AccountID); err != nil {
			return err
		}
		return setJSON(txn, orgKey(o.AccountID), o)
	})
}
