package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// jobs is an in-process plugin: each job runs for `runs` polls (or one
// slow Run) and then ends as `end` says.
type jobs struct {
	mu    sync.Mutex
	polls map[string]int
	runs  int
	// started and release, when set, hold Run until the test lets it go.
	started, release chan struct{}
	failures         int // transport failures before the first answer
	end              vendor.JobState
	cancels          atomic.Int32
	calls            atomic.Int32
}

func newJobs(runs int) *jobs {
	return &jobs{polls: map[string]int{}, runs: runs, end: vendor.JobSucceeded}
}

func (j *jobs) outcome(ref string) (*vendor.JobOutcome, error) {
	j.calls.Add(1)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failures > 0 {
		j.failures--
		return nil, &vendor.Failure{Kind: vendor.FailureConnect, Message: "refused"}
	}
	j.polls[ref]++
	if j.polls[ref] < j.runs {
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: ref}, nil
	}
	if j.end == vendor.JobFailed {
		return &vendor.JobOutcome{State: vendor.JobFailed, Error: &vendor.JobError{Status: 400, Message: "blocked"}}, nil
	}
	return &vendor.JobOutcome{State: vendor.JobSucceeded, Units: []vendor.Units{{Count: 2}}, Status: 200, Body: []byte(`{"ok":true}`)}, nil
}

func (j *jobs) Validate(context.Context, *vendor.JobRequest) (*vendor.JobPlan, error) {
	return &vendor.JobPlan{}, nil
}
func (j *jobs) Run(ctx context.Context, r *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if j.release != nil {
		close(j.started)
		select {
		case <-j.release:
		case <-ctx.Done():
			return nil, &vendor.Failure{Kind: vendor.FailureTimeout, Message: ctx.Err().Error()}
		}
	}
	j.mu.Lock()
	j.polls[r.RequestID] = j.runs
	j.mu.Unlock()
	return j.outcome(r.RequestID)
}
func (j *jobs) Submit(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, errors.New("not used")
}
func (j *jobs) Poll(_ context.Context, r *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return j.outcome(r.UpstreamRef)
}
func (j *jobs) Cancel(context.Context, *vendor.JobRequest) error {
	j.cancels.Add(1)
	return nil
}

// finisher settles with the store as the pipeline does: the delivered
// units at 1 credit each, never above the hold.
type finisher struct {
	st    store.Store
	mu    sync.Mutex
	ended map[string][]tasks.End
	done  chan string
}

func (f *finisher) FinishTask(ctx context.Context, t store.Task, end tasks.End) error {
	t.Status = store.TaskFailed
	var charge money.Nano
	if o := end.Outcome; o != nil && o.State == vendor.JobSucceeded {
		t.Status = store.TaskSucceeded
		charge = min(money.Credits(o.Units[0].Count), t.Hold)
	}
	t.Result = &store.TaskResult{HTTPStatus: 200, Cost: charge}
	row := &store.LogRow{AccountID: t.AccountID, KeyID: t.KeyID, RequestID: t.RequestID, TaskID: t.ID,
		Status: store.StatusSuccess, Cost: charge, CreatedAt: time.Now()}
	err := f.st.FinishTask(ctx, t, store.Settlement{HoldID: t.HoldID, Charge: charge, Row: row})
	if err == nil {
		f.mu.Lock()
		f.ended[t.ID] = append(f.ended[t.ID], end)
		f.mu.Unlock()
		f.done <- t.ID
	}
	return err
}

type env struct {
	st  store.Store
	fin *finisher
	p   *jobs
}

func newEnv(t *testing.T, p *jobs) *env {
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateAccount(t.Context(), store.Account{ID: "a", Status: store.AccountActive}, money.Credits(100), "sign-up"); err != nil {
		t.Fatal(err)
	}
	return &env{st: st, p: p, fin: &finisher{st: st, ended: map[string][]tasks.End{}, done: make(chan string, 100)}}
}

var spec = &vendor.FamilySpec{Name: "image", MaxRuntime: 2 * time.Second}

func (e *env) engine(t *testing.T, owner string, exclusive bool, specs map[string]*vendor.FamilySpec) (*tasks.Engine, context.CancelFunc) {
	eng := tasks.New(tasks.Options{
		Store: e.st, Specs: specs, Finisher: e.fin, Owner: owner, Exclusive: exclusive,
		Lease: 300 * time.Millisecond, PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond,
		Plugins: func(string) vendor.Jobs { return e.p },
	})
	ctx, cancel := context.WithCancel(context.Background())
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); eng.Wait() })
	return eng, cancel
}

