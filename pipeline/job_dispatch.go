package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// Defaults of a family that leaves a limit unset.
const (
	defaultJobCall    = 280 * time.Second
	defaultJobAttempt = 240 * time.Second
	defaultRetention  = 24 * time.Hour
	// submitTimeout bounds an async submit to the upstream (the spec's
	// video submit timeout; the job itself runs on).
	submitTimeout = 60 * time.Second
	// keepAliveEvery is how often a kept-alive answer sends whitespace.
	keepAliveEvery = 15 * time.Second
	// pollEvery is how often a waiting client's upstream job is polled.
	pollEvery = time.Second
	// recordGrace is how long past its call's end a synchronous create's
	// task stays leased to the call (the call settles it itself).
	recordGrace = time.Minute
)

// serveJob is the dispatch stage of a job call.
func (s *dispatchStage) serveJob(ctx context.Context, c *Call) error {
	j := c.Job
	switch {
	case j.Async:
		return s.submitJob(ctx, c)
	case j.Route.Recorded:
		if err := s.recordTask(ctx, c); err != nil {
			return err
		}
	}
	return s.runJob(ctx, c)
}

type jobResult struct {
	out *vendor.JobOutcome
	err error
}

// callTimeouts are a synchronous job's limits: the whole call and one
// attempt, the family's, shortened by the model's.
func callTimeouts(c *Call) (total, attempt time.Duration) {
	spec := c.Job.Spec
	total = effective(spec.CallTimeout, c.Model.CallTimeout, defaultJobCall)
	attempt = min(effective(spec.AttemptTimeout, 0, defaultJobAttempt), total)
	return total, attempt
}

// recordTask writes the task a synchronous create is kept as (a cloned
// voice), owning the hold while the call runs: a crash in between leaves
// it to the task engine, which refunds it in full.
func (s *dispatchStage) recordTask(ctx context.Context, c *Call) error {
	j := c.Job
	total, _ := callTimeouts(c)
	now := s.now()
	ch := j.Channels[0]
	t := s.newTask(c, ch, store.TaskRunning, now)
	t.StartedAt, t.Deadline, t.LeaseUntil = now, c.Start.Add(total), now.Add(total+recordGrace)
	t.Job = nil // nothing to resume: a synchronous call is not run again
	if err := s.store.CreateTask(ctx, t); err != nil {
		return apierr.Internal(err)
	}
	j.Task = &t
	return nil
}

// newTask is the task of job call c, on channel ch.
func (s *dispatchStage) newTask(c *Call, ch *config.Channel, status string, now time.Time) store.Task {
	j := c.Job
	maxRun := effective(j.Spec.MaxRuntime, c.Model.MaxRuntime, defaultJobCall)
	t := store.Task{
		ID: j.TaskID, AccountID: c.Account.ID, KeyID: c.Key.ID, KeyName: c.Key.Name, KeyPrefix: c.Key.Prefix,
		Family: j.Spec.Name, UnitType: j.Billing.UnitType, Operation: j.Route.Operation, Model: c.ModelID, Status: status,
		RequestID: c.ID, HoldID: c.Hold.ID, Hold: c.Hold.Amount, Channel: ch.Name, Vendor: ch.Vendor,
		SubmittedAt: c.Start, Deadline: c.Start.Add(maxRun), NextPollAt: now,
		Owner: s.tasks.Owner(), LeaseUntil: now.Add(s.tasks.Lease()),
	}
	if j.Spec.Record && j.Plan != nil {
		t.Record = j.Plan.Record
	}
	return t
}

