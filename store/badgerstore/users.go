package badgerstore

import (
	"context"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// The users role: a user is a JSON record with an index by email (unique)
// and one per account; an invitation a JSON record with one per account.
// Accepting an invitation writes the user and removes the invitation in
// one transaction.

func userKey(id string) []byte       { return strKey(pUser, id) }
func userEmailKey(e string) []byte   { return strKey(pUserEmail, e) }
func inviteKey(id string) []byte     { return strKey(pInvite, id) }
func userAcctKey(a, u string) []byte { return append(scoped(pUserAcct, a), u...) }

// CreateUser implements store.Users.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	if err := errors.Join(checkID("user", u.ID), checkID("account", u.AccountID), checkID("email", u.Email)); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error { return putNewUser(txn, u) })
}

// putNewUser writes a user that must not exist yet, of an account that
// must.
func putNewUser(txn *badger.Txn, u store.User) error {
	for _, k := range [][]byte{userKey(u.ID), userEmailKey(u.Email)} {
		dup, err := exists(txn, k)
		if err != nil {
			return err
		}
		if dup {
			return store.ErrExists
		}
	}
	if err := accountExists(txn, u.AccountID); err != nil {
		return err
	}
	return errors.Join(setJSON(txn, userKey(u.ID), u), txn.Set(userEmailKey(u.Email), []byte(u.ID)),
		txn.Set(userAcctKey(u.AccountID, u.ID), nil))
}

// GetUser implements store.Users.
func (s *Store) GetUser(ctx context.Context, id string) (u store.User, err error) {
	if !validID(id) {
		return u, store.ErrNotFound
	}
	err = s.view(ctx, func(txn *badger.Txn) error { return getJSON(txn, userKey(id), &u) })
	return u, err
}

// UserByEmail implements store.Users.
func (s *Store) UserByEmail(ctx context.Context, email string) (u store.User, err error) {
	if !validID(email) {
		return u, store.ErrNotFound
	}
	err = s.view(ctx, func(txn *badger.Txn) error {
		var id string
		if err := get(txn, userEmailKey(email), func(v []byte) error { id = string(v); return nil }); err != nil {
			return err
		}
		return getJSON(txn, userKey(id), &u)
	})
	return u, err
}

// ListUsers implements store.Users.
func (s *Store) ListUsers(ctx context.Context, accountID string) ([]store.User, error) {
	return listIndexed(s, ctx, scoped(pUserAcct, accountID), userKey, nil,
		func(u *store.User) (time.Time, string) { return u.CreatedAt, u.ID })
}

// UpdateUser implements store.Users.
func (s *Store) UpdateUser(ctx context.Context, u store.User) error {
	if !validID(u.ID) {
		return store.ErrNotFound
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var old store.User
		if err := getJSON(txn, userKey(u.ID), &old); err != nil {
			return err
		}
		u.AccountID, u.Email, u.CreatedAt = old.AccountID, old.Email, old.CreatedAt
		return setJSON(txn, userKey(u.ID), u)
	})
}

// DeleteUser implements store.Users: the user, its indexes and its
// sessions go in one transaction.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var u store.User
		if err := getJSON(txn, userKey(id), &u); err != nil {
			return err
		}
		if _, err := deleteSessionsOf(txn, id); err != nil {
			return err
		}
		return errors.Join(txn.Delete(userKey(id)), txn.Delete(userEmailKey(u.Email)),
			txn.Delete(userAcctKey(u.AccountID, id)))
	})
}

// CreateInvitation implements store.Users.
func (s *Store) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	if err := errors.Join(checkID("invitation", inv.ID), checkID("account", inv.AccountID)); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		dup, err := exists(txn, inviteKey(inv.ID))
		if err != nil {
			return err
		}
		if dup {
			return store.ErrExists
		}
		if err := accountExists(txn, inv.AccountID); err != nil {
			return err
		}
		return errors.Join(setJSON(txn, inviteKey(inv.ID), inv),
			txn.Set(append(scoped(pInviteAcct, inv.AccountID), inv.ID...), nil))
	})
}

// ListInvitations implements store.Users.
func (s *Store) ListInvitations(ctx context.Context, accountID string) ([]store.Invitation, error) {
	return listIndexed(s, ctx, scoped(pInviteAcct, accountID), inviteKey, nil,
		func(inv *store.Invitation) (time.Time, string) { return inv.CreatedAt, inv.ID })
}

// DeleteInvitation implements store.Users.
func (s *Store) DeleteInvitation(ctx context.Context, id string) error {
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var inv store.Invitation
		if err := getJSON(txn, inviteKey(id), &inv); err != nil {
			return err
		}
		return dropInvitation(txn, inv)
	})
}

func dropInvitation(txn *badger.Txn, inv store.Invitation) error {
	return errors.Join(txn.Delete(inviteKey(inv.ID)), txn.Delete(append(scoped(pInviteAcct, inv.AccountID), inv.ID...)))
}

// AcceptInvitation implements store.Users.
func (s *Store) AcceptInvitation(ctx context.Context, id string, u store.User, at time.Time) (store.Invitation, store.User, error) {
	var inv store.Invitation
	if !validID(id) {
		return inv, u, store.ErrNotFound
	}
	if err := errors.Join(checkID("user", u.ID), checkID("email", u.Email)); err != nil {
		return inv, u, err
	}
	err := s.update(ctx, func(txn *badger.Txn) error {
		if err := getJSON(txn, inviteKey(id), &inv); err != nil {
			return err
		}
		if !at.Before(inv.ExpiresAt) || (inv.Email != "" && inv.Email != u.Email) {
			return store.ErrNotFound
		}
		u.AccountID, u.Role = inv.AccountID, inv.Role
		if err := putNewUser(txn, u); err != nil {
			return err
		}
		return dropInvitation(txn, inv)
	})
	return inv, u, err
}

var _ store.Users = (*Store)(nil)
