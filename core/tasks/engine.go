// Package tasks is the async task engine: every async job (an image with
// async, a video, a song...) is a durable task in the store, written
// before the submit is answered and owning its hold. The engine of each
// gateway instance works on the tasks it owns: it polls the plugin with
// backoff (or runs a synchronous vendor's call in the background), renews
// its leases, and ends each task exactly once through a Finisher (the
// pipeline, which prices, hosts, settles and logs it). Tasks of an
// instance that died are claimed when their lease ends: those of a family
// that resumes poll on, the others fail and are refunded in full.
package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// End is how a task ended, as the Finisher is told.
type End struct {
	// Outcome is the upstream's terminal answer (succeeded, or failed with
	// its refusal).
	Outcome *vendor.JobOutcome
	// Err is a failure without an answer: the gateway's own error
	// (timeout, unreachable), shown to the polling client.
	Err error
	// Interrupted: a gateway restart cut the task (refunded in full).
	Interrupted bool
	// Cancelled: an operator cancelled the task (refunded in full).
	Cancelled bool
	// Job is the task's job when the engine has read it (decoded once per
	// task in this process; read it, never change it): JobOf reads it
	// from the task otherwise.
	Job *Job
}

// JobOf is the task's job: end.Job, or decoded from t.Job.
func (end *End) JobOf(t *store.Task) (*Job, error) {
	if end.Job != nil {
		return end.Job, nil
	}
	j, err := DecodeJob(t.Job)
	return &j, err
}

// Finisher ends a task: prices what it delivered, hosts its files,
// settles its hold and writes its row, in one store step
// (store.Tasks.FinishTask). store.ErrLeaseLost means another owner ended
// it first.
type Finisher interface {
	FinishTask(ctx context.Context, t store.Task, end End) error
}

// Options configure an Engine.
type Options struct {
	Store    store.Tasks
	Plugins  func(vendor string) vendor.Jobs // nil when the vendor is not running
	Specs    map[string]*vendor.FamilySpec   // by family
	Finisher Finisher
	Logger   hclog.Logger
	Now      func() time.Time
	// Owner names this instance (unique per process start).
	Owner string
	// Lease is how long a task stays this instance's without a renewal
	// (default 30 s); leases are renewed every third of it.
	Lease time.Duration
	// PollMin and PollMax bound the backoff between polls of an upstream
	// job (defaults 1 s and 15 s).
	PollMin, PollMax time.Duration
	// Exclusive: no other instance shares the store (Badger), so at start
	// every unfinished task belongs to a process that is gone.
	Exclusive bool
	// Workers bounds the calls to plugins made at once (default 64).
	Workers int
}

// Engine runs the tasks this instance owns.
type Engine struct {
	o    Options
	log  hclog.Logger
	wake chan struct{}
	sem  chan struct{}

	mu    sync.Mutex
	owned map[string]*entry
	ended map[[2]string]int64 // tasks ended here, by family and outcome (stats.go)
	wg    sync.WaitGroup

	specs atomic.Pointer[map[string]*vendor.FamilySpec] // SetSpecs replaces them
}

// entry is an owned task and what is known of it beyond the store.
type entry struct {
	t       store.Task
	next    time.Time
	busy    bool
	pending *vendor.JobOutcome // an outcome to finish with, already known
	job     *Job               // t.Job decoded, once read (only step uses it)
	resumed bool               // claimed from a dead instance
	cancel  bool               // an operator cancels it
	gone    chan struct{}      // closed once it ended here (Cancel waits on it)
}

