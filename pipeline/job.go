package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// Job is the media part of a call on a family route (images, video...):
// what the plugin needs, what it planned, and what it delivered. The
// family's rules run in the plugin; the gateway keeps auth, money, tasks,
// hosted files and the ledger, the same for every family.
type Job struct {
	// Routes are the families that declared the call's route (several on
	// a shared route); the model's family picks Spec and Route among them.
	Routes []JobRoute
	Spec   *vendor.FamilySpec
	Route  vendor.FamilyRoute
	// Billing is the route's billing identity for Spec.
	Billing vendor.Billing
	// Body is the client's JSON body, or a multipart request's text fields
	// as a JSON object; Files are its uploads, kept in the file store.
	Body  []byte
	Files []vendor.JobFile
	Async bool
	// LinkBase is the base of the links to hosted results.
	LinkBase string

	Channels []*config.Channel // the model's channels of the family, priority first
	// Plan is the plan the hold was sized by; plans are each vendor's
	// (a vendor decides how its own channels run the job).
	Plan  *vendor.JobPlan
	plans map[string]*vendor.JobPlan
	// Refs are the earlier tasks the body named, resolved (job_refs.go).
	Refs []vendor.JobRef
	// Price is the model's price block when the call was admitted: a task
	// settles at it, whatever a reload changes meanwhile.
	Price config.Price

	// A task: an async job, or a synchronous create its route records.
	// Accepted: the client was given its id (from then on the task owns
	// the hold and writes the row when it ends).
	TaskID   string
	Task     *store.Task
	Accepted bool

	// What was delivered: the units, the result links and their expiry.
	Units     []vendor.Units
	URLs      []string
	ExpiresAt *time.Time
	// Inline: the answer carries its result's bytes (base64): it is not
	// kept for an idempotent replay.
	Inline bool
	// Rejected: the upstream refused the submit (the row is rejected).
	Rejected bool
	// Interrupted: a gateway restart cut the task (refunded in full).
	Interrupted bool
	// Orphan names a channel that may hold an upstream job nobody will
	// poll: its submit got no answer (the row's technical view says so).
	Orphan string
}

// JobRoute is one family's declaration of a route.
type JobRoute struct {
	Spec  *vendor.FamilySpec
	Route vendor.FamilyRoute
}

// rowBilling is the billing identity the call's row shows: its family's,
// or, for a call refused before its model chose a family (a 402 at
// authentication, an unknown model, a bad body), what every family
// declaring its route shares, so that the row still names its family's
// unit and not a token-billed call.
func (j *Job) rowBilling() vendor.Billing {
	if j.Spec != nil || len(j.Routes) == 0 {
		return j.Billing
	}
	b := j.Routes[0].Spec.BillingOf(&j.Routes[0].Route)
	for _, r := range j.Routes[1:] {
		o := r.Spec.BillingOf(&r.Route)
		if o.UnitType != b.UnitType {
			b.UnitType = ""
		}
		if o.LogKind != b.LogKind {
			b.LogKind = ""
		}
	}
	return vendor.Billing{UnitType: b.UnitType, LogKind: b.LogKind}
}

// recorded reports whether the call is a task: an async job, or a
// synchronous create its route keeps.
func (j *Job) recorded() bool { return j.Async || j.Route.Recorded }

