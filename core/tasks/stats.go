package tasks

import (
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// SetSpecs replaces the families the engine knows (a config reload that
// starts or stops a plugin); tasks under way keep running.
func (e *Engine) SetSpecs(specs map[string]*vendor.FamilySpec) {
	e.specs.Store(&specs)
}

// Stats calls owned with the tasks this instance works on, by family and
// state (queued, in_progress...), and ended with the tasks it ended since
// start, by family and outcome (succeeded, failed, interrupted): what
// metrics show.
func (e *Engine) Stats(owned, ended func(family, state string, n int64)) {
	counts := map[[2]string]int64{}
	e.mu.Lock()
	for _, en := range e.owned {
		counts[[2]string{en.t.Family, en.t.Status}]++
	}
	done := make(map[[2]string]int64, len(e.ended))
	for k, n := range e.ended {
		done[k] = n
	}
	e.mu.Unlock()
	for k, n := range counts {
		owned(k[0], k[1], n)
	}
	for k, n := range done {
		ended(k[0], k[1], n)
	}
}

// endState names how a task ended, for Stats.
func endState(end *End) string {
	switch {
	case end.Interrupted:
		return "interrupted"
	case end.Cancelled || end.Outcome != nil && end.Outcome.State == vendor.JobCancelled:
		return "cancelled"
	case end.Outcome != nil && end.Outcome.State == vendor.JobSucceeded:
		return "succeeded"
	}
	return "failed"
}
