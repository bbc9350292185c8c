package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/store"
)

// The agents role (migrations/0003_agents.sql): agents, key requests and
// organization policies are JSON records beside the columns lists select
// on. The agent stage reads an agent and its organization's policy on
// every call of an agent key, so both are cached like keys (cache.go): an
// agent changed, unpublished or deleted, or a policy changed, on one
// instance moves the 'auth' counter and is seen by every instance within
// the cache's bound.

func scanAgent(row pgx.Row) (store.Agent, error) {
	var b []byte
	var a store.Agent
	if err := row.Scan(&b); err != nil {
		return a, err
	}
	return a, json.Unmarshal(b, &a)
}

func agentJSON(a *store.Agent) (string, error) {
	b, err := json.Marshal(a)
	return string(b), err
}

// CreateAgent implements store.Agents.
func (s *Store) CreateAgent(ctx context.Context, a store.Agent) error {
	if err := errors.Join(checkID("agent", a.ID), checkID("account", a.AccountID)); err != nil {
		return err
	}
	v, err := agentJSON(&a)
	if err != nil {
		return err
	}
	return s.execOne(ctx, `INSERT INTO agents (id, account_id, created_at, deleted, agent)
		SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $2)`,
		a.ID, a.AccountID, ns(a.CreatedAt), a.DeletedAt != nil, v)
}

// GetAgent implements store.Agents, from the cache while it is fresh.
func (s *Store) GetAgent(ctx context.Context, id string) (store.Agent, error) {
	if err := s.enter(ctx); err != nil {
		return store.Agent{}, err
	}
	if !validID(id) {
		return store.Agent{}, store.ErrNotFound
	}
	a, gen, ok := s.cache.agent(id)
	if ok {
		return a, nil
	}
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT agent FROM agents WHERE id = $1`, id))
	if err != nil {
		return a, s.fail(err)
	}
	s.cache.putAgent(a, gen)
	return a, nil
}

// ListAgents implements store.Agents.
func (s *Store) ListAgents(ctx context.Context, accountID string) ([]store.Agent, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT agent FROM agents WHERE account_id = $1 AND NOT deleted
		ORDER BY created_at, id`, txt(accountID))
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Agent, error) { return scanAgent(r) })
	return out, s.fail(err)
}

// UpdateAgent implements store.Agents: the agent's account and creation
// stay; a deleted agent is not found.
func (s *Store) UpdateAgent(ctx context.Context, a store.Agent) error {
	if err := checkID("agent", a.ID); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.cache.invalidate()
	return s.tx(ctx, func(tx pgx.Tx) error {
		old, err := scanAgent(tx.QueryRow(ctx, `SELECT agent FROM agents WHERE id = $1 FOR UPDATE`, a.ID))
		if err != nil {
			return err
		}
		if old.DeletedAt != nil {
			return store.ErrNotFound
		}
		a.AccountID, a.CreatedAt, a.DeletedAt = old.AccountID, old.CreatedAt, nil
		v, err := agentJSON(&a)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE agents SET agent = $2 WHERE id = $1`, a.ID, v); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, bumpAuth)
		return err
	})
}

// DeleteAgent implements store.Agents: a soft delete.
func (s *Store) DeleteAgent(ctx context.Context, id string, at time.Time) error {
	if err := checkID("agent", id); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.cache.invalidate()
	return s.tx(ctx, func(tx pgx.Tx) error {
		a, err := scanAgent(tx.QueryRow(ctx, `SELECT agent FROM agents WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if a.DeletedAt != nil {
			return store.ErrNotFound
		}
		at := at.UTC()
		a.DeletedAt = &at
		v, err := agentJSON(&a)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE agents SET agent = $2, deleted = true WHERE id = $1`, id, v); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, bumpAuth)
		return err
	})
}

func scanRequest(row pgx.Row) (store.KeyRequest, error) {
	var b []byte
	var r store.KeyRequest
	if err := row.Scan(&b); err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// CreateKeyRequest implements store.Agents: the request takes its account
// from the agent, which must not be deleted.
func (s *Store) CreateKeyRequest(ctx context.Context, r store.KeyRequest) error {
	if err := errors.Join(checkID("key request", r.ID), checkID("agent", r.AgentID)); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		a, err := scanAgent(tx.QueryRow(ctx, `SELECT agent FROM agents WHERE id = $1 FOR SHARE`, r.AgentID))
		if err != nil {
			return err
		}
		if a.DeletedAt != nil {
			return store.ErrNotFound
		}
		r.AccountID = a.AccountID
		v, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO key_requests (id, account_id, created_at, status, request) VALUES ($1, $2, $3, $4, $5)`,
			r.ID, r.AccountID, ns(r.CreatedAt), txt(r.Status), string(v))
		return err
	})
}