// runJob answers a synchronous job: the channels in order, each attempt
// bounded, the whole call bounded; an answer slower than the family's
// keep-alive wait goes out as 200 with whitespace, then its body.
func (s *dispatchStage) runJob(ctx context.Context, c *Call) error {
	total, attempt := callTimeouts(c)
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	done := make(chan jobResult, 1)
	go func() {
		out, err := s.attemptJobs(ctx, c, attempt)
		done <- jobResult{out, err}
	}()
	keep := c.Job.Spec.KeepAliveAfter
	if c.Model.KeepAliveAfter > 0 {
		keep = c.Model.KeepAliveAfter
	}
	var r jobResult
	if keep > 0 {
		t := time.NewTimer(keep)
		select {
		case r = <-done:
			t.Stop()
		case <-t.C:
			c.W.startKeepAlive(min(keepAliveEvery, keep))
			r = <-done
		}
	} else {
		r = <-done
	}
	if r.err != nil {
		return r.err
	}
	if r.out.State != vendor.JobSucceeded {
		return jobError(s.red, outcomeError(r.out))
	}
	return s.respondJob(ctx, c, r.out)
}

// respondJob hosts a succeeded outcome's files and queues the answer; a
// recorded create's task ends succeeded with it (the log stage writes it
// with the settlement).
func (s *dispatchStage) respondJob(ctx context.Context, c *Call, out *vendor.JobOutcome) error {
	j := c.Job
	body, err := deliver(ctx, s.files, c.Account.ID, j, c.Model.Retention, out)
	if err != nil {
		return err
	}
	c.Served = true
	status := out.Status
	if status == 0 {
		status = http.StatusOK
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range out.Headers {
		h.Set(k, v)
	}
	if t := j.Task; t != nil {
		t.Status, t.CompletedAt, t.UpstreamRef = store.TaskSucceeded, s.now(), out.UpstreamRef
		if ch := c.Channel; ch != "" {
			t.Channel = ch
			for _, cc := range j.Channels {
				if cc.Name == ch {
					t.Vendor = cc.Vendor
				}
			}
		}
		t.Result = &store.TaskResult{HTTPStatus: status, URLs: j.URLs, ExpiresAt: j.ExpiresAt}
		if j.Spec.Record {
			t.Record = body
			body = tasks.Record(j.Spec, t, store.TaskSucceeded)
		} else {
			t.Result.Header, t.Result.Body = flatHeader(h), body
		}
		t.ExpireAt = resultExpiry(j, c.Model.Retention, t.CompletedAt)
	}
	c.Respond(status, h, body)
	return nil
}

func flatHeader(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = h.Get(k)
	}
	return out
}

// outcomeError is a failed outcome's refusal (an empty one is a 502).
func outcomeError(out *vendor.JobOutcome) *vendor.JobError {
	if out.Error != nil {
		return out.Error
	}
	if out.State == vendor.JobCancelled {
		return &vendor.JobError{Status: http.StatusConflict, Code: codeCancelled, Message: "the upstream cancelled the job"}
	}
	return &vendor.JobError{Status: http.StatusBadGateway, Message: "the upstream failed the job without saying why"}
}

// codeCancelled is the error code of a cancelled task.
const codeCancelled = "task_cancelled"

// orphanError is a submit that got no answer: the upstream may hold the
// job, so no other channel is tried (it would run twice).
type orphanError struct {
	channel string
	err     *apierr.Error
}

func (e *orphanError) Error() string { return e.err.Error() }

