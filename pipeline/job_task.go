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

// Messages of a task the gateway ended.
const (
	msgInterrupted = "the task was interrupted by a gateway restart and refunded in full; submit it again"
	msgCancelled   = "the task was cancelled and refunded in full"
)

// FinishTask implements tasks.Finisher.
func (f *TaskFinisher) FinishTask(ctx context.Context, t store.Task, end tasks.End) error {
	spec := f.specs[t.Family]
	if spec == nil {
		spec = &vendor.FamilySpec{Name: t.Family, UnitType: t.UnitType}
	}
	job, _ := end.JobOf(&t)
	m, ok := f.d.Config.Model(t.Model)
	switch {
	case !ok && job.Price == nil:
		// The model left the config and the task kept no prices: its
		// units cannot be priced; refund.
		m = &config.Model{ID: t.Model, Family: t.Family}
		end = tasks.End{Err: apierr.Newf(apierr.NoChannelAvailable, "the model '%s' is no longer served", t.Model)}
	case !ok:
		m = &config.Model{ID: t.Model, Family: t.Family}
	}
	price := m.Price
	if job.Price != nil {
		price = *job.Price // the prices in force when it was submitted
	}
	rt := spec.CreateRoute(store.TaskCollection(t.ID))
	if rt == nil {
		rt = &vendor.FamilyRoute{Operation: t.Operation}
	}
	c := &Call{
		Kind: KindJob, ID: t.RequestID, Start: t.SubmittedAt, Protocol: protocol.OpenAIChat, Billed: true,
		ModelID: t.Model, Model: m,
		Key:     &store.Key{ID: t.KeyID, AccountID: t.AccountID, Name: t.KeyName, Prefix: t.KeyPrefix},
		Hold:    &store.Hold{ID: t.HoldID, AccountID: t.AccountID, Amount: t.Hold, TaskID: t.ID},
		Channel: t.Channel, UpstreamTried: t.Channel != "", UpstreamCalls: 1,
		Job: &Job{Spec: spec, Route: *rt, Billing: spec.BillingOf(rt), Task: &t, TaskID: t.ID, Accepted: true,
			Async: true, LinkBase: job.LinkBase, Price: price},
	}
	c.Job.Billing.UnitType = t.UnitType
	c.Job.Route.Operation = t.Operation
	t.CompletedAt = f.d.Now()
	t.Status = store.TaskFailed
	fail := func(e *apierr.Error) {
		c.Err = e
		endFailed(spec, &t, e.Status, apierr.Body(c.Protocol, e), e.Code, e.Message)
	}
	switch out := end.Outcome; {
	case end.Interrupted:
		c.Job.Interrupted = true
		e := apierr.New(apierr.InternalError, msgInterrupted)
		endFailed(spec, &t, e.Status, apierr.Body(c.Protocol, e), "", e.Message)
		if spec.Record {
			t.Record = tasks.WithError(spec, &t, t.Record, "gateway_restart", msgInterrupted)
		}
	case end.Cancelled || out != nil && out.State == vendor.JobCancelled:
		msg := msgCancelled
		if out != nil && out.Error != nil && out.Error.Message != "" {
			msg = f.red.Redact(out.Error.Message)
		}
		e := &apierr.Error{Status: http.StatusConflict, Code: codeCancelled, Type: "invalid_request_error", Message: msg}
		c.Err = e
		endFailed(spec, &t, e.Status, apierr.Body(c.Protocol, e), e.Code, e.Message)
		t.Status = store.TaskCancelled
	case end.Err != nil:
		fail(taskError(f.red, ctx, c, end.Err))
	case out != nil && out.State == vendor.JobSucceeded:
		body, err := deliver(ctx, f.d.Files, t.AccountID, c.Job, m.Retention, out)
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
		t.Result = &store.TaskResult{HTTPStatus: status, URLs: c.Job.URLs, ExpiresAt: c.Job.ExpiresAt}
		if spec.Record {
			t.Record = body
		} else {
			t.Result.Header, t.Result.Body, t.Result.DropOnRead = h, body, out.Inline
		}
		if out.UpstreamRef != "" {
			t.UpstreamRef = out.UpstreamRef // the upstream's own id of the result (an avatar's)
		}
		t.ExpireAt = resultExpiry(c.Job, m.Retention, t.CompletedAt)
	case out != nil:
		fail(jobError(f.red, outcomeError(out)))
	default:
		fail(apierr.Internal(errors.New("a task ended without an outcome")))
	}
	f.chains.For(KindJob).runAfter(ctx, "dispatch", c)
	return c.finishErr
}

// endFailed sets the result of a task that ended without its answer: the
// error a poll answers, or, for a family whose tasks are records, its
// record with the error written in (a poll answers it with 200).
func endFailed(spec *vendor.FamilySpec, t *store.Task, status int, body []byte, code, message string) {
	t.Result = &store.TaskResult{HTTPStatus: status, Body: body, ErrorCode: code, ErrorMessage: message}
	if spec.Record {
		t.Result.HTTPStatus, t.Result.Body = http.StatusOK, nil
		t.Record = tasks.WithError(spec, t, tasks.Record(spec, t, t.Status), code, message)
	}
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
