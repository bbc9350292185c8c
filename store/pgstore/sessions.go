package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/store"
)

// The sessions role: sessions are JSON records keyed by the hash of their
// token; failed sign-ins one counter row per subject, moved by one upsert
// (migrations/0004_console.sql).

// CreateSession implements store.Sessions.
func (s *Store) CreateSession(ctx context.Context, se store.Session) error {
	if err := errors.Join(checkID("session", se.ID), checkID("user", se.UserID)); err != nil {
		return err
	}
	se.Address, se.UserAgent = txt(se.Address), txt(se.UserAgent)
	v, err := json.Marshal(&se)
	if err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, user_id, created_at, expires_at, session) VALUES ($1, $2, $3, $4, $5)`,
		se.ID, se.UserID, ns(se.CreatedAt), ns(se.ExpiresAt), string(v))
	return s.fail(err)
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	if err := s.enter(ctx); err != nil {
		return store.Session{}, err
	}
	if !validID(id) {
		return store.Session{}, store.ErrNotFound
	}
	se, err := scanJSON[store.Session](s.pool.QueryRow(ctx, `SELECT session FROM sessions WHERE id = $1`, id))
	return se, s.fail(err)
}

// ListSessions implements store.Sessions.
func (s *Store) ListSessions(ctx context.Context, userID string) ([]store.Session, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out, err := collectJSON[store.Session](s.pool.Query(ctx,
		`SELECT session FROM sessions WHERE user_id = $1 ORDER BY created_at, id`, txt(userID)))
	return out, s.fail(err)
}

// DeleteSession implements store.Sessions.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.execOne(ctx, `DELETE FROM sessions WHERE id = $1`, id)
}

// DeleteUserSessions implements store.Sessions.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, txt(userID))
	return int(tag.RowsAffected()), s.fail(err)
}

// DeleteExpiredSessions implements store.Sessions.
func (s *Store) DeleteExpiredSessions(ctx context.Context, at time.Time) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, ns(at))
	return int(tag.RowsAffected()), s.fail(err)
}

// FailSignIn implements store.Sessions: one upsert counts the failure,
// starting the window afresh when it has run out; the row lock makes
// concurrent failures each count.
func (s *Store) FailSignIn(ctx context.Context, subject string, at time.Time, window time.Duration) (store.SignInFailures, error) {
	var out store.SignInFailures
	if err := checkID("sign-in subject", subject); err != nil {
		return out, err
	}
	if err := s.enter(ctx); err != nil {
		return out, err
	}
	var since int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO signin_failures AS f (subject, n, since) VALUES ($1, 1, $2)
		ON CONFLICT (subject) DO UPDATE SET
			n = CASE WHEN f.since <= $2::bigint - $3::bigint THEN 1 ELSE f.n + 1 END,
			since = CASE WHEN f.since <= $2::bigint - $3::bigint THEN $2 ELSE f.since END
		RETURNING n, since`, subject, ns(at), int64(window)).Scan(&out.Count, &since)
	out.Since = fromNS(since)
	return out, s.fail(err)
}

// SignInFailuresOf implements store.Sessions.
func (s *Store) SignInFailuresOf(ctx context.Context, subject string, at time.Time, window time.Duration) (store.SignInFailures, error) {
	var out store.SignInFailures
	if err := s.enter(ctx); err != nil {
		return out, err
	}
	if !validID(subject) {
		return out, nil
	}
	var since int64
	err := s.pool.QueryRow(ctx, `SELECT n, since FROM signin_failures WHERE subject = $1 AND since > $2::bigint - $3::bigint`,
		subject, ns(at), int64(window)).Scan(&out.Count, &since)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.SignInFailures{}, nil
	}
	out.Since = fromNS(since)
	return out, s.fail(err)
}

// ClearSignInFailures implements store.Sessions.
func (s *Store) ClearSignInFailures(ctx context.Context, subject string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(subject) {
		return nil
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM signin_failures WHERE subject = $1`, subject)
	return s.fail(err)
}

var _ store.Sessions = (*Store)(nil)