// attemptJobs tries the job's channels in order until one answers. Before
// an answer, a connection failure, a timeout with time left, a 5xx or a
// 429 moves on to the next channel (folded into the row's attempts); a
// submit that may have reached its upstream never does.
func (s *dispatchStage) attemptJobs(ctx context.Context, c *Call, attempt time.Duration) (*vendor.JobOutcome, error) {
	var last error
	for _, ch := range s.jobOrder(c.Job.Channels) {
		v := s.jobs[ch.Vendor]
		started := s.now()
		s.health.Begin(ch.Name)
		c.UpstreamTried = true
		c.UpstreamCalls++
		var out *vendor.JobOutcome
		var err error
		if v == nil {
			err = apierr.Newf(apierr.UpstreamUnreachable, "the vendor plugin %q is not running", ch.Vendor)
		} else {
			actx, cancel := context.WithTimeout(ctx, attempt)
			var span trace.Span
			if s.tracer != nil {
				actx, span, _ = s.attemptSpan(actx, ch.Name, ch.Vendor, nil)
			}
			out, err = s.oneJob(actx, c, v, ch, attempt)
			s.upstreamTime(c, started)
			if span != nil {
				endSpan(span, err)
			}
			cancel()
		}
		retry := false
		var orphan *orphanError
		switch {
		case errors.As(err, &orphan):
			c.Job.Orphan = orphan.channel
			err = orphan.err
		case err != nil:
			e := jobFailure(s.red, ctx, c, err)
			if ae := (*apierr.Error)(nil); errors.As(err, &ae) {
				e = ae
			}
			err = e
			retry = e.Code == apierr.UpstreamUnreachable || e.Code == apierr.UpstreamError ||
				e.Code == apierr.UpstreamTimeout && ctx.Err() == nil
		case out.State != vendor.JobSucceeded:
			e := outcomeError(out)
			retry = e.Status >= 500 || e.Status == http.StatusTooManyRequests
			err = jobError(s.red, e)
		}
		if !retry {
			if err == nil {
				s.health.Success(ch.Name)
				c.Channel = ch.Name
			} else if apierr.As(err).Code == apierr.ClientClosed {
				s.health.Release(ch.Name)
			} else {
				s.health.Success(ch.Name) // the upstream answered: a refusal of the caller's making
			}
			return out, err
		}
		s.health.Failure(ch.Name)
		e := apierr.As(err)
		c.Attempts = append(c.Attempts, store.Attempt{
			Seq: len(c.Attempts) + 1, CreatedAt: started, LatencyMS: s.now().Sub(started).Milliseconds(),
			ErrorCode: e.Code, ErrorMessage: e.Message,
		})
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil && c.Request.Context().Err() == nil {
		return nil, apierr.New(apierr.UpstreamTimeout, "the upstream did not finish in time")
	}
	if last == nil {
		last = apierr.Newf(apierr.NoChannelAvailable, "the model '%s' has no usable channel", c.ModelID)
	}
	return nil, last
}

// oneJob makes one attempt on a channel, as its vendor plans it: a Run,
// or a Submit, then Polls until the job ends.
func (s *dispatchStage) oneJob(ctx context.Context, c *Call, v vendor.Jobs, ch *config.Channel, attempt time.Duration) (*vendor.JobOutcome, error) {
	plan, err := planFor(ctx, s.jobs, s.red, c, ch)
	if err != nil {
		return nil, err
	}
	req := jobRequest(c, ch)
	req.Timeout = attempt
	req.Headers = traceHeaders(ctx)
	if !plan.UpstreamJob {
		return v.Run(ctx, req)
	}
	out, err := v.Submit(ctx, req)
	if err != nil && mayHaveReached(err) {
		s.orphaned(c, ch.Name, err)
		return nil, &orphanError{channel: ch.Name, err: jobFailure(s.red, ctx, c, err)}
	}
	for err == nil && out.State == vendor.JobRunning {
		wait := out.PollAfter
		if wait <= 0 {
			wait = pollEvery
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			go s.cancelJob(req, out.UpstreamRef, v)
			return nil, &vendor.Failure{Kind: vendor.FailureTimeout, Message: ctx.Err().Error()}
		case <-t.C:
		}
		req.UpstreamRef = out.UpstreamRef
		out, err = v.Poll(ctx, req)
	}
	return out, err
}

// orphaned logs a submit whose answer never came: the channel may hold a
// job nobody polls (and that its upstream may bill the operator for).
func (s *dispatchStage) orphaned(c *Call, channel string, err error) {
	s.log.Warn("a submit got no answer; the upstream may hold an orphaned job, not retried elsewhere",
		"channel", channel, "request_id", c.ID, "task_id", c.Job.TaskID, "error", err)
}

// cancelJob tells the upstream to stop a job nobody waits for any more.
func (s *dispatchStage) cancelJob(req *vendor.JobRequest, ref string, v vendor.Jobs) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := *req
	r.UpstreamRef = ref
	_ = v.Cancel(ctx, &r)
}

