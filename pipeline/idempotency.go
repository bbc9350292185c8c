package pipeline

import (
	"context"

	"github.com/tollgate-gw/tollgate/core/apierr"
)

// idempotency checks the Idempotency-Key header's form: 1 to 200 printable
// ASCII characters without white space. Replay and in-flight detection need
// the idempotency records of the store; until those exist a well-formed key
// does not deduplicate (the spec's "header absent" behaviour).
type idempotencyStage struct{}

func newIdempotency(*Deps, map[string]string) (Stage, error) { return idempotencyStage{}, nil }

func (idempotencyStage) Name() string { return "idempotency" }

func (idempotencyStage) Serve(_ context.Context, c *Call) error {
	vs, present := c.Request.Header["Idempotency-Key"]
	if !present {
		return nil
	}
	if len(vs) != 1 || !ValidIdempotencyKey(vs[0]) {
		return apierr.New(apierr.InvalidIdempotencyKey,
			"Idempotency-Key must be 1 to 200 printable ASCII characters without spaces")
	}
	return nil
}

// ValidIdempotencyKey reports whether k is 1 to 200 printable, non-space ASCII characters.
func ValidIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 200 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}
