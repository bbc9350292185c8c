package store

import (
	"context"
)

// ErrUnavailable wraps what a store that stopped working says: its data
// directory is gone, its disk refuses writes, its server is down. A
// backend refuses new money moves with it (a call must not be served when
// its charge cannot be recorded: charging fails closed), settlements
// included: those wait until it works again (pipeline's SettleQueue).
var ErrUnavailable error = unavailable{}

type unavailable struct{}

func (unavailable) Error() string { return "store: unavailable" }

// ClientMessage is what a client is told of a request the failing store
// stopped (apierr.Internal shows it instead of a bare "internal error").
func (unavailable) ClientMessage() string {
	return "the gateway's store is failing, so this request could not be completed; try again later"
}

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
