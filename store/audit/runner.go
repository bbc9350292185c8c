package audit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/store"
)

// Runner audits a gateway's books every so often (`audit { every }`),
// logs each result and keeps the last for /metrics.
type Runner struct {
	books store.Books
	every time.Duration
	log   hclog.Logger
	now   func() time.Time

	mu sync.Mutex
	st Status
}

// Status is what the runner's audits found so far.
type Status struct {
	// Last is the last finished audit's report (nil before the first);
	// LastErr the error of the last run, when it could not finish.
	Last    *Report
	LastErr error
	// LastAt is when the last run ended.
	LastAt time.Time
	// Runs count the audits by result: passed, failed (violations
	// found) and error (it could not finish).
	Passed, Failed, Errors int64
}

// NewRunner returns a runner of the books of b every every.
func NewRunner(b store.Books, every time.Duration, log hclog.Logger, now func() time.Time) *Runner {
	if now == nil {
		now = time.Now
	}
	return &Runner{books: b, every: every, log: log, now: now}
}

// Run audits every r.every (the first time r.every after it starts), each
// audit within the period, until ctx ends (which cancels one under way).
func (r *Runner) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		actx, cancel := context.WithTimeout(ctx, r.every)
		_, _ = r.Once(actx)
		cancel()
	}
}

// Once audits now, logs the result and keeps it.
func (r *Runner) Once(ctx context.Context) (Report, error) {
	rep, err := Run(ctx, r.books, Options{Now: r.now})
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return rep, err // the gateway is stopping: no result
	}
	r.mu.Lock()
	r.st.LastAt = r.now()
	r.st.LastErr = err
	switch {
	case err != nil:
		r.st.Errors++
	case rep.OK:
		r.st.Passed++
		r.st.Last = &rep
	default:
		r.st.Failed++
		r.st.Last = &rep
	}
	r.mu.Unlock()
	Log(r.log, rep, err)
	return rep, err
}

// Status is what the runs found so far.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// logged is how many violations an audit's log names one by one.
const logged = 20

// Log writes an audit's result to log: one line when it passed, an error
// line with the count of each broken rule and one per violation (the
// first 20) when it did not.
func Log(log hclog.Logger, rep Report, err error) {
	if err != nil {
		log.Error("audit of the books could not finish", "error", err)
		return
	}
	args := []any{"accounts", rep.Accounts, "entries", rep.Entries, "rows", rep.Rows, "tasks", rep.Tasks,
		"open_holds", rep.OpenHolds, "took_ms", rep.TookMS}
	if rep.OK {
		log.Info("audit of the books passed", args...)
		return
	}
	var rules []string
	for _, rule := range Rules {
		if n := rep.ByRule[rule]; n > 0 {
			rules = append(rules, rule+"="+itoa(uint64(n)))
		}
	}
	log.Error("audit of the books found violations", append(args, "violations", rep.Count, "by_rule", strings.Join(rules, " "))...)
	for i, v := range rep.Violations {
		if i == logged {
			log.Error("audit: more violations not shown here; run tollgate audit for all", "more", rep.Count-logged)
			break
		}
		log.Error("audit violation", "rule", v.Rule, "account_id", v.AccountID, "entry", v.Entry, "message", v.Message)
	}
}
