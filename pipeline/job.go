package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
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
	Spec  *vendor.FamilySpec
	Route vendor.FamilyRoute
	// Body is the client's JSON body, or a multipart request's text fields
	// as a JSON object; Files are its uploads.
	Body  []byte
	Files []vendor.JobFile
	Async bool
	// LinkBase is the base of the links to hosted results.
	LinkBase string

	Channels []*config.Channel // the model's channels of the family, priority first
	Plan     *vendor.JobPlan

	// Async: the task, and whether the client was given its id (from then
	// on the task owns the hold and writes the row when it ends).
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
}

// Maximum sizes of a job's parts that the gateway reads itself.
const (
	maxFormField = 1 << 20
	maxFormFiles = 16
)

// admitJob reads a job call's body, finds its model and checks the key may
// use it (the allowlist stage of a job).
func (s *allowlistStage) admitJob(c *Call) error {
	j := c.Job
	if err := readJobBody(c); err != nil {
		return err
	}
	switch j.Route.Async {
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
	if m := gjson.GetBytes(j.Body, "model"); m.Exists() {
		if m.Type != gjson.String {
			return apierr.New(apierr.InvalidRequest, "model: want a string")
		}
		c.ModelID = m.Str
	}
	if c.ModelID == "" {
		if !j.Spec.ModelOptional {
			return apierr.New(apierr.InvalidRequest, "model is required")
		}
		for i := range s.cfg.Models {
			if s.cfg.Models[i].Family == j.Spec.Name {
				c.ModelID = s.cfg.Models[i].ID
				break
			}
		}
		if c.ModelID == "" {
			return apierr.Newf(apierr.NoChannelAvailable, "no %s model is configured", j.Spec.Name)
		}
	}
	m, ok := s.cfg.Model(c.ModelID)
	if !ok {
		return apierr.Newf(apierr.ModelNotFound, "the model '%s' does not exist", c.ModelID)
	}
	c.Model = m
	if !Allowed(c.Key, m) {
		return apierr.Newf(apierr.ModelNotAllowed, "this key is not allowed to use the model '%s'", c.ModelID)
	}
	if m.Family != j.Spec.Name {
		return apierr.Newf(apierr.NoChannelAvailable, "the model '%s' is a %s model and has no channel on this %s endpoint", c.ModelID, m.Family, j.Spec.Name)
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

// readJobBody puts the client's body into j.Body (and j.Files): a JSON
// object, or a multipart form where the route takes one.
func readJobBody(c *Call) error {
	if c.BodyErr != nil {
		return c.BodyErr
	}
	j := c.Job
	mt, params, _ := mime.ParseMediaType(c.Request.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		if !j.Route.Multipart {
			return apierr.New(apierr.InvalidRequest, "this endpoint takes a JSON body, not multipart/form-data")
		}
		return readForm(c, params["boundary"])
	}
	if !gjson.ValidBytes(c.Body) || !gjson.ParseBytes(c.Body).IsObject() {
		return apierr.New(apierr.InvalidRequest, "the body must be a JSON object")
	}
	j.Body = c.Body
	return nil
}

// readForm turns a multipart body into its text fields (a JSON object;
// repeated fields become arrays) and its files.
func readForm(c *Call, boundary string) error {
	if boundary == "" {
		return apierr.New(apierr.InvalidRequest, "multipart/form-data without a boundary")
	}
	j := c.Job
	r := multipart.NewReader(bytes.NewReader(c.Body), boundary)
	fields := map[string][]string{}
	var order []string
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return apierr.Newf(apierr.InvalidRequest, "the multipart body could not be read: %v", err)
		}
		name := p.FormName()
		if name == "" {
			continue
		}
		if p.FileName() != "" {
			if len(j.Files) >= maxFormFiles {
				return apierr.Newf(apierr.InvalidRequest, "at most %d files per request", maxFormFiles)
			}
			data, err := io.ReadAll(p)
			if err != nil {
				return apierr.Newf(apierr.InvalidRequest, "file %q could not be read: %v", p.FileName(), err)
			}
			ct := p.Header.Get("Content-Type")
			if ct == "" || ct == "application/octet-stream" {
				ct = http.DetectContentType(data)
			}
			j.Files = append(j.Files, vendor.JobFile{Field: name, Filename: p.FileName(), ContentType: ct, Data: data})
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxFormField+1))
		if err != nil || len(v) > maxFormField {
			return apierr.Newf(apierr.InvalidRequest, "form field %q is too long or unreadable", name)
		}
		if _, seen := fields[name]; !seen {
			order = append(order, name)
		}
		fields[name] = append(fields[name], string(v))
	}
	obj := make(map[string]any, len(fields))
	for _, k := range order {
		if vs := fields[k]; len(vs) == 1 && !strings.HasSuffix(k, "[]") {
			obj[k] = vs[0]
		} else {
			obj[strings.TrimSuffix(k, "[]")] = vs
		}
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return apierr.Internal(err)
	}
	j.Body = body
	return nil
}

