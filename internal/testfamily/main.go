// Command testfamily is a test fixture, not a vendor: the sim plugin plus
// a second family on the video route, so that tests of the real binary
// see a shared route. Its "clip" family declares POST
// /v1/videos/generations (and its poll and list) like the video family,
// bills per call, and answers at once with a record whose video the
// gateway fetches from the plugin setting result_url (a result by link)
// when set. With the setting conflict = "1" it declares the route
// differently, which the gateway must refuse at start naming both
// families. It lives under
// internal/ so that `go build ./cmd/...` puts only real plugins beside the
// gateway.
package main

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const clip = "clip"

type fixture struct {
	*sim.Vendor
	mu       sync.Mutex
	settings map[string]string
}

func (f *fixture) setting(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.settings[name]
}

// Configure keeps the fixture's own settings and hands sim the channels.
func (f *fixture) Configure(ctx context.Context, cfg vendor.Config) error {
	f.mu.Lock()
	f.settings = cfg.Settings
	f.mu.Unlock()
	cfg.Settings = nil
	return f.Vendor.Configure(ctx, cfg)
}

func (f *fixture) clipSpec() vendor.FamilySpec {
	s := video.Joined(clip, "per_call")
	if f.setting("conflict") == "1" {
		s.Routes[0].Async = vendor.AsyncField
	}
	return s
}

func (f *fixture) Describe(ctx context.Context) (vendor.Description, error) {
	d, err := f.Vendor.Describe(ctx)
	d.Name = "testfamily"
	// The fixture's clip family replaces the sim's.
	d.Specs = slices.DeleteFunc(d.Specs, func(s vendor.FamilySpec) bool { return s.Name == clip })
	d.Specs = append(d.Specs, f.clipSpec())
	if !slices.Contains(d.Families, clip) {
		d.Families = append(d.Families, clip)
	}
	return d, err
}

func (f *fixture) Validate(ctx context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	if req.Family != clip {
		return f.Vendor.Validate(ctx, req)
	}
	r, err := video.Parse(req)
	if err != nil {
		return &vendor.JobPlan{Error: err}, nil
	}
	_ = r
	return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}, Record: rules.TaskRecord(req).Str("kind", clip).Bytes()}, nil
}

func (f *fixture) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family != clip {
		return f.Vendor.Run(ctx, req)
	}
	if _, err := video.Parse(req); err != nil {
		return rules.Refused(err), nil
	}
	file := vendor.ResultFile{Slot: "video_url", ContentType: "video/mp4", Name: req.TaskID + ".mp4"}
	if u := f.setting("result_url"); u != "" {
		file.URL, file.Header = u, map[string]string{"Authorization": "Bearer upstream-secret"}
	} else {
		file.Data = sim.VideoMP4(1, 1)
	}
	return &vendor.JobOutcome{State: vendor.JobSucceeded, Status: http.StatusOK, ExpiresSlot: "expires_at",
		Body:  rules.TaskRecord(req).Str("kind", clip).Str("video_url", "").Raw("expires_at", "null").Bytes(),
		Files: []vendor.ResultFile{file}, Units: []vendor.Units{{Count: 1}}}, nil
}

func (f *fixture) Submit(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family == clip {
		return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "clip runs at once"}
	}
	return f.Vendor.Submit(ctx, req)
}

func main() {
	vendor.Serve(&fixture{Vendor: sim.New(hclog.NewNullLogger())})
}