// admitJob reads a job call's body, finds its model and checks the key may
// use it (the allowlist stage of a job).
func (s *allowlistStage) admitJob(ctx context.Context, c *Call) error {
	j := c.Job
	if err := s.readJobBody(ctx, c); err != nil {
		return err
	}
	// The model first: a call refused for another field still names it
	// in its row.
	if m := gjson.GetBytes(j.Body, "model"); m.Exists() && m.Type != gjson.Null {
		if m.Type != gjson.String {
			return apierr.New(apierr.InvalidRequest, "model: want a string")
		}
		c.ModelID = m.Str
	}
	first := j.Routes[0]
	switch first.Route.Async {
	case vendor.AsyncAlways:
		j.Async = true
	case vendor.AsyncField:
		v := gjson.GetBytes(j.Body, "async")
		switch {
		case v.Type == gjson.True || v.Type == gjson.String && v.Str == "true":
			j.Async = true
		case v.Exists() && v.Type != gjson.False && v.Type != gjson.Null && !(v.Type == gjson.String && v.Str == "false"):
			return apierr.New(apierr.InvalidRequest, "async: want true or false")
		}
	}
	if !j.Async && !first.Route.Recorded && len(j.Files) > 0 {
		// A synchronous call's uploads are not needed once it answered.
		files := j.Files
		c.Defer(func() { s.files.Discard(context.WithoutCancel(ctx), files) })
	}
	implied := first.Route.Model
	if implied != "" {
		// A route that names its own model runs it and no other.
		if c.ModelID != "" && c.ModelID != implied {
			if m, ok := s.cfg.Model(c.ModelID); !ok || m.ID != implied {
				return apierr.Newf(apierr.InvalidRequest, "model: this endpoint runs the model '%s' only; leave model out", implied)
			}
		}
		c.ModelID = implied
	}
	if c.ModelID == "" {
		if len(j.Routes) > 1 || !first.Spec.ModelOptional {
			return apierr.New(apierr.InvalidRequest, "model is required")
		}
		for i := range s.cfg.Models {
			if s.cfg.Models[i].Family == first.Spec.Name {
				c.ModelID = s.cfg.Models[i].ID
				break
			}
		}
		if c.ModelID == "" {
			return apierr.Newf(apierr.NoChannelAvailable, "no %s model is configured", first.Spec.Name)
		}
	}
	m, ok := s.cfg.Model(c.ModelID)
	if !ok {
		if implied != "" {
			return Refusal(apierr.Newf(apierr.ModelNotFound, "the model '%s', which this endpoint runs, is not served here", c.ModelID),
				first.Spec.Refusals.NotFound)
		}
		return UnknownModel(s.cfg, c.Key, c.ModelID)
	}
	c.Model = m
	i := slices.IndexFunc(j.Routes, func(r JobRoute) bool { return r.Spec.Name == m.Family })
	refusals := vendor.Refusals{}
	if i >= 0 {
		refusals = j.Routes[i].Spec.Refusals
	}
	// A gated route's implied model needs no allowlist entry of its own:
	// the gate is what the key must be allowed (editing's recognition).
	if !Allowed(c.Key, m) && !(implied != "" && first.Route.Gate != "") {
		return Refusal(apierr.Newf(apierr.ModelNotAllowed, "this key is not allowed to use the model '%s'", c.ModelID), refusals.NotAllowed)
	}
	if i < 0 {
		names := make([]string, len(j.Routes))
		for k, r := range j.Routes {
			names[k] = r.Spec.Name
		}
		return otherFamily(s.routes, c.ModelID, m, names)
	}
	j.Spec, j.Route = j.Routes[i].Spec, j.Routes[i].Route
	j.Billing = j.Spec.BillingOf(&j.Route)
	if err := CheckGate(s.cfg, c.Key, j.Spec, j.Route.Gate); err != nil {
		return err
	}
	if !m.Free && !m.Price.Prices(j.Billing.PriceUnit) {
		// Fail closed: a model called where its price block does not
		// price the route's unit would serve for nothing.
		return apierr.Newf(apierr.InvalidRequest, "the model '%s' is not served on this endpoint (it is not priced %s)", c.ModelID, j.Billing.PriceUnit)
	}
	for _, ch := range s.cfg.ChannelsFor(m.ID) {
		if slices.Contains(ch.Families, j.Spec.Name) {
			j.Channels = append(j.Channels, ch)
		}
	}
	if len(j.Channels) == 0 {
		return apierr.Newf(apierr.NoChannelAvailable, "the model '%s' has no channel", c.ModelID)
	}
	return nil
}

