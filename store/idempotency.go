package store

import (
	"context"
	"time"
)

// Idempotency record states.
const (
	// IdemRunning: the owner call is still running; the key is held until
	// it ends or the record's ExpiresAt passes (a process that died).
	IdemRunning = "running"
	// IdemDone: the owner succeeded; Status, Header and Body replay it.
	IdemDone = "done"
	// IdemTooLarge: the owner succeeded with a response too large to keep.
	IdemTooLarge = "too_large"
)

// IdemRecord is what one Idempotency-Key of an account holds.
type IdemRecord struct {
	Owner       string // request id of the call that took the key
	Fingerprint []byte // what the request was: a hash of method, path and body
	State       string
	Status      int                 // IdemDone: the response's status
	Header      map[string][]string // IdemDone: the response headers to replay
	Body        []byte              // IdemDone: the response body, verbatim
	CreatedAt   time.Time
	// ExpiresAt is when the record stops counting: the end of a running
	// call's lease, or of a finished one's retention.
	ExpiresAt time.Time
}

// Idempotency is the store of Idempotency-Key records. Keys are scoped to
// an account, not an API key.
type Idempotency interface {
	// ClaimIdempotencyKey takes key for rec.Owner (rec.State running) when
	// the account holds no live record under it at now, and returns rec and
	// true. Otherwise it returns the live record and false. Of concurrent
	// claims exactly one wins.
	ClaimIdempotencyKey(ctx context.Context, accountID, key string, rec IdemRecord, now time.Time) (IdemRecord, bool, error)
	// CompleteIdempotencyKey replaces the running record of rec.Owner with
	// rec (done or too large). ErrNotFound when the owner no longer holds
	// the key (its lease ran out and another call took it).
	CompleteIdempotencyKey(ctx context.Context, accountID, key string, rec IdemRecord) error
	// ReleaseIdempotencyKey removes the running record of owner, so a
	// failed call does not consume the key. No record of owner is not an
	// error.
	ReleaseIdempotencyKey(ctx context.Context, accountID, key, owner string) error
}
