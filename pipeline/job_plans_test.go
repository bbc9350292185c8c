package pipeline

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// planJobs is a vendor of one family whose plan says how it runs jobs.
type planJobs struct {
	upstreamJob       bool
	submitOut         *vendor.JobOutcome
	runs, submits     int
	validates, cancel int
}

func (p *planJobs) Validate(context.Context, *vendor.JobRequest) (*vendor.JobPlan, error) {
	p.validates++
	return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}, UpstreamJob: p.upstreamJob}, nil
}

func (p *planJobs) Run(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	p.runs++
	return &vendor.JobOutcome{State: vendor.JobSucceeded, Status: 200, Body: []byte(`{}`), Units: []vendor.Units{{Count: 1}}}, nil
}

func (p *planJobs) Submit(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	p.submits++
	if p.submitOut != nil {
		return p.submitOut, nil
	}
	return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "this vendor runs no jobs"}
}

func (p *planJobs) Poll(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "no jobs"}
}

func (p *planJobs) Cancel(context.Context, *vendor.JobRequest) error { p.cancel++; return nil }

// The plan belongs to the vendor that runs the attempt (issue 24, point
// 9): a model served by a vendor that submits and polls beside one that
// answers at once runs each channel its own way, and the synchronous
// vendor's healthy channel is neither skipped nor charged a failure.
func TestEachVendorPlansItsOwnChannels(t *testing.T) {
	jobber := &planJobs{upstreamJob: true, submitOut: &vendor.JobOutcome{State: vendor.JobFailed, Status: 503,
		Error: &vendor.JobError{Status: 503, Message: "busy"}}}
	runner := &planJobs{}
	chs := []*config.Channel{
		{Name: "jobs", Vendor: "jobber", Priority: 10, Families: []string{"image"}, Models: []string{"m"}},
		{Name: "sync", Vendor: "runner", Families: []string{"image"}, Models: []string{"m"}},
	}
	health := NewHealth(time.Now)
	s := &dispatchStage{jobs: map[string]vendor.Jobs{"jobber": jobber, "runner": runner}, health: health,
		red: redact.New(redact.Options{}), now: time.Now, log: hclog.NewNullLogger()}
	r, _ := http.NewRequest(http.MethodPost, "/v1/images/generations", nil)
	spec := &vendor.FamilySpec{Name: "image", PriceUnit: "per_image"}
	c := &Call{ID: "req", Request: r, Model: &config.Model{ID: "m", Family: "image"}, ModelID: "m",
		Account: &store.Account{ID: "a"},
		Job:     &Job{Spec: spec, Channels: chs, Billing: spec.BillingOf(nil)}}
	out, err := s.attemptJobs(context.Background(), c, time.Minute)
	if err != nil || out.State != vendor.JobSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	if jobber.submits != 1 || runner.runs != 1 || runner.submits != 0 {
		t.Fatalf("jobber submitted %d; runner ran %d and was asked to submit %d times", jobber.submits, runner.runs, runner.submits)
	}
	if c.Channel != "sync" || !health.Ready("sync") || len(c.Attempts) != 1 || c.Attempts[0].ErrorCode == "" {
		t.Fatalf("served by %q, attempts %+v", c.Channel, c.Attempts)
	}
	if jobber.validates != 1 || runner.validates != 1 {
		t.Fatalf("each vendor plans once: %d, %d", jobber.validates, runner.validates)
	}
}

// A route that names its own model (no model in the body) and a gate: the
// key must be allowed the gate, not the implied model; any route with a
// gate refuses a key without it.
func TestGatedRouteWithAnImpliedModel(t *testing.T) {
	cfg := &config.Config{
		Models: []config.Model{{ID: "clip-compose", Family: "clip"}, {ID: "clip-subtitle", Family: "subtitle", Free: true}},
		Channels: []config.Channel{{Name: "ch", Vendor: "sim", Families: []string{"clip", "subtitle"},
			Models: []string{"clip-compose", "clip-subtitle"}}},
	}
	spec := &vendor.FamilySpec{Name: "subtitle"}
	admit := func(allowed ...string) error {
		r, _ := http.NewRequest(http.MethodPost, "/v1/videos/clip-subtitles", nil)
		r.Header.Set("Content-Type", "application/json")
		c := &Call{Request: r, Body: []byte(`{"video_url":"https://v/1.mp4"}`), Account: &store.Account{ID: "a"},
			Key: &store.Key{RestrictModels: true, AllowedModels: allowed},
			Job: &Job{Routes: []JobRoute{{Spec: spec, Route: vendor.FamilyRoute{Kind: vendor.RouteCreate,
				Model: "clip-subtitle", Gate: "clip-compose"}}}}}
		return (&allowlistStage{cfg: cfg}).admitJob(context.Background(), c)
	}
	if err := admit("clip-compose"); err != nil {
		t.Fatalf("a key allowed the gate: %v", err)
	}
	if err := admit("clip-subtitle"); err == nil || !strings.Contains(err.Error(), "clip-compose") {
		t.Fatalf("a key without the gate: %v", err)
	}
}
