package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/tidwall/sjson"
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
)

// serveJob is the dispatch stage of a job call.
func (s *dispatchStage) serveJob(ctx context.Context, c *Call) error {
	if c.Job.Async {
		return s.submitJob(ctx, c)
	}
	return s.runJob(ctx, c)
}

type jobResult struct {
	out *vendor.JobOutcome
	err error
}

// runJob answers a synchronous job: the channels in order, each attempt
// bounded, the whole call bounded; an answer slower than the family's
// keep-alive wait goes out as 200 with whitespace, then its body.
func (s *dispatchStage) runJob(ctx context.Context, c *Call) error {
	spec := c.Job.Spec
	total, attempt := spec.CallTimeout, spec.AttemptTimeout
	if total <= 0 {
		total = defaultJobCall
	}
	if attempt <= 0 {
		attempt = defaultJobAttempt
	}
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	done := make(chan jobResult, 1)
	go func() {
		out, err := s.attemptJobs(ctx, c, attempt)
		done <- jobResult{out, err}
	}()
	keep := spec.KeepAliveAfter
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

// respondJob hosts a succeeded outcome's files and queues the answer.
func (s *dispatchStage) respondJob(ctx context.Context, c *Call, out *vendor.JobOutcome) error {
	body, err := s.deliver(ctx, c.Account.ID, c.Job, out)
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
	c.Respond(status, h, body)
	return nil
}

// deliver stores the outcome's files and writes their links (and their
// expiry) into the answer; it records what was delivered on j.
func (s *dispatchStage) deliver(ctx context.Context, owner string, j *Job, out *vendor.JobOutcome) ([]byte, error) {
	return deliver(ctx, s.files, owner, j, out)
}

func deliver(ctx context.Context, host FileHost, owner string, j *Job, out *vendor.JobOutcome) ([]byte, error) {
	body := out.Body
	retention := j.Spec.Retention
	if retention <= 0 {
		retention = defaultRetention
	}
	j.Units, j.Inline = out.Units, out.Inline
	j.URLs = append(j.URLs[:0], out.URLs...)
	var expires time.Time
	for _, f := range out.Files {
		if host == nil {
			return nil, apierr.Internal(errors.New("no file store to host results in"))
		}
		url, exp, err := host.Host(ctx, owner, f, retention, j.LinkBase)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		if body, err = sjson.SetBytes(body, f.Slot, url); err != nil {
			return nil, apierr.Internal(err)
		}
		j.URLs = append(j.URLs, url)
		if expires.IsZero() || exp.Before(expires) {
			expires = exp
		}
	}
	if !expires.IsZero() {
		j.ExpiresAt = &expires
		if out.ExpiresSlot != "" {
			var err error
			if body, err = sjson.SetBytes(body, out.ExpiresSlot, expires.Unix()); err != nil {
				return nil, apierr.Internal(err)
			}
		}
	}
	return body, nil
}

// outcomeError is a failed outcome's refusal (an empty one is a 502).
func outcomeError(out *vendor.JobOutcome) *vendor.JobError {
	if out.Error != nil {
		return out.Error
	}
	return &vendor.JobError{Status: http.StatusBadGateway, Message: "the upstream failed the job without saying why"}
}

// attemptJobs tries the job's channels in order until one answers. Before
// an answer, a connection failure, a timeout with time left, a 5xx or a
// 429 moves on to the next channel (folded into the row's attempts).
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
		switch {
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

// oneJob makes one attempt on a channel: a Run, or for an upstream job a
// Submit, then Polls until it ends.
func (s *dispatchStage) oneJob(ctx context.Context, c *Call, v vendor.Jobs, ch *config.Channel, attempt time.Duration) (*vendor.JobOutcome, error) {
	req := jobRequest(c, ch)
	req.Timeout = attempt
	req.Headers = traceHeaders(ctx)
	if !c.Job.Plan.UpstreamJob {
		return v.Run(ctx, req)
	}
	out, err := v.Submit(ctx, req)
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
	now := s.now()
	maxRun := j.Spec.MaxRuntime
	if maxRun <= 0 {
		maxRun = defaultJobCall
	}
	chans := s.jobOrder(j.Channels)
	first := chans[0]
	job := tasks.Job{Request: *jobRequest(c, first), UpstreamJob: j.Plan.UpstreamJob, LinkBase: j.LinkBase}
	enc, err := job.Encode()
	if err != nil {
		return apierr.Internal(err)
	}
	t := store.Task{
		ID: j.TaskID, AccountID: c.Account.ID, KeyID: c.Key.ID, KeyName: c.Key.Name, KeyPrefix: c.Key.Prefix,
		Family: j.Spec.Name, UnitType: j.Spec.UnitType, Operation: j.Route.Operation, Model: c.ModelID, Status: store.TaskQueued,
		RequestID: c.ID, HoldID: c.Hold.ID, Hold: c.Hold.Amount, Channel: first.Name, Vendor: first.Vendor,
		Job: enc, SubmittedAt: c.Start, Deadline: c.Start.Add(maxRun), NextPollAt: now,
		Owner: s.tasks.Owner(), LeaseUntil: now.Add(s.tasks.Lease()),
	}
	if err := s.store.CreateTask(ctx, t); err != nil {
		return apierr.Internal(err)
	}
	j.Task = &t
	var first2 *vendor.JobOutcome
	if j.Plan.UpstreamJob {
		sctx, cancel := context.WithTimeout(ctx, submitTimeout)
		out, ch, err := s.submitUpstream(sctx, c)
		cancel()
		if err != nil {
			return err
		}
		job.Request = *jobRequest(c, ch)
		if enc, err = job.Encode(); err != nil {
			return apierr.Internal(err)
		}
		t.Job, t.Channel, t.Vendor = enc, ch.Name, ch.Vendor
		t.Status, t.StartedAt, t.UpstreamRef = store.TaskRunning, s.now(), out.UpstreamRef
		t.NextPollAt = s.now().Add(max(out.PollAfter, 0))
		if err := s.store.UpdateTask(ctx, t); err != nil {
			return apierr.Internal(err)
		}
		if out.State == vendor.JobSucceeded {
			first2 = out
		}
	}
	j.Task = &t
	j.Accepted = true
	s.tasks.Adopt(t, first2)
	t.Status = store.TaskQueued // the submit answer says queued, as the spec shows it
	body, err := json.Marshal(TaskHead(j.Spec, &t))
	if err != nil {
		return apierr.Internal(err)
	}
	status := j.Spec.InFlightStatus
	if status == 0 {
		status = http.StatusOK
	}
	c.Served = true
	c.Respond(status, http.Header{"Content-Type": {"application/json"}}, body)
	return nil
}

// submitUpstream submits to the channels in order until one accepts or
// refuses; a refusal is the client's answer (the task is not shown).
func (s *dispatchStage) submitUpstream(ctx context.Context, c *Call) (*vendor.JobOutcome, *config.Channel, error) {
	var last error
	for _, ch := range s.jobOrder(c.Job.Channels) {
		v := s.jobs[ch.Vendor]
		c.UpstreamTried = true
		c.UpstreamCalls++
		started := s.now()
		var out *vendor.JobOutcome
		var err error
		if v == nil {
			err = apierr.Newf(apierr.UpstreamUnreachable, "the vendor plugin %q is not running", ch.Vendor)
		} else {
			req := jobRequest(c, ch)
			req.Timeout = submitTimeout
			sctx := ctx
			var span trace.Span
			if s.tracer != nil {
				sctx, span, req.Headers = s.attemptSpan(ctx, ch.Name, ch.Vendor, nil)
			}
			out, err = v.Submit(sctx, req)
			s.upstreamTime(c, started)
			if span != nil {
				endSpan(span, err)
			}
		}
		var e *apierr.Error
		switch {
		case err != nil:
			if !errors.As(err, &e) {
				e = jobFailure(s.red, ctx, c, err)
			}
		case out.State == vendor.JobFailed:
			e = jobError(s.red, outcomeError(out))
			if e.Status < 500 && e.Status != http.StatusTooManyRequests {
				c.Job.Rejected = true
				return nil, nil, e
			}
		case out.State == vendor.JobRunning && out.UpstreamRef == "":
			e = apierr.Internal(errors.New("the plugin accepted a job without an upstream reference"))
		default:
			c.Channel = ch.Name
			return out, ch, nil
		}
		if e.Code == apierr.ClientClosed || e.Code == apierr.InternalError {
			return nil, nil, e
		}
		c.Attempts = append(c.Attempts, store.Attempt{Seq: len(c.Attempts) + 1, CreatedAt: started,
			LatencyMS: s.now().Sub(started).Milliseconds(), ErrorCode: e.Code, ErrorMessage: e.Message})
		last = e
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, last
}

// statusWord is how a family names a task state.
func statusWord(spec *vendor.FamilySpec, state string) string {
	if w, ok := spec.StatusWords[state]; ok {
		return w
	}
	return state
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

// TaskHeadBody is what a submit answers, and a poll while the task runs.
type TaskHeadBody struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Model     string `json:"model"`
	CreatedAt int64  `json:"created_at"`
}

// TaskHead is the head of task t in its family's words. A task that has
// not ended shows as queued until the upstream took it.
func TaskHead(spec *vendor.FamilySpec, t *store.Task) TaskHeadBody {
	return TaskHeadBody{ID: t.ID, Status: statusWord(spec, t.Status), Model: t.Model, CreatedAt: t.SubmittedAt.Unix()}
}

// jobOrder orders a job's channels as a chat call's: priority first,
// weight within it, channels whose breaker is open last.
func (s *dispatchStage) jobOrder(chans []*config.Channel) []*config.Channel {
	cands := make([]Candidate, len(chans))
	for i, ch := range chans {
		cands[i] = Candidate{Channel: ch}
	}
	cands = s.order(orderCandidates(cands))
	out := make([]*config.Channel, len(cands))
	for i, c := range cands {
		out[i] = c.Channel
	}
	return out
}