// submitJob answers an async job: the task is written first (it owns the
// hold from here on), an upstream job is submitted while the client
// waits (so a refusal is a real 4xx), and the engine takes it from there.
func (s *dispatchStage) submitJob(ctx context.Context, c *Call) error {
	j := c.Job
	chans := s.jobOrder(j.Channels)
	t := s.newTask(c, chans[0], store.TaskQueued, s.now())
	job := tasks.Job{Request: *jobRequest(c, chans[0]), UpstreamJob: j.Plan.UpstreamJob, LinkBase: j.LinkBase, Price: &j.Price}
	enc, err := job.Encode()
	if err != nil {
		return apierr.Internal(err)
	}
	t.Job = enc
	if err := s.store.CreateTask(ctx, t); err != nil {
		return apierr.Internal(err)
	}
	j.Task = &t
	sctx, cancel := context.WithTimeout(ctx, effective(submitTimeout, c.Model.CallTimeout, submitTimeout))
	out, ch, plan, err := s.startTask(sctx, c, chans)
	cancel()
	if err != nil {
		return err
	}
	job.Request, job.UpstreamJob = *jobRequest(c, ch), plan.UpstreamJob
	if !plan.UpstreamJob {
		// A background run moves on as a synchronous call would, to the
		// channels after it whose vendors run it the same way.
		after := false
		for _, alt := range chans {
			if alt == ch {
				after = true
				continue
			}
			if p, err := planFor(ctx, s.jobs, s.red, c, alt); after && err == nil && !p.UpstreamJob {
				up, _ := alt.UpstreamModel(c.Model.ID)
				job.Alternates = append(job.Alternates, tasks.Alternate{Channel: alt.Name, Vendor: alt.Vendor, Upstream: up})
			}
		}
	}
	if enc, err = job.Encode(); err != nil {
		return apierr.Internal(err)
	}
	t.Job, t.Channel, t.Vendor = enc, ch.Name, ch.Vendor
	var first *vendor.JobOutcome
	if out != nil {
		t.Status, t.StartedAt, t.UpstreamRef = store.TaskRunning, s.now(), out.UpstreamRef
		t.NextPollAt = s.now().Add(max(out.PollAfter, 0))
		if out.State == vendor.JobRunning && j.Spec.Record && len(out.Body) > 0 {
			t.Record = out.Body
		}
		if out.State != vendor.JobRunning {
			first = out
		}
	}
	if err := s.store.UpdateTask(ctx, t); err != nil {
		return apierr.Internal(err)
	}
	j.Task = &t
	j.Accepted = true
	s.tasks.Adopt(t, first)
	// The submit answer says queued, as the spec shows it.
	var body []byte
	if j.Spec.Record {
		body = tasks.Record(j.Spec, &t, store.TaskQueued)
	} else {
		shown := t
		shown.Status = store.TaskQueued
		if body, err = json.Marshal(tasks.Head(j.Spec, &shown)); err != nil {
			return apierr.Internal(err)
		}
	}
	c.Served = true
	c.Respond(tasks.InFlightStatus(j.Spec), http.Header{"Content-Type": {"application/json"}}, body)
	return nil
}