// task writes a task owned by owner, with its hold.
func (e *env) task(t *testing.T, id, owner string, upstreamJob bool, ref string, deadline time.Duration) store.Task {
	now := time.Now()
	h := store.Hold{ID: "req-" + id, AccountID: "a", KeyID: "k", Amount: money.Credits(5), TaskID: id, SubmittedAt: now}
	if _, err := e.st.PlaceHold(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	job := tasks.Job{Request: vendor.JobRequest{Family: "image", RequestID: id}, UpstreamJob: upstreamJob}
	enc, err := job.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tk := store.Task{ID: id, AccountID: "a", KeyID: "k", Family: "image", Model: "m", Status: store.TaskQueued,
		RequestID: h.ID, HoldID: h.ID, Hold: h.Amount, Vendor: "v", Job: enc, UpstreamRef: ref,
		SubmittedAt: now, Deadline: now.Add(deadline), NextPollAt: now, Owner: owner, LeaseUntil: now.Add(300 * time.Millisecond)}
	if ref != "" {
		tk.Status = store.TaskRunning
	}
	if err := e.st.CreateTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func (e *env) wait(t *testing.T, n int) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for len(got) < n {
		select {
		case id := <-e.fin.done:
			got[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d tasks ended", len(got), n)
		}
	}
	return got
}

func (e *env) wallet(t *testing.T) store.Wallet {
	w, err := e.st.GetWallet(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPolledJobEndsOnce(t *testing.T) {
	e := newEnv(t, newJobs(3))
	eng, _ := e.engine(t, "gw1", false, map[string]*vendor.FamilySpec{"image": spec})
	eng.Adopt(e.task(t, "img_1", "gw1", true, "up-1", time.Minute), nil)
	e.wait(t, 1)
	tk, _ := e.st.GetTask(t.Context(), "img_1")
	if tk.Status != store.TaskSucceeded || tk.Polls < 2 {
		t.Fatalf("task %+v", tk)
	}
	if w := e.wallet(t); w.Balance != money.Credits(98) || w.Held != 0 {
		t.Fatalf("wallet %+v", w)
	}
	// The finisher signals before the engine lets go of the task.
	for deadline := time.Now().Add(2 * time.Second); eng.Owned() != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if eng.Owned() != 0 {
		t.Fatal("an ended task is still owned")
	}
}

func TestRunJobInTheBackground(t *testing.T) {
	p := newJobs(1)
	p.started, p.release = make(chan struct{}), make(chan struct{})
	e := newEnv(t, p)
	eng, _ := e.engine(t, "gw1", false, map[string]*vendor.FamilySpec{"image": spec})
	eng.Adopt(e.task(t, "img_run", "gw1", false, "", time.Minute), nil)
	<-p.started
	// While the Run lasts, the task is running and its lease is renewed:
	// its lease moves on twice (no timing asserted: a loaded machine may
	// renew late, never not at all).
	var leases []time.Time
	for deadline := time.Now().Add(20 * time.Second); len(leases) < 3; time.Sleep(10 * time.Millisecond) {
		tk, err := e.st.GetTask(t.Context(), "img_run")
		if err != nil || tk.Status != store.TaskRunning {
			t.Fatalf("mid-run task %+v (%v)", tk, err)
		}
		if n := len(leases); n == 0 || tk.LeaseUntil.After(leases[n-1]) {
			leases = append(leases, tk.LeaseUntil)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease was not renewed twice while the Run lasted: %v", leases)
		}
	}
	close(p.release)
	e.wait(t, 1)
	if w := e.wallet(t); w.Balance != money.Credits(98) {
		t.Fatalf("wallet %+v", w)
	}
}

func TestTransientFailuresAreRetried(t *testing.T) {
	p := newJobs(2)
	p.failures = 3
	e := newEnv(t, p)
	eng, _ := e.engine(t, "gw1", false, map[string]*vendor.FamilySpec{"image": spec})
	eng.Adopt(e.task(t, "img_t", "gw1", true, "up-t", time.Minute), nil)
	e.wait(t, 1)
	if tk, _ := e.st.GetTask(t.Context(), "img_t"); tk.Status != store.TaskSucceeded {
		t.Fatalf("task %+v", tk)
	}
}

func TestDeadlineFailsAndCancels(t *testing.T) {
	p := newJobs(1 << 30) // never ends
	e := newEnv(t, p)
	eng, _ := e.engine(t, "gw1", false, map[string]*vendor.FamilySpec{"image": spec})
	eng.Adopt(e.task(t, "img_slow", "gw1", true, "up-s", 150*time.Millisecond), nil)
	e.wait(t, 1)
	var te *tasks.TimeoutError
	if ends := e.fin.ended["img_slow"]; len(ends) != 1 || !errors.As(ends[0].Err, &te) {
		t.Fatalf("ends %+v", ends)
	}
	if w := e.wallet(t); w.Balance != money.Credits(100) || w.Held != 0 {
		t.Fatalf("refund: wallet %+v", w)
	}
	deadline := time.Now().Add(2 * time.Second)
	for p.cancels.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p.cancels.Load() == 0 {
		t.Fatal("the upstream job was not cancelled")
	}
}

// A restart takes every unfinished task over: a family that does not
// resume fails them refunded (the images rule); one that resumes polls on.
func TestRestartTakeover(t *testing.T) {
	e := newEnv(t, newJobs(2))
	resuming := &vendor.FamilySpec{Name: "video", MaxRuntime: time.Minute, ResumeAfterRestart: true}
	img := e.task(t, "img_x", "dead", true, "up-x", time.Minute)
	vid := e.task(t, "vid_x", "dead", true, "up-v", time.Minute)
	vid.Family = "video"
	if err := e.st.UpdateTask(t.Context(), vid); err != nil {
		t.Fatal(err)
	}
	_ = img
	e.engine(t, "gw2", true, map[string]*vendor.FamilySpec{"image": spec, "video": resuming})
	e.wait(t, 2)
	if ends := e.fin.ended["img_x"]; len(ends) != 1 || !ends[0].Interrupted {
		t.Fatalf("image ends %+v", ends)
	}
	if ends := e.fin.ended["vid_x"]; len(ends) != 1 || ends[0].Outcome == nil || ends[0].Outcome.State != vendor.JobSucceeded {
		t.Fatalf("video ends %+v", ends)
	}
	// 100 - 0 (image refunded) - 2 (video delivered 2 units).
	if w := e.wallet(t); w.Balance != money.Credits(98) || w.Held != 0 {
		t.Fatalf("wallet %+v", w)
	}
}

// Two instances on one store never end a task twice, whichever claims it.
func TestTwoInstancesEndEachTaskOnce(t *testing.T) {
	e := newEnv(t, newJobs(2))
	specs := map[string]*vendor.FamilySpec{"image": {Name: "image", MaxRuntime: time.Minute, ResumeAfterRestart: true}}
	for i := range 20 {
		tk := e.task(t, fmt.Sprintf("img_%d", i), "dead", true, fmt.Sprintf("up-%d", i), time.Minute)
		tk.LeaseUntil = time.Now().Add(-time.Second)
		if err := e.st.UpdateTask(t.Context(), tk); err != nil {
			t.Fatal(err)
		}
	}
	e.engine(t, "gw1", false, specs)
	e.engine(t, "gw2", false, specs)
	e.wait(t, 20)
	time.Sleep(100 * time.Millisecond)
	for id, ends := range e.fin.ended {
		if len(ends) != 1 {
			t.Fatalf("task %s ended %d times", id, len(ends))
		}
	}
	if w := e.wallet(t); w.Balance != money.Credits(100-2*20) || w.Held != 0 {
		t.Fatalf("wallet %+v", w)
	}
}

// TestJobReadOncePerTask: the engine hands the finisher the job it read
// for its polls (decoded once per task), and a finisher given none reads
// it from the task as stored.
func TestJobReadOncePerTask(t *testing.T) {
	e := newEnv(t, newJobs(3))
	eng, _ := e.engine(t, "gw1", false, map[string]*vendor.FamilySpec{"image": spec})
	tk := e.task(t, "img_once", "gw1", true, "up-once", time.Minute)
	eng.Adopt(tk, nil)
	e.wait(t, 1)
	e.fin.mu.Lock()
	end := e.fin.ended["img_once"][0]
	e.fin.mu.Unlock()
	if end.Job == nil || end.Job.Request.RequestID != "img_once" || !end.Job.UpstreamJob {
		t.Fatalf("the finisher got the job %+v", end.Job)
	}
	var none tasks.End
	j, err := none.JobOf(&tk)
	if err != nil || j.Request.RequestID != "img_once" || !j.UpstreamJob {
		t.Fatalf("JobOf from the stored job: %+v %v", j, err)
	}
	if got, _ := end.JobOf(&store.Task{}); got != end.Job {
		t.Fatal("JobOf decoded again though the engine had read the job")
	}
}
