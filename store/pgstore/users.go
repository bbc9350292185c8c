package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/store"
)

// The users role: users and invitations are JSON records beside the
// columns lookups and lists use (migrations/0004_console.sql). Accepting
// an invitation deletes it and inserts the user in one transaction.

func scanJSON[T any](row pgx.Row) (T, error) {
	var b []byte
	var v T
	if err := row.Scan(&b); err != nil {
		return v, err
	}
	return v, json.Unmarshal(b, &v)
}

func collectJSON[T any](rows pgx.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scanJSON[T](r) })
}

// insertUserSQL writes a new user of an existing account ($2); a taken id
// or email fails on the unique indexes.
const insertUserSQL = `INSERT INTO users (id, account_id, email, created_at, "user")
	SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $2)`

// CreateUser implements store.Users.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	if err := errors.Join(checkID("user", u.ID), checkID("account", u.AccountID), checkID("email", u.Email)); err != nil {
		return err
	}
	v, err := json.Marshal(&u)
	if err != nil {
		return err
	}
	return s.execOne(ctx, insertUserSQL, u.ID, u.AccountID, u.Email, ns(u.CreatedAt), string(v))
}

// GetUser implements store.Users.
func (s *Store) GetUser(ctx context.Context, id string) (store.User, error) {
	return s.userWhere(ctx, "id", id)
}

// UserByEmail implements store.Users.
func (s *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	return s.userWhere(ctx, "email", email)
}

func (s *Store) userWhere(ctx context.Context, col, v string) (store.User, error) {
	if err := s.enter(ctx); err != nil {
		return store.User{}, err
	}
	if !validID(v) {
		return store.User{}, store.ErrNotFound
	}
	u, err := scanJSON[store.User](s.pool.QueryRow(ctx, `SELECT "user" FROM users WHERE `+col+` = $1`, v))
	return u, s.fail(err)
}

// ListUsers implements store.Users.
func (s *Store) ListUsers(ctx context.Context, accountID string) ([]store.User, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out, err := collectJSON[store.User](s.pool.Query(ctx,
		`SELECT "user" FROM users WHERE account_id = $1 ORDER BY created_at, id`, txt(accountID)))
	return out, s.fail(err)
}

// UpdateUser implements store.Users: the stored account, email and
// creation stay.
func (s *Store) UpdateUser(ctx context.Context, u store.User) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(u.ID) {
		return store.ErrNotFound
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		old, err := scanJSON[store.User](tx.QueryRow(ctx, `SELECT "user" FROM users WHERE id = $1 FOR UPDATE`, u.ID))
		if err != nil {
			return err
		}
		u.AccountID, u.Email, u.CreatedAt = old.AccountID, old.Email, old.CreatedAt
		v, err := json.Marshal(&u)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE users SET "user" = $2 WHERE id = $1`, u.ID, string(v))
		return err
	})
}

// DeleteUser implements store.Users: the user and its sessions in one
// statement.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(id) {
		return store.ErrNotFound
	}
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH u AS (DELETE FROM users WHERE id = $1 RETURNING 1),
		s AS (DELETE FROM sessions WHERE user_id = $1 AND EXISTS (SELECT 1 FROM u))
		SELECT count(*) FROM u`, id).Scan(&n)
	if err != nil {
		return s.fail(err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// CreateInvitation implements store.Users.
func (s *Store) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	if err := errors.Join(checkID("invitation", inv.ID), checkID("account", inv.AccountID)); err != nil {
		return err
	}
	v, err := json.Marshal(&inv)
	if err != nil {
		return err
	}
	return s.execOne(ctx, `INSERT INTO invitations (id, account_id, created_at, invitation)
		SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $2)`,
		inv.ID, inv.AccountID, ns(inv.CreatedAt), string(v))
}

// ListInvitations implements store.Users.
func (s *Store) ListInvitations(ctx context.Context, accountID string) ([]store.Invitation, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out, err := collectJSON[store.Invitation](s.pool.Query(ctx,
		`SELECT invitation FROM invitations WHERE account_id = $1 ORDER BY created_at, id`, txt(accountID)))
	return out, s.fail(err)
}

// DeleteInvitation implements store.Users.
func (s *Store) DeleteInvitation(ctx context.Context, id string) error {
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.execOne(ctx, `DELETE FROM invitations WHERE id = $1`, id)
}

// AcceptInvitation implements store.Users: the invitation is deleted and
// the user inserted in one transaction; of two acceptances one finds the
// invitation gone.
func (s *Store) AcceptInvitation(ctx context.Context, id string, u store.User, at time.Time) (store.Invitation, store.User, error) {
	var inv store.Invitation
	if err := s.enter(ctx); err != nil {
		return inv, u, err
	}
	if !validID(id) {
		return inv, u, store.ErrNotFound
	}
	if err := errors.Join(checkID("user", u.ID), checkID("email", u.Email)); err != nil {
		return inv, u, err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		inv, err = scanJSON[store.Invitation](tx.QueryRow(ctx, `DELETE FROM invitations WHERE id = $1 RETURNING invitation`, id))
		if err != nil {
			return err
		}
		if !at.Before(inv.ExpiresAt) || (inv.Email != "" && inv.Email != u.Email) {
			return store.ErrNotFound
		}
		u.AccountID, u.Role = inv.AccountID, inv.Role
		v, err := json.Marshal(&u)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, insertUserSQL, u.ID, u.AccountID, u.Email, ns(u.CreatedAt), string(v))
		if err == nil && tag.RowsAffected() == 0 {
			err = store.ErrNotFound
		}
		return err
	})
	return inv, u, err
}

var _ store.Users = (*Store)(nil)