// CheckGate refuses a key whose allowlist lacks gate, the model a route
// needs beyond the one it runs (the editing helpers need clip-compose),
// with the family's statuses (errors rule 9): a gate this gateway does
// not configure is model_not_found.
func CheckGate(cfg *config.Config, k *store.Key, spec *vendor.FamilySpec, gate string) error {
	if gate == "" {
		return nil
	}
	gm, ok := cfg.Model(gate)
	if !ok {
		return Refusal(apierr.Newf(apierr.ModelNotFound, "the model '%s', which this endpoint needs, is not served here", gate), spec.Refusals.NotFound)
	}
	if !Allowed(k, gm) {
		return Refusal(apierr.Newf(apierr.ModelNotAllowed, "this key is not allowed to use the model '%s', which this endpoint needs", gate), spec.Refusals.NotAllowed)
	}
	return nil
}

// Refusal is e with the status its family gives it where errors rule 9
// differs from the truth table (0 keeps it); a 403 is a permission error.
func Refusal(e *apierr.Error, status int) *apierr.Error {
	if status == 0 || status == e.Status {
		return e
	}
	e.Status = status
	if status == http.StatusForbidden {
		e.Type = "permission_error"
	}
	return e
}

// jobRequest is what the plugin is handed for the call on channel ch.
func jobRequest(c *Call, ch *config.Channel) *vendor.JobRequest {
	j, m := c.Job, c.Model
	upstream, _ := ch.UpstreamModel(m.ID)
	r := &vendor.JobRequest{
		Family: j.Spec.Name, Operation: j.Route.Operation, Channel: ch.Name,
		Model: vendor.JobModel{ID: c.ModelID, Upstream: upstream, Settings: m.FamilySettings(), Tiers: m.Price.Tiers()},
		Body:  j.Body, Files: j.Files, Async: j.Async, RequestID: c.ID, TaskID: j.TaskID, Refs: j.Refs,
	}
	if j.TaskID != "" {
		r.Submitted = c.Start
	}
	return r
}

// planJob asks the plugin of the first channel that answers how many units
// the call holds (the precharge stage of a job), and prices them at the
// model's prices, which the job keeps.
func (s *prechargeStage) planJob(ctx context.Context, c *Call) (money.Nano, error) {
	j := c.Job
	var last error
	for _, ch := range j.Channels {
		plan, err := planFor(ctx, s.jobs, s.red, c, ch)
		if err != nil {
			if ae := (*apierr.Error)(nil); errors.As(err, &ae) && ae.Status < 500 {
				return 0, err // the family's refusal
			}
			last = err
			continue
		}
		j.Plan = plan
		j.Price = c.Model.Price
		return unitsCost(c.Model, j.Price, j.Billing.PriceUnit, plan.Hold)
	}
	return 0, last
}

// planFor is the plan of ch's vendor for the call, asked once per vendor.
// A refusal is the client's error.
func planFor(ctx context.Context, jobs map[string]vendor.Jobs, red *redact.Redactor, c *Call, ch *config.Channel) (*vendor.JobPlan, error) {
	j := c.Job
	if p, ok := j.plans[ch.Vendor]; ok {
		return p, nil
	}
	v := jobs[ch.Vendor]
	if v == nil {
		return nil, apierr.Newf(apierr.UpstreamUnreachable, "the vendor plugin %q is not running", ch.Vendor)
	}
	plan, err := v.Validate(ctx, jobRequest(c, ch))
	if err != nil {
		return nil, jobFailure(red, ctx, c, err)
	}
	if plan.Error != nil {
		return nil, jobError(red, plan.Error)
	}
	if j.plans == nil {
		j.plans = map[string]*vendor.JobPlan{}
	}
	j.plans[ch.Vendor] = plan
	return plan, nil
}

// unitsCost prices units with price, failing closed: a tier the model
// does not price is the client's 400, never billed at another price.
func unitsCost(m *config.Model, price config.Price, priceUnit string, us []vendor.Units) (money.Nano, error) {
	var total money.Nano
	for _, u := range us {
		if u.Count < 0 {
			return 0, apierr.Internal(errors.New("the plugin reported a negative unit count"))
		}
		p, ok := price.Unit(priceUnit, u.Tier)
		if !ok {
			if u.Tier == "" {
				return 0, apierr.Newf(apierr.InvalidRequest, "the model '%s' is priced by tier only (%s): name one", m.ID, strings.Join(price.Tiers(), ", "))
			}
			return 0, apierr.Newf(apierr.InvalidRequest, "the model '%s' has no price for %q (it prices: %s)", m.ID, u.Tier, strings.Join(tiersOrBase(price), ", "))
		}
		cost := money.Times(u.Count, p)
		if cost == money.Nano(1<<63-1) || total > money.Nano(1<<63-1)-cost {
			return 0, apierr.New(apierr.InvalidRequest, "the request's cost is out of range")
		}
		total += cost
	}
	return total, nil
}