// New returns an engine; Start runs it.
func New(o Options) *Engine {
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.PollMin <= 0 {
		o.PollMin = time.Second
	}
	if o.PollMax <= 0 {
		o.PollMax = 15 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	e := &Engine{
		o: o, log: o.Logger.Named("tasks"), wake: make(chan struct{}, 1),
		sem: make(chan struct{}, o.Workers), owned: map[string]*entry{}, ended: map[[2]string]int64{},
	}
	e.specs.Store(&o.Specs)
	return e
}

// Owner is this instance's name in task leases.
func (e *Engine) Owner() string { return e.o.Owner }

// Lease is how long a lease lasts.
func (e *Engine) Lease() time.Duration { return e.o.Lease }

// Adopt takes a task this instance just wrote (it already owns its
// lease). first, when set, is an outcome the submit already gave.
func (e *Engine) Adopt(t store.Task, first *vendor.JobOutcome) {
	e.mu.Lock()
	e.owned[t.ID] = &entry{t: t, next: t.NextPollAt, pending: first}
	e.mu.Unlock()
	e.nudge()
}

func (e *Engine) nudge() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Start takes over the tasks left by instances that are gone and runs the
// engine until ctx ends; then it waits for the calls under way.
func (e *Engine) Start(ctx context.Context) error {
	now := e.o.Now()
	before := now
	if e.o.Exclusive {
		before = now.Add(100 * 365 * 24 * time.Hour) // every lease belongs to the dead
	}
	if err := e.claim(ctx, before); err != nil {
		return fmt.Errorf("tasks: take over unfinished tasks: %w", err)
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.loop(ctx)
	}()
	return nil
}

// Wait blocks until the engine stopped (its Start context ended) and
// every call under way returned.
func (e *Engine) Wait() { e.wg.Wait() }

// claim takes over unfinished tasks whose lease ended before before.
func (e *Engine) claim(ctx context.Context, before time.Time) error {
	for {
		now := e.o.Now()
		ts, err := e.o.Store.ClaimTasks(ctx, e.o.Owner, before, now.Add(e.o.Lease), 100)
		if err != nil {
			return err
		}
		e.mu.Lock()
		for _, t := range ts {
			prev := t.Owner
			t.Owner, t.LeaseUntil = e.o.Owner, now.Add(e.o.Lease)
			e.owned[t.ID] = &entry{t: t, next: now, resumed: prev != e.o.Owner}
		}
		e.mu.Unlock()
		if len(ts) > 0 {
			e.log.Info("took over unfinished tasks", "count", len(ts))
			e.nudge()
		}
		if len(ts) < 100 {
			return nil
		}
	}
}

// loop runs due tasks, renews leases and claims orphans until ctx ends.
func (e *Engine) loop(ctx context.Context) {
	renew := time.NewTicker(e.o.Lease / 3)
	defer renew.Stop()
	claims := time.NewTicker(e.o.Lease)
	defer claims.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := e.runDue(ctx)
		if !next.IsZero() {
			timer.Reset(max(next.Sub(e.o.Now()), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-timer.C:
		case <-renew.C:
			e.renew(ctx)
		case <-claims.C:
			if err := e.claim(ctx, e.o.Now()); err != nil && ctx.Err() == nil {
				e.log.Error("claiming orphaned tasks failed", "error", err)
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// runDue starts every due task not already being worked on and returns
// when the next one is due (zero: none).
func (e *Engine) runDue(ctx context.Context) time.Time {
	now := e.o.Now()
	var next time.Time
	var due []*entry
	var snaps []store.Task
	e.mu.Lock()
	for _, en := range e.owned {
		if en.busy {
			continue
		}
		if !en.next.After(now) {
			en.busy = true
			due = append(due, en)
			snaps = append(snaps, en.t) // renew writes en.t under e.mu
			continue
		}
		if next.IsZero() || en.next.Before(next) {
			next = en.next
		}
	}
	e.mu.Unlock()
	for i, en := range due {
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return next
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer func() { <-e.sem }()
			e.step(ctx, en, snaps[i])
		}()
	}
	return next
}

// renew extends the leases of the owned tasks; those lost are dropped.
func (e *Engine) renew(ctx context.Context) {
	e.mu.Lock()
	ids := make([]string, 0, len(e.owned))
	for id := range e.owned {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	until := e.o.Now().Add(e.o.Lease)
	lost, err := e.o.Store.RenewTaskLeases(ctx, e.o.Owner, ids, until)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("renewing task leases failed", "error", err)
		}
		return
	}
	e.mu.Lock()
	for _, id := range ids {
		if en, ok := e.owned[id]; ok {
			en.t.LeaseUntil = until
		}
	}
	for _, id := range lost {
		delete(e.owned, id)
	}
	e.mu.Unlock()
}

// step does one piece of work on a task (t is its state when it became
// due: renew writes en.t under e.mu): end it, or ask the upstream once.
func (e *Engine) step(ctx context.Context, en *entry, t store.Task) {
	e.mu.Lock()
	pending, resumed, cancelled := en.pending, en.resumed, en.cancel
	e.mu.Unlock()
	spec := (*e.specs.Load())[t.Family]
	var (
		end  *End
		next time.Time
	)
	switch {
	case cancelled:
		end = &End{Cancelled: true}
		if t.UpstreamRef != "" {
			e.cancel(t)
		}
	case spec == nil:
		end = &End{Err: fmt.Errorf("the %s family is no longer served", t.Family)}
	case pending != nil:
		end = &End{Outcome: pending}
	case resumed && (!spec.ResumeAfterRestart || t.UpstreamRef == ""):
		end = &End{Interrupted: true}
	case !e.o.Now().Before(t.Deadline):
		end = &End{Err: timeoutError(&t)}
		if t.UpstreamRef != "" {
			go e.cancel(t)
		}
	default:
		end, next = e.ask(ctx, en, &t, spec)
	}
	if ctx.Err() != nil {
		e.release(en, t, e.o.Now())
		return
	}
	if end == nil {
		t.NextPollAt, t.LeaseUntil = next, e.o.Now().Add(e.o.Lease)
		if err := e.o.Store.UpdateTask(ctx, t); err != nil {
			e.lost(en, t, err)
			return
		}
		e.release(en, t, next)
		return
	}
	end.Job = en.job
	err := e.o.Finisher.FinishTask(context.WithoutCancel(ctx), t, *end)
	switch {
	case err == nil, errors.Is(err, store.ErrLeaseLost):
		e.mu.Lock()
		delete(e.owned, t.ID)
		if err == nil {
			e.ended[[2]string{t.Family, endState(end)}]++
		}
		gone := en.gone
		e.mu.Unlock()
		if gone != nil {
			close(gone)
		}
	default:
		e.log.Error("ending a task failed; it is retried", "task_id", t.ID, "error", err)
		e.release(en, t, e.o.Now().Add(e.o.PollMin))
	}
}

// ask calls the plugin once: a Run for a synchronous vendor (the whole
// job), or a Poll. A nil End means the task goes on, asked again at next.
func (e *Engine) ask(ctx context.Context, en *entry, t *store.Task, spec *vendor.FamilySpec) (*End, time.Time) {
	if en.job == nil {
		// Once per task in this process: the job never changes once the
		// task is adopted or claimed.
		j, err := DecodeJob(t.Job)
		if err != nil {
			return &End{Err: fmt.Errorf("the task's job cannot be read: %w", err)}, time.Time{}
		}
		en.job = &j
	}
	job := en.job
	var err error
	p := e.o.Plugins(t.Vendor)
	now := e.o.Now()
	if p == nil {
		return e.retryLater(t, now, nil)
	}
	ctx, cancel := context.WithDeadline(ctx, t.Deadline)
	defer cancel()
	req := job.Request
	var out *vendor.JobOutcome
	if !job.UpstreamJob {
		if t.Status != store.TaskRunning {
			t.Status, t.StartedAt, t.LeaseUntil = store.TaskRunning, now, now.Add(e.o.Lease)
			if err := e.o.Store.UpdateTask(ctx, *t); err != nil {
				return nil, now // lost: UpdateTask in step will say so
			}
		}
		if spec.AttemptTimeout > 0 {
			req.Timeout = spec.AttemptTimeout
		}
		out, err = p.Run(ctx, &req)
		for _, alt := range job.Alternates {
			if !retriable(out, err) || ctx.Err() != nil {
				break
			}
			ap := e.o.Plugins(alt.Vendor)
			if ap == nil {
				continue
			}
			e.log.Debug("a background run moves to the next channel", "task_id", t.ID, "channel", alt.Channel, "error", err)
			req.Channel, req.Model.Upstream = alt.Channel, alt.Upstream
			t.Channel, t.Vendor = alt.Channel, alt.Vendor
			out, err = ap.Run(ctx, &req)
		}
	} else {
		req.UpstreamRef = t.UpstreamRef
		out, err = p.Poll(ctx, &req)
	}
	t.Polls++
	if err != nil {
		var f *vendor.Failure
		if errors.As(err, &f) && f.Kind == vendor.FailureTimeout && !e.o.Now().Before(t.Deadline) {
			return &End{Err: timeoutError(t)}, time.Time{}
		}
		if !job.UpstreamJob {
			// A synchronous call that failed without an answer is over.
			return &End{Err: err}, time.Time{}
		}
		return e.retryLater(t, e.o.Now(), err)
	}
	switch out.State {
	case vendor.JobSucceeded, vendor.JobFailed, vendor.JobCancelled:
		return &End{Outcome: out}, time.Time{}
	}
	if out.UpstreamRef != "" {
		t.UpstreamRef = out.UpstreamRef
	}
	if spec.Record && len(out.Body) > 0 {
		t.Record = out.Body // the record as it now stands (progress)
	}
	wait := out.PollAfter
	if wait <= 0 {
		wait = e.backoff(t.Polls)
	}
	return nil, e.o.Now().Add(wait)
}

// retriable reports whether a Run failed before its upstream answered
// (a connection failure, a dead plugin), or with a 5xx or a 429: another
// channel may serve it.
func retriable(out *vendor.JobOutcome, err error) bool {
	if err != nil {
		var f *vendor.Failure
		return !errors.As(err, &f) || f.Kind == vendor.FailureConnect || f.Kind == vendor.FailureConfig
	}
	if out.State != vendor.JobFailed || out.Error == nil {
		return false
	}
	return out.Error.Status >= 500 || out.Error.Status == 429
}

// retryLater keeps a task whose plugin could not be asked, until its
// deadline.
func (e *Engine) retryLater(t *store.Task, now time.Time, err error) (*End, time.Time) {
	if err != nil {
		e.log.Warn("asking the upstream about a task failed; retrying", "task_id", t.ID, "error", err)
	}
	return nil, now.Add(e.backoff(t.Polls))
}

// backoff is the wait before poll n: PollMin, growing by half each time,
// at most PollMax.
func (e *Engine) backoff(n int) time.Duration {
	d := e.o.PollMin
	for i := 1; i < n && d < e.o.PollMax; i++ {
		d += d / 2
	}
	return min(d, e.o.PollMax)
}

func (e *Engine) release(en *entry, t store.Task, next time.Time) {
	e.mu.Lock()
	if cur, ok := e.owned[t.ID]; ok && cur == en {
		en.t, en.next, en.busy, en.pending, en.resumed = t, next, false, nil, false
	}
	e.mu.Unlock()
	e.nudge()
}

func (e *Engine) lost(en *entry, t store.Task, err error) {
	if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound) {
		e.mu.Lock()
		delete(e.owned, t.ID)
		gone := en.gone
		e.mu.Unlock()
		if gone != nil {
			close(gone)
		}
		return
	}
	e.log.Error("saving a task's progress failed", "task_id", t.ID, "error", err)
	e.release(en, t, e.o.Now().Add(e.o.PollMin))
}

// cancel asks the upstream to stop a job that ran out of time.
func (e *Engine) cancel(t store.Task) {
	job, err := DecodeJob(t.Job)
	p := e.o.Plugins(t.Vendor)
	if err != nil || p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := job.Request
	req.UpstreamRef = t.UpstreamRef
	_ = p.Cancel(ctx, &req)
}

// timeoutError is the failure of a task that ran past its maximum
// runtime (its family's, or its model's shorter one).
func timeoutError(t *store.Task) error {
	return &TimeoutError{MaxRuntime: t.Deadline.Sub(t.SubmittedAt).Round(time.Second)}
}

// TimeoutError is a task that ran past its maximum runtime.
type TimeoutError struct{ MaxRuntime time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the task did not finish within %s", e.MaxRuntime)
}

// Expire turns the succeeded tasks whose results passed their retention
// into expired (no money moves), at once and then every interval, until
// ctx ends. It runs beside the files sweep that deletes those results.
func (e *Engine) Expire(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			ids, err := e.o.Store.ExpireTasks(ctx, e.o.Now(), 500)
			if err != nil {
				if ctx.Err() == nil {
					e.log.Error("expiring tasks failed", "error", err)
				}
				break
			}
			if len(ids) > 0 {
				e.log.Debug("tasks expired", "count", len(ids))
			}
			if len(ids) < 500 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ErrEnded is Cancel's answer for a task that has already ended.
var ErrEnded = errors.New("tasks: the task has already ended")

// Cancel ends an unfinished task as cancelled, refunded in full, after
// asking its upstream to stop it: an operator's cancel. The task is taken
// from whichever instance held it. It returns once the task ended (or
// ctx did); ErrEnded when it had ended already, store.ErrNotFound when
// there is none.
func (e *Engine) Cancel(ctx context.Context, id string) error {
	e.mu.Lock()
	en, ok := e.owned[id]
	if !ok {
		e.mu.Unlock()
		t, err := e.o.Store.TakeTask(ctx, id, e.o.Owner, e.o.Now().Add(e.o.Lease))
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			return ErrEnded
		case err != nil:
			return err
		}
		t.Owner, t.LeaseUntil = e.o.Owner, e.o.Now().Add(e.o.Lease)
		e.mu.Lock()
		if en, ok = e.owned[id]; !ok {
			en = &entry{t: t, next: e.o.Now()}
			e.owned[id] = en
		}
	}
	en.cancel, en.next = true, e.o.Now()
	if en.gone == nil {
		en.gone = make(chan struct{})
	}
	gone := en.gone
	e.mu.Unlock()
	e.nudge()
	select {
	case <-gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Owned reports how many tasks this instance works on (metrics, tests).
func (e *Engine) Owned() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.owned)
}
