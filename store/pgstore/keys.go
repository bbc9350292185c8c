package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

const keyCols = `id, account_id, name, prefix, hash, sealed, restrict_models, allowed_models, expires_at,
	enabled, logs_account_scope, kind, created_at, last_used_at, agent_id, spend_cap, user_id`

var errNoHash = errors.New("pgstore: key without a hash")

func scanKey(row pgx.Row) (store.Key, error) {
	var k store.Key
	var created int64
	var expires, used, limit *int64
	err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Hash, &k.Sealed, &k.RestrictModels,
		&k.AllowedModels, &expires, &k.Enabled, &k.LogsAccountScope, &k.Kind, &created, &used, &k.AgentID, &limit, &k.UserID)
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt = fromNS(created), fromNSPtr(expires), fromNSPtr(used)
	if limit != nil {
		c := money.Nano(*limit)
		k.SpendCap = &c
	}
	return k, err
}

// spendCap is a key's cap as a column: NULL for none.
func spendCap(c *money.Nano) *int64 {
	if c == nil {
		return nil
	}
	n := int64(*c)
	return &n
}

// insertKeySQL writes a new key of an existing account ($2); a duplicate
// id or hash fails on the unique indexes.
const insertKeySQL = `INSERT INTO api_keys (` + keyCols + `)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17
	WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $2)`

func insertKeyArgs(k *store.Key) []any {
	return []any{k.ID, k.AccountID, txt(k.Name), txt(k.Prefix), k.Hash, k.Sealed, k.RestrictModels,
		txts(k.AllowedModels), nsPtr(k.ExpiresAt), k.Enabled, k.LogsAccountScope, txt(k.Kind),
		ns(k.CreatedAt), nsPtr(k.LastUsedAt), txt(k.AgentID), spendCap(k.SpendCap), txt(k.UserID)}
}

// CreateKey stores a new key of an existing account; a duplicate id or
// hash is ErrExists, an unknown account ErrNotFound.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if err := errors.Join(checkID("key", k.ID), checkID("account", k.AccountID)); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return errNoHash
	}
	return s.execOne(ctx, insertKeySQL, insertKeyArgs(&k)...)
}

// GetKey reads a key by id, with its last use.
func (s *Store) GetKey(ctx context.Context, id string) (store.Key, error) {
	if err := s.enter(ctx); err != nil {
		return store.Key{}, err
	}
	if !validID(id) {
		return store.Key{}, store.ErrNotFound
	}
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = $1`, id))
	return k, s.fail(err)
}

// KeyByHash is the authentication lookup, answered from the cache while
// it is fresh (cache.go).
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (store.Key, error) {
	if err := s.enter(ctx); err != nil {
		return store.Key{}, err
	}
	if len(hash) == 0 {
		return store.Key{}, store.ErrNotFound
	}
	k, gen, ok := s.cache.key(hash)
	if ok {
		return k, nil
	}
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE hash = $1`, hash))
	if err != nil {
		return k, s.fail(err)
	}
	s.cache.putKey(k, gen)
	return k, nil
}

// ListKeys returns an account's keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`, txt(accountID))
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) { return scanKey(r) })
	return out, s.fail(err)
}

// UpdateKey replaces an existing key (its last use stays: TouchKey keeps
// it) and moves the 'auth' change counter, so every instance's cache
// drops the key.
func (s *Store) UpdateKey(ctx context.Context, k store.Key) error {
	if err := errors.Join(checkID("key", k.ID), checkID("account", k.AccountID)); err != nil {
		return err
	}
	if len(k.Hash) == 0 {
		return errNoHash
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.cache.invalidate()
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH k AS (
			UPDATE api_keys SET account_id = $2, name = $3, prefix = $4, hash = $5, sealed = $6,
				restrict_models = $7, allowed_models = $8, expires_at = $9, enabled = $10,
				logs_account_scope = $11, kind = $12, created_at = $13, agent_id = $14, spend_cap = $15,
				user_id = $16
			WHERE id = $1 RETURNING 1
		), c AS (`+bumpAuth+` AND EXISTS (SELECT 1 FROM k))
		SELECT count(*) FROM k`,
		k.ID, k.AccountID, txt(k.Name), txt(k.Prefix), k.Hash, k.Sealed, k.RestrictModels,
		txts(k.AllowedModels), nsPtr(k.ExpiresAt), k.Enabled, k.LogsAccountScope, txt(k.Kind),
		ns(k.CreatedAt), txt(k.AgentID), spendCap(k.SpendCap), txt(k.UserID)).Scan(&n)
	if err != nil {
		return s.fail(err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// DeleteKey removes a key; its usage total and log rows stay.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(id) {
		return store.ErrNotFound
	}
	defer s.cache.invalidate()
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH k AS (DELETE FROM api_keys WHERE id = $1 RETURNING 1),
		c AS (`+bumpAuth+` AND EXISTS (SELECT 1 FROM k))
		SELECT count(*) FROM k`, id).Scan(&n)
	if err != nil {
		return s.fail(err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// KeyUsage is the total charged to a key; 0 for a key never charged.
func (s *Store) KeyUsage(ctx context.Context, keyID string) (money.Nano, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT total FROM key_usage WHERE key_id = $1`, txt(keyID)).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return money.Nano(n), s.fail(err)
}

// TouchKey records the key's last use. It does not move the change
// counter: a use changes nothing authentication reads.
func (s *Store) TouchKey(ctx context.Context, keyID string, at time.Time) error {
	if err := checkID("key", keyID); err != nil {
		return err
	}
	return s.execOne(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, keyID, ns(at))
}
