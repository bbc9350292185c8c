package pipeline

import (
	"context"
	"errors"
	"net/http"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// TaskFinisher ends tasks for the engine through the job chain: the
// outcome's files are hosted, then the stages after dispatch (settle and
// log) price it, settle the task's hold and write its row with the task's
// end, in one store step.
type TaskFinisher struct {
	chains *Chains
	d      *Deps
	specs  map[string]*vendor.FamilySpec
	red    *redact.Redactor
}

// NewTaskFinisher returns the Finisher of the task engine.
func NewTaskFinisher(cs *Chains, d *Deps, specs map[string]*vendor.FamilySpec) *TaskFinisher {
	red := d.Redact
	if red == nil {
		red = RedactorFor(d.Config)
	}
	return &TaskFinisher{chains: cs, d: d, specs: specs, red: red}
}

// msgInterrupted is what a poll of a task cut by a restart answers.
const msgInterrupted = "the task was interrupted by a gateway restart and refunded in full; submit it again"

// FinishTask implements tasks.Finisher.
func (f *TaskFinisher) FinishTask(ctx context.Context, t store.Task, end tasks.End) error {
	spec := f.specs[t.Family]
	if spec == nil {
		spec = &vendor.FamilySpec{Name: t.Family, UnitType: t.Family}
	}
	m, ok := f.d.Config.Model(t.Model)
	if !ok {
		// The model left the config: its units cannot be priced; refund.
		m = &config.Model{ID: t.Model, Family: t.Family}
		end = tasks.End{Err: apierr.Newf(apierr.NoChannelAvailable, "the model '%s' is no longer served", t.Model)}
	}
	job, _ := tasks.DecodeJob(t.Job)
	c := &Call{
		Kind: KindJob, ID: t.RequestID, Start: t.SubmittedAt, Protocol: protocol.OpenAIChat, Billed: true,
		ModelID: t.Model, Model: m,
		Key:     &store.Key{ID: t.KeyID, AccountID: t.AccountID, Name: t.KeyName, Prefix: t.KeyPrefix},
		Hold:    &store.Hold{ID: t.HoldID, AccountID: t.AccountID, Amount: t.Hold, TaskID: t.ID},
		Channel: t.Channel, UpstreamTried: t.Channel != "", UpstreamCalls: 1,
		Job: &Job{Spec: spec, Task: &t, TaskID: t.ID, Accepted: true, Async: true, LinkBase: job.LinkBase},
	}
	c.Job.Route.Operation = t.Operation
	t.CompletedAt = f.d.Now()
	t.Status = store.TaskFailed
	fail := func(e *apierr.Error) {
		c.Err = e
		t.Result = &store.TaskResult{HTTPStatus: e.Status, Body: apierr.Body(c.Protocol, e),
			ErrorCode: e.Code, ErrorMessage: e.Message}
	}
	switch out := end.Outcome; {
	case end.Interrupted:
		c.Job.Interrupted = true
		e := apierr.New(apierr.InternalError, msgInterrupted)
		t.Result = &store.TaskResult{HTTPStatus: e.Status, Body: apierr.Body(c.Protocol, e)}
	case end.Err != nil:
		fail(taskError(f.red, ctx, c, end.Err))
	case out != nil && out.State == vendor.JobSucceeded:
		body, err := deliver(ctx, f.d.Files, t.AccountID, c.Job, out)
		if err != nil {
			fail(apierr.As(err))
			break
		}
		status := out.Status
		if status == 0 {
			status = http.StatusOK
		}
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range out.Headers {
			h[http.CanonicalHeaderKey(k)] = v
		}
		c.Served = true
		t.Status = store.TaskSucceeded
		t.Result = &store.TaskResult{HTTPStatus: status, Header: h, Body: body, URLs: c.Job.URLs,
			ExpiresAt: c.Job.ExpiresAt, DropOnRead: out.Inline}
	case out != nil:
		fail(jobError(f.red, outcomeError(out)))
	default:
		fail(apierr.Internal(errors.New("a task ended without an outcome")))
	}
	f.chains.For(KindJob).runAfter(ctx, "dispatch", c)
	return c.finishErr
}

// taskError is the error a task that failed without an answer shows.
func taskError(red *redact.Redactor, ctx context.Context, c *Call, err error) *apierr.Error {
	var te *tasks.TimeoutError
	var ae *apierr.Error
	switch {
	case errors.As(err, &te):
		return apierr.New(apierr.UpstreamTimeout, te.Error())
	case errors.As(err, &ae):
		return ae
	}
	return jobFailure(red, ctx, c, err)
}

var _ tasks.Finisher = (*TaskFinisher)(nil)
