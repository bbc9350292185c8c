package badgerstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// The sessions role: a session is a JSON record with an index per user;
// failed sign-ins a small record per subject, counted in a transaction
// (retried on conflict, so concurrent failures each count).

func sessionKey(id string) []byte     { return strKey(pSession, id) }
func sessUserKey(u, id string) []byte { return append(scoped(pSessUser, u), id...) }
func signInKey(subject string) []byte { return strKey(pSignIn, subject) }

// CreateSession implements store.Sessions.
func (s *Store) CreateSession(ctx context.Context, se store.Session) error {
	if err := errors.Join(checkID("session", se.ID), checkID("user", se.UserID)); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		dup, err := exists(txn, sessionKey(se.ID))
		if err != nil {
			return err
		}
		if dup {
			return store.ErrExists
		}
		return errors.Join(setJSON(txn, sessionKey(se.ID), se), txn.Set(sessUserKey(se.UserID, se.ID), nil))
	})
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, id string) (se store.Session, err error) {
	if !validID(id) {
		return se, store.ErrNotFound
	}
	err = s.view(ctx, func(txn *badger.Txn) error { return getJSON(txn, sessionKey(id), &se) })
	return se, err
}

// ListSessions implements store.Sessions.
func (s *Store) ListSessions(ctx context.Context, userID string) ([]store.Session, error) {
	return listIndexed(s, ctx, scoped(pSessUser, userID), sessionKey, nil,
		func(se *store.Session) (time.Time, string) { return se.CreatedAt, se.ID })
}

// DeleteSession implements store.Sessions.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var se store.Session
		if err := getJSON(txn, sessionKey(id), &se); err != nil {
			return err
		}
		return errors.Join(txn.Delete(sessionKey(id)), txn.Delete(sessUserKey(se.UserID, id)))
	})
}

// DeleteUserSessions implements store.Sessions.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	var n int
	err := s.update(ctx, func(txn *badger.Txn) (err error) {
		n, err = deleteSessionsOf(txn, userID)
		return err
	})
	return n, err
}

// deleteSessionsOf removes every session of a user in txn.
func deleteSessionsOf(txn *badger.Txn, userID string) (int, error) {
	prefix := scoped(pSessUser, userID)
	n := 0
	err := scanIndex(txn, prefix, func(id string) error {
		n++
		return errors.Join(txn.Delete(sessionKey(id)), txn.Delete(sessUserKey(userID, id)))
	})
	return n, err
}

// DeleteExpiredSessions implements store.Sessions: one pass over the
// sessions, deleting in batches.
func (s *Store) DeleteExpiredSessions(ctx context.Context, at time.Time) (int, error) {
	var expired []store.Session
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanPrefix(txn, []byte(pSession), true, func(it *badger.Item) error {
			var se store.Session
			if err := it.Value(func(v []byte) error { return json.Unmarshal(v, &se) }); err != nil {
				return err
			}
			if !at.Before(se.ExpiresAt) {
				expired = append(expired, se)
			}
			return nil
		})
	})
	n := 0
	for len(expired) > 0 && err == nil {
		batch := expired[:min(len(expired), 500)]
		expired = expired[len(batch):]
		err = s.update(ctx, func(txn *badger.Txn) error {
			for _, se := range batch {
				if err := errors.Join(txn.Delete(sessionKey(se.ID)), txn.Delete(sessUserKey(se.UserID, se.ID))); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			n += len(batch)
		}
	}
	return n, err
}

// signInRecord is what signin/{subject} holds.
type signInRecord struct {
	Count int       `json:"count"`
	Since time.Time `json:"since"`
}

// FailSignIn implements store.Sessions.
func (s *Store) FailSignIn(ctx context.Context, subject string, at time.Time, window time.Duration) (store.SignInFailures, error) {
	var out store.SignInFailures
	if err := checkID("sign-in subject", subject); err != nil {
		return out, err
	}
	s.signInMu.Lock()
	defer s.signInMu.Unlock()
	err := s.update(ctx, func(txn *badger.Txn) error {
		var r signInRecord
		if err := getJSON(txn, signInKey(subject), &r); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if r.Count == 0 || at.Sub(r.Since) >= window {
			r = signInRecord{Since: at.UTC()}
		}
		r.Count++
		out = store.SignInFailures(r)
		return setJSON(txn, signInKey(subject), r)
	})
	return out, err
}

// SignInFailuresOf implements store.Sessions.
func (s *Store) SignInFailuresOf(ctx context.Context, subject string, at time.Time, window time.Duration) (store.SignInFailures, error) {
	var r signInRecord
	if !validID(subject) {
		return store.SignInFailures{}, nil
	}
	err := s.view(ctx, func(txn *badger.Txn) error { return getJSON(txn, signInKey(subject), &r) })
	if errors.Is(err, store.ErrNotFound) || (err == nil && at.Sub(r.Since) >= window) {
		return store.SignInFailures{}, nil
	}
	return store.SignInFailures(r), err
}

// ClearSignInFailures implements store.Sessions.
func (s *Store) ClearSignInFailures(ctx context.Context, subject string) error {
	if !validID(subject) {
		return nil
	}
	return s.update(ctx, func(txn *badger.Txn) error { return txn.Delete(signInKey(subject)) })
}

var _ store.Sessions = (*Store)(nil)
