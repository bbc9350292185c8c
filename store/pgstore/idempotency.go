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

// Idempotency records live in one row per (account, key). A claim is one
// INSERT ... ON CONFLICT DO UPDATE that replaces only a record whose time
// has run out, so of concurrent claims on any instances exactly one wins
// (the primary key decides), and a crashed instance's claim is taken over
// once its lease (the record's ExpiresAt) has passed. Liveness is judged
// on the caller's clock, as in the Badger store; records dead for an hour
// are deleted by the maintenance loop (shared.go).

var errBadIdemKey = errors.New("pgstore: empty idempotency key")

const idemCols = `owner, fingerprint, state, status, header, body, created_at, expires_at`

func idemArgs(r *store.IdemRecord) ([]any, error) {
	var header any
	if r.Header != nil {
		b, err := json.Marshal(r.Header)
		if err != nil {
			return nil, err
		}
		header = string(b)
	}
	return []any{txt(r.Owner), r.Fingerprint, txt(r.State), int32(r.Status), header, r.Body,
		ns(r.CreatedAt), ns(r.ExpiresAt)}, nil
}

func scanIdem(row pgx.Row) (store.IdemRecord, error) {
	var r store.IdemRecord
	var status int32
	var header []byte
	var created, expires int64
	if err := row.Scan(&r.Owner, &r.Fingerprint, &r.State, &status, &header, &r.Body, &created, &expires); err != nil {
		return r, err
	}
	r.Status, r.CreatedAt, r.ExpiresAt = int(status), fromNS(created), fromNS(expires)
	if header != nil {
		if err := json.Unmarshal(header, &r.Header); err != nil {
			return r, fmt.Errorf("pgstore: idempotency record header: %w", err)
		}
	}
	return r, nil
}

// ClaimIdempotencyKey implements store.Idempotency.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, accountID, key string, rec store.IdemRecord, now time.Time) (store.IdemRecord, bool, error) {
	if err := checkID("account", accountID); err != nil {
		return store.IdemRecord{}, false, err
	}
	if key == "" {
		return store.IdemRecord{}, false, errBadIdemKey
	}
	if err := s.enter(ctx); err != nil {
		return store.IdemRecord{}, false, err
	}
	vals, err := idemArgs(&rec)
	if err != nil {
		return store.IdemRecord{}, false, err
	}
	args := append([]any{accountID, txt(key), ns(now)}, vals...)
	// A live record that disappears between the claim and the read (its
	// owner released it) is claimed again; a few rounds at most.
	for range 8 {
		var won bool
		err := s.pool.QueryRow(ctx, `
			INSERT INTO idempotency (account_id, key, `+idemCols+`)
			VALUES ($1, $2, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (account_id, key) DO UPDATE SET owner = EXCLUDED.owner,
				fingerprint = EXCLUDED.fingerprint, state = EXCLUDED.state, status = EXCLUDED.status,
				header = EXCLUDED.header, body = EXCLUDED.body, created_at = EXCLUDED.created_at,
				expires_at = EXCLUDED.expires_at
			WHERE idempotency.expires_at <= $3
			RETURNING true`, args...).Scan(&won)
		if err == nil {
			return rec, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.IdemRecord{}, false, s.fail(err)
		}
		live, err := scanIdem(s.pool.QueryRow(ctx, `SELECT `+idemCols+` FROM idempotency
			WHERE account_id = $1 AND key = $2 AND expires_at > $3`, accountID, txt(key), ns(now)))
		if err == nil {
			return live, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.IdemRecord{}, false, s.fail(err)
		}
	}
	return store.IdemRecord{}, false, errors.New("pgstore: idempotency key keeps changing hands; try again")
}

// CompleteIdempotencyKey implements store.Idempotency.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, accountID, key string, rec store.IdemRecord) error {
	if err := checkID("account", accountID); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	vals, err := idemArgs(&rec)
	if err != nil {
		return err
	}
	args := append([]any{accountID, txt(key)}, vals...)
	tag, err := s.pool.Exec(ctx, `UPDATE idempotency SET fingerprint = $4, state = $5, status = $6,
		header = $7, body = $8, created_at = $9, expires_at = $10
		WHERE account_id = $1 AND key = $2 AND owner = $3 AND state = 'running'`, args...)
	if err != nil {
		return s.fail(err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// ReleaseIdempotencyKey implements store.Idempotency.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, accountID, key, owner string) error {
	if err := checkID("account", accountID); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency
		WHERE account_id = $1 AND key = $2 AND owner = $3 AND state = 'running'`, accountID, txt(key), txt(owner))
	return s.fail(err)
}
