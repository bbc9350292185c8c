package store

import (
	"context"
	"errors"
)

// ErrUnavailable wraps what a store that stopped working says: its data
// directory is gone, its disk refuses writes, its server is down. A
// backend refuses new money moves with it (a call must not be served when
// its charge cannot be recorded: charging fails closed).
var ErrUnavailable = errors.New("store: unavailable")

// Checker is implemented by a store that can tell whether it works:
// /readyz asks it. Optional; a store without it is taken as working.
// Check is cheap (called by probes every few seconds) and answers within
// ctx.
type Checker interface {
	Check(ctx context.Context) error
}

// Stats are a store's internals as metrics show them.
type Stats struct {
	// OpenHolds is the number of holds placed and not settled.
	OpenHolds int
	// JournalLag is the number of money moves journaled and not yet in
	// the database (Badger's write-behind); 0 for a backend without one.
	JournalLag uint64
}

// StatsReporter is implemented by a store that reports Stats. Optional.
type StatsReporter interface {
	Stats() Stats
}
