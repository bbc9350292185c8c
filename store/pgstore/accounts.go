package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/store"
)

const accountCols = `id, name, status, created_at, rpm, concurrency`

func scanAccount(row pgx.Row) (store.Account, error) {
	var a store.Account
	var created int64
	var rpm, conc int32
	err := row.Scan(&a.ID, &a.Name, &a.Status, &created, &rpm, &conc)
	a.CreatedAt, a.RPM, a.Concurrency = fromNS(created), int(rpm), int(conc)
	return a, err
}

// GetAccount reads one account, from the authentication cache when it
// can (cache.go).
func (s *Store) GetAccount(ctx context.Context, id string) (store.Account, error) {
	if err := s.enter(ctx); err != nil {
		return store.Account{}, err
	}
	a, gen, ok := s.cache.account(id)
	if ok {
		return a, nil
	}
	if !validID(id) {
		return store.Account{}, store.ErrNotFound
	}
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id))
	if err != nil {
		return a, s.fail(err)
	}
	s.cache.putAccount(a, gen)
	return a, nil
}

// ListAccounts returns every account in id order.
func (s *Store) ListAccounts(ctx context.Context) ([]store.Account, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+accountCols+` FROM accounts ORDER BY id`)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Account, error) { return scanAccount(r) })
	return out, s.fail(err)
}

// UpdateAccount replaces an existing account and moves the 'auth' change
// counter, so every instance's cache drops it (a disabled account is
// refused everywhere within the cache's bound).
func (s *Store) UpdateAccount(ctx context.Context, a store.Account) error {
	if err := checkID("account", a.ID); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.cache.invalidate()
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH a AS (
			UPDATE accounts SET name = $2, status = $3, created_at = $4, rpm = $5, concurrency = $6
			WHERE id = $1 RETURNING 1
		), c AS (`+bumpAuth+` AND EXISTS (SELECT 1 FROM a))
		SELECT count(*) FROM a`,
		a.ID, txt(a.Name), txt(a.Status), ns(a.CreatedAt), a.RPM, a.Concurrency).Scan(&n)
	if err != nil {
		return s.fail(err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// ListLedger returns an account's ledger entries, oldest first.
func (s *Store) ListLedger(ctx context.Context, accountID string) ([]store.LedgerEntry, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, amount, note, order_id, admin_token, user_id, created_at FROM ledger
		WHERE account_id = $1 ORDER BY id`, txt(accountID))
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LedgerEntry, error) {
		var e store.LedgerEntry
		var id, created int64
		err := r.Scan(&id, &e.AccountID, (*int64)(&e.Amount), &e.Note, &e.OrderID, &e.AdminToken, &e.UserID, &created)
		e.ID, e.CreatedAt = uint64(id), fromNS(created)
		return e, err
	})
	return out, s.fail(err)
}

// PutModel adds or replaces a runtime model.
func (s *Store) PutModel(ctx context.Context, m store.Model) error {
	if err := checkID("model", m.ID); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO models (id, owned_by, family) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET owned_by = EXCLUDED.owned_by, family = EXCLUDED.family`,
		m.ID, txt(m.OwnedBy), txt(m.Family))
	return s.fail(err)
}

// ListModels returns the runtime models in id order. They are read from
// the store each time (no instance caches them).
func (s *Store) ListModels(ctx context.Context) ([]store.Model, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, owned_by, family FROM models ORDER BY id`)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Model, error) {
		var m store.Model
		err := r.Scan(&m.ID, &m.OwnedBy, &m.Family)
		return m, err
	})
	return out, s.fail(err)
}
