package store

import (
	"context"
	"time"
)

// Shared is an optional capability of a store that several gateway
// instances use at once (pgstore). Each instance holds a lease in the
// store, renewed while it runs; the holds it places live as long as that
// lease. Crash recovery of a shared store therefore releases only the
// holds of instances whose lease has ended, never another instance's live
// calls, and one instance at a time.
type Shared interface {
	// Lease is how long an instance's holds outlive its last renewal.
	Lease() time.Duration
	// SweepExpiredHolds calls fn with the open holds of instances whose
	// lease has ended, while it holds the store-wide sweep lock. When
	// another instance holds the lock it returns false without calling fn.
	SweepExpiredHolds(ctx context.Context, fn func(ctx context.Context, holds []Hold) error) (swept bool, err error)
}