// startTask finds the channel that takes the task: the first whose vendor
// runs it in the background (a synchronous vendor: the engine runs it, no
// outcome yet), or accepts its submit. A refusal is the client's answer
// (the task is not shown); a submit without an answer is not retried.
func (s *dispatchStage) startTask(ctx context.Context, c *Call, chans []*config.Channel) (*vendor.JobOutcome, *config.Channel, *vendor.JobPlan, error) {
	var last error
	for _, ch := range chans {
		plan, err := planFor(ctx, s.jobs, s.red, c, ch)
		if err != nil {
			if e := apierr.As(err); e.Status < 500 {
				return nil, nil, nil, err
			}
			last = err
			continue
		}
		if !plan.UpstreamJob {
			c.Channel = ch.Name
			return nil, ch, plan, nil
		}
		v := s.jobs[ch.Vendor]
		c.UpstreamTried = true
		c.UpstreamCalls++
		started := s.now()
		req := jobRequest(c, ch)
		req.Timeout = effective(submitTimeout, c.Model.CallTimeout, submitTimeout)
		sctx := ctx
		var span trace.Span
		if s.tracer != nil {
			sctx, span, req.Headers = s.attemptSpan(ctx, ch.Name, ch.Vendor, nil)
		}
		out, err := v.Submit(sctx, req)
		s.upstreamTime(c, started)
		if span != nil {
			endSpan(span, err)
		}
		var e *apierr.Error
		switch {
		case err != nil && mayHaveReached(err):
			c.Job.Orphan = ch.Name
			s.orphaned(c, ch.Name, err)
			return nil, nil, nil, jobFailure(s.red, ctx, c, err)
		case err != nil:
			if !errors.As(err, &e) {
				e = jobFailure(s.red, ctx, c, err)
			}
		case out.State == vendor.JobFailed || out.State == vendor.JobCancelled:
			e = jobError(s.red, outcomeError(out))
			if e.Status < 500 && e.Status != http.StatusTooManyRequests {
				c.Job.Rejected = true
				return nil, nil, nil, e
			}
		case out.State == vendor.JobRunning && out.UpstreamRef == "":
			e = apierr.Internal(errors.New("the plugin accepted a job without an upstream reference"))
		default:
			c.Channel = ch.Name
			return out, ch, plan, nil
		}
		if e.Code == apierr.ClientClosed || e.Code == apierr.InternalError {
			return nil, nil, nil, e
		}
		c.Attempts = append(c.Attempts, store.Attempt{Seq: len(c.Attempts) + 1, CreatedAt: started,
			LatencyMS: s.now().Sub(started).Milliseconds(), ErrorCode: e.Code, ErrorMessage: e.Message})
		last = e
		if ctx.Err() != nil {
			break
		}
	}
	if last == nil {
		last = apierr.Newf(apierr.NoChannelAvailable, "the model '%s' has no usable channel", c.ModelID)
	}
	return nil, nil, nil, last
}

// startKeepAlive sends the status line (200) and then whitespace every
// interval until endKeepAlive: JSON allows leading whitespace, so the body
// that follows still parses (errors rule 6).
func (w *ResponseWriter) startKeepAlive(every time.Duration) {
	if w.status != 0 {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte{' '})
	w.Flush()
	w.keptAlive = true
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, err := w.Write([]byte{' '}); err != nil {
					return
				}
				w.Flush()
			}
		}
	}()
	w.stopAlive = func() { close(stop); <-done }
}

// endKeepAlive stops the whitespace; the body may follow.
func (w *ResponseWriter) endKeepAlive() {
	if w.stopAlive != nil {
		w.stopAlive()
		w.stopAlive = nil
	}
}

// jobOrder orders a job's channels as a chat call's: priority first,
// weight within it, channels whose breaker is open last.
func (s *dispatchStage) jobOrder(chans []*config.Channel) []*config.Channel {
	cands := make([]Candidate, len(chans))
	for i, ch := range chans {
		cands[i] = Candidate{Channel: ch}
	}
	cands = s.order(nil, orderCandidates(cands))
	out := make([]*config.Channel, len(cands))
	for i, c := range cands {
		out[i] = c.Channel
	}
	return out
}