// GetKeyRequest implements store.Agents.
func (s *Store) GetKeyRequest(ctx context.Context, id string) (store.KeyRequest, error) {
	if err := s.enter(ctx); err != nil {
		return store.KeyRequest{}, err
	}
	if !validID(id) {
		return store.KeyRequest{}, store.ErrNotFound
	}
	r, err := scanRequest(s.pool.QueryRow(ctx, `SELECT request FROM key_requests WHERE id = $1`, id))
	return r, s.fail(err)
}

// ListKeyRequests implements store.Agents.
func (s *Store) ListKeyRequests(ctx context.Context, accountID string) ([]store.KeyRequest, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT request FROM key_requests WHERE account_id = $1 ORDER BY created_at, id`, txt(accountID))
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.KeyRequest, error) { return scanRequest(r) })
	return out, s.fail(err)
}

// answer decides a pending request in a transaction that locks it, so of
// two answers the second finds it decided; issue, when set, runs in the
// same transaction (the approval's key).
func (s *Store) answer(ctx context.Context, id string, at time.Time, status string, issue func(pgx.Tx, *store.KeyRequest) error) (store.KeyRequest, error) {
	var out store.KeyRequest
	if err := s.enter(ctx); err != nil {
		return out, err
	}
	if !validID(id) {
		return out, store.ErrNotFound
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRequest(tx.QueryRow(ctx, `SELECT request FROM key_requests WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if r.Status != store.KeyRequestPending {
			return store.ErrDecided
		}
		if issue != nil {
			if err := issue(tx, &r); err != nil {
				return err
			}
		}
		at := at.UTC()
		r.Status, r.DecidedAt = status, &at
		v, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE key_requests SET status = $2, request = $3 WHERE id = $1`, id, status, string(v)); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}

// ApproveKeyRequest implements store.Agents: the key is created and the
// request answered in one transaction.
func (s *Store) ApproveKeyRequest(ctx context.Context, id string, k store.Key, at time.Time) (store.KeyRequest, error) {
	if err := errors.Join(checkID("key", k.ID), checkID("account", k.AccountID)); err != nil {
		return store.KeyRequest{}, err
	}
	if len(k.Hash) == 0 {
		return store.KeyRequest{}, errNoHash
	}
	return s.answer(ctx, id, at, store.KeyRequestApproved, func(tx pgx.Tx, r *store.KeyRequest) error {
		if r.AccountID != k.AccountID {
			return fmt.Errorf("pgstore: the key's account %q is not the request's %q", k.AccountID, r.AccountID)
		}
		tag, err := tx.Exec(ctx, insertKeySQL, insertKeyArgs(&k)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		r.KeyID = k.ID
		return nil
	})
}

// RejectKeyRequest implements store.Agents.
func (s *Store) RejectKeyRequest(ctx context.Context, id string, at time.Time) (store.KeyRequest, error) {
	return s.answer(ctx, id, at, store.KeyRequestRejected, nil)
}

// GetOrganization implements store.Agents, from the cache while it is
// fresh.
func (s *Store) GetOrganization(ctx context.Context, accountID string) (store.Organization, error) {
	if err := s.enter(ctx); err != nil {
		return store.Organization{}, err
	}
	if !validID(accountID) {
		return store.Organization{}, store.ErrNotFound
	}
	o, gen, ok := s.cache.organization(accountID)
	if ok {
		return o, nil
	}
	var policy []byte
	err := s.pool.QueryRow(ctx, `SELECT o.policy FROM accounts a LEFT JOIN organizations o ON o.account_id = a.id
		WHERE a.id = $1`, accountID).Scan(&policy)
	if err != nil {
		return store.Organization{}, s.fail(err)
	}
	o = store.Organization{AccountID: accountID}
	if policy != nil {
		if err := json.Unmarshal(policy, &o); err != nil {
			return store.Organization{}, err
		}
	}
	s.cache.putOrganization(o, gen)
	return o, nil
}

// SetOrganization implements store.Agents.
func (s *Store) SetOrganization(ctx context.Context, o store.Organization) error {
	if err := checkID("account", o.AccountID); err != nil {
		return err
	}
	if !o.RestrictModels {
		o.AllowedModels = nil
	}
	v, err := json.Marshal(&o)
	if err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.cache.invalidate()
	var n int
	err = s.pool.QueryRow(ctx, `
		WITH o AS (
			INSERT INTO organizations (account_id, policy)
			SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $1)
			ON CONFLICT (account_id) DO UPDATE SET policy = EXCLUDED.policy
			RETURNING 1
		), c AS (`+bumpAuth+` AND EXISTS (SELECT 1 FROM o))
		SELECT count(*) FROM o`, o.AccountID, string(v)).Scan(&n)
	if err != nil {
		return s.fail(err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

var _ store.Agents = (*Store)(nil)