// jobRequest is what the plugin is handed for the call on channel ch.
func jobRequest(c *Call, ch *config.Channel) *vendor.JobRequest {
	j, m := c.Job, c.Model
	upstream, _ := ch.UpstreamModel(m.ID)
	return &vendor.JobRequest{
		Family: j.Spec.Name, Operation: j.Route.Operation, Channel: ch.Name,
		Model: vendor.JobModel{ID: c.ModelID, Upstream: upstream, Settings: m.FamilySettings(), Tiers: m.Price.Tiers()},
		Body:  j.Body, Files: j.Files, Async: j.Async, RequestID: c.ID,
	}
}

// planJob asks the plugin of the first channel that answers how many units
// the call holds (the precharge stage of a job), and prices them.
func (s *prechargeStage) planJob(ctx context.Context, c *Call) (money.Nano, error) {
	j := c.Job
	var last error
	for _, ch := range j.Channels {
		v := s.jobs[ch.Vendor]
		if v == nil {
			last = apierr.Newf(apierr.UpstreamUnreachable, "the vendor plugin %q is not running", ch.Vendor)
			continue
		}
		plan, err := v.Validate(ctx, jobRequest(c, ch))
		if err != nil {
			last = jobFailure(s.red, ctx, c, err)
			continue
		}
		if plan.Error != nil {
			return 0, jobError(s.red, plan.Error)
		}
		j.Plan = plan
		return unitsCost(c.Model, j.Spec.PriceUnit, plan.Hold)
	}
	return 0, last
}

// unitsCost prices units with the model's price block; a tier the model
// does not price costs the base price.
func unitsCost(m *config.Model, priceUnit string, us []vendor.Units) (money.Nano, error) {
	var total money.Nano
	for _, u := range us {
		if u.Count < 0 {
			return 0, apierr.Internal(errors.New("the plugin reported a negative unit count"))
		}
		p, ok := m.Price.Unit(priceUnit, u.Tier)
		if !ok {
			if p, ok = m.Price.Unit(priceUnit, ""); !ok {
				return 0, apierr.Internal(errors.New("the family's price unit " + priceUnit + " is unknown"))
			}
		}
		cost := money.Times(u.Count, p)
		if cost == money.Nano(1<<63-1) || total > money.Nano(1<<63-1)-cost {
			return 0, apierr.New(apierr.InvalidRequest, "the request's cost is out of range")
		}
		total += cost
	}
	return total, nil
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

// newTaskID is a fresh task id with the family's prefix.
func newTaskID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// jobCharge is what a job's delivered units cost, never more than the hold
// (settlement only moves downward).
func jobCharge(c *Call) money.Nano {
	if c.Hold == nil || len(c.Job.Units) == 0 {
		return 0
	}
	cost, err := unitsCost(c.Model, c.Job.Spec.PriceUnit, c.Job.Units)
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

// techKind is the technical view's kind of a unit type.
func techKind(unitType string) string {
	switch unitType {
	case "image", "video", "music", "audio":
		return unitType
	}
	return ""
}