func tiersOrBase(p config.Price) []string {
	if ts := p.Tiers(); len(ts) > 0 {
		return ts
	}
	return []string{"one flat price"}
}

// jobError is a plugin's refusal as the client sees it: the gateway's own
// code, or an upstream status mapped as any upstream status is.
func jobError(red *redact.Redactor, e *vendor.JobError) *apierr.Error {
	if e.Code != "" {
		out := apierr.New(e.Code, e.Message)
		if e.Status != 0 {
			out.Status = e.Status
		}
		return out
	}
	return apierr.FromUpstream(e.Status, red.Redact(e.Message))
}

// jobFailure maps an error of a Jobs call without an answer.
func jobFailure(red *redact.Redactor, ctx context.Context, c *Call, err error) *apierr.Error {
	var f *vendor.Failure
	switch {
	case errors.Is(err, vendor.ErrNoJobs):
		return apierr.Newf(apierr.NoChannelAvailable, "the vendor plugin does not serve the %s family", c.Job.Spec.Name)
	case !errors.As(err, &f):
		return apierr.New(apierr.UpstreamUnreachable, "the upstream could not be reached")
	}
	switch f.Kind {
	case vendor.FailureTimeout:
		return apierr.New(apierr.UpstreamTimeout, "the upstream timed out")
	case vendor.FailureCanceled:
		if ctx.Err() != nil && (c.Request == nil || c.Request.Context().Err() == nil) {
			return apierr.New(apierr.UpstreamTimeout, "the upstream timed out")
		}
		return apierr.New(apierr.ClientClosed, "the client closed the request")
	case vendor.FailureConnect, vendor.FailureConfig:
		return apierr.New(apierr.UpstreamUnreachable, "the upstream could not be reached: "+red.Redact(f.Message))
	}
	return &apierr.Error{Status: 502, Code: apierr.UpstreamError, Type: "api_error", Message: "the upstream broke off its answer: " + red.Redact(f.Message)}
}

// mayHaveReached reports whether a Jobs call that failed without an
// answer may have reached the upstream all the same: a timeout, a cut
// answer, a plugin that died under it. A refused connection or a channel
// the plugin does not know never did.
func mayHaveReached(err error) bool {
	var f *vendor.Failure
	if !errors.As(err, &f) {
		return !errors.Is(err, vendor.ErrNoJobs) && !errors.As(err, new(*apierr.Error))
	}
	switch f.Kind {
	case vendor.FailureConnect, vendor.FailureConfig, vendor.FailureCanceled:
		return false
	}
	return true
}

// newTaskID is a fresh task id with the route's prefix.
func newTaskID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// jobCharge is what a job's delivered units cost at the prices it was
// admitted at, never more than the hold (settlement only moves downward).
func jobCharge(c *Call) money.Nano {
	if c.Hold == nil || len(c.Job.Units) == 0 {
		return 0
	}
	cost, err := unitsCost(c.Model, c.Job.Price, c.Job.Billing.PriceUnit, c.Job.Units)
	if err != nil {
		return c.Hold.Amount
	}
	return min(cost, c.Hold.Amount)
}

// unitCount sums delivered units.
func unitCount(us []vendor.Units) int64 {
	var n int64
	for _, u := range us {
		n += u.Count
	}
	return n
}

// effective is a family limit shortened by the model's own (0: none).
func effective(family, model, fallback time.Duration) time.Duration {
	d := family
	if d <= 0 {
		d = fallback
	}
	if model > 0 && model < d {
		d = model
	}
	return d
}
