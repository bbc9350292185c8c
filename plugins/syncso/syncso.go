// Package syncso is the vendor plugin for a sync.so-style lip-sync API
// (https://api.sync.so): the lipsync family (dh-lipsync, dh-lipsync-pro,
// dh-lipsync-max, each mapped to one of the upstream's models by the
// channel's models list, "dh-lipsync=lipsync-2") as an upstream job:
//
//   - POST /v2/generate with the x-api-key header and {model, input:
//     [{type: "video", url}, {type: "audio", url}], options}, answered
//     201 with the generation {id, createdAt, status: "PENDING", ...};
//   - GET /v2/generate/{id} until its status is final: COMPLETED with
//     outputUrl and outputDuration (seconds), FAILED or REJECTED with
//     error, CANCELED, TIMED_OUT.
//
// The rules are the family's (plugins/family/lipsync): the plugin only
// speaks the wire. The finished video is re-hosted by the gateway (its
// outputUrl is fetched without the API key: it is a signed link on
// another host), and outputDuration settles, rounded up, never above the
// hold.
package syncso

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/lipsync"
	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Name is the plugin's name (vendor = "syncso").
const Name = "syncso"

// Channel settings.
const (
	// SettingSyncMode is the options.sync_mode sent with every
	// generation (loop, bounce, cut_off, silence, remap); unset, the
	// upstream's default.
	SettingSyncMode = "sync_mode"
	// SettingPollAfter is how long to wait between polls (a duration;
	// default 5s, the upstream's guidance).
	SettingPollAfter = "poll_after"
)

// Vendor is the syncso vendor: no chat, the lipsync family through
// vendor.Jobs.
type Vendor struct {
	*httpvendor.Vendor
}

// New returns the vendor with no channels yet.
func New() *Vendor {
	return &Vendor{httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{
			Name: Name, Families: []string{lipsync.Family}, Version: httpvendor.Version,
			Specs: []vendor.FamilySpec{lipsync.Spec()},
		},
		Prepare: prepare,
	})}
}

// route is a channel: the key in x-api-key, and its settings.
type route struct {
	*httpvendor.JobRoute
	syncMode string
	poll     time.Duration
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	jr, err := httpvendor.JobChannel(ch, httpvendor.Auth{Name: "X-Api-Key"}, false, SettingSyncMode, SettingPollAfter)
	if err != nil {
		return nil, err
	}
	poll, err := httpvendor.DurationSetting(ch, SettingPollAfter, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &route{JobRoute: jr, syncMode: ch.Settings[SettingSyncMode], poll: poll}, nil
}

// Validate is the family's rules; every lip sync is an upstream job.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	if req.Family != lipsync.Family {
		return nil, vendor.ErrNoJobs
	}
	_, plan := lipsync.Plan(req, v.AllowPrivateURLs())
	if plan.Error == nil {
		plan.UpstreamJob = true
	}
	return plan, nil
}

// generation is the upstream's job as its API answers it.
type generation struct {
	ID             string   `json:"id"`
	Status         string   `json:"status"`
	OutputURL      *string  `json:"outputUrl"`
	OutputMediaURL *string  `json:"outputMediaUrl"`
	OutputDuration *float64 `json:"outputDuration"`
	Error          *string  `json:"error"`
	ErrorCode      *string  `json:"error_code"`
}

// Submit creates the generation: POST /v2/generate.
func (v *Vendor) Submit(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, bad := lipsync.Parse(req, v.AllowPrivateURLs())
	if bad != nil {
		return rules.Refused(bad), nil
	}
	rt, err := v.route(req.Channel)
	if err != nil {
		return nil, err
	}
	body := map[string]any{
		"model": req.Model.Upstream,
		"input": []map[string]string{{"type": "video", "url": r.SourceVideoURL}, {"type": "audio", "url": r.AudioURL}},
	}
	opts := map[string]any{}
	if rt.syncMode != "" {
		opts["sync_mode"] = rt.syncMode
	}
	for _, f := range r.Extra {
		if f.Name == "options" && gjson.Valid(f.Raw) && gjson.Parse(f.Raw).IsObject() {
			// The client's own options for the upstream pass through.
			_ = json.Unmarshal([]byte(f.Raw), &opts)
		}
	}
	if len(opts) > 0 {
		body["options"] = opts
	}
	b, _ := json.Marshal(body) // plain values always marshal
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: "/v2/generate", ContentType: "application/json",
		Body: b, Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return refusal(resp.Status, resp.Body), nil
	}
	var g generation
	if err := json.Unmarshal(resp.Body, &g); err != nil || g.ID == "" {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "syncso: the generation answer carries no id"}
	}
	return v.outcome(req, r, rt, &g), nil
}

// Poll reads the generation: GET /v2/generate/{id}.
func (v *Vendor) Poll(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, bad := lipsync.Parse(req, true) // checked at its submit
	if bad != nil {
		return rules.Refused(bad), nil
	}
	rt, err := v.route(req.Channel)
	if err != nil {
		return nil, err
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Method: http.MethodGet, Channel: req.Channel,
		Path: "/v2/generate/" + url.PathEscape(req.UpstreamRef), Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return httpvendor.PollRefusal(resp)
	}
	var g generation
	if err := json.Unmarshal(resp.Body, &g); err != nil {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "syncso: the generation answer is not JSON"}
	}
	if g.ID == "" {
		g.ID = req.UpstreamRef
	}
	return v.outcome(req, r, rt, &g), nil
}

// refusal is a non-2xx answer as the job's failure: its status and the
// message of its NestJS body ({statusCode, message, error}; a validation
// refusal's message is a list), else the usual places.
func refusal(status int, body []byte) *vendor.JobOutcome {
	var parts []string
	switch m := gjson.GetBytes(body, "message"); {
	case m.Type == gjson.String && m.Str != "":
		parts = []string{m.Str}
	case m.IsArray():
		for _, it := range m.Array() {
			if it.Type == gjson.String {
				parts = append(parts, it.Str)
			}
		}
	}
	if len(parts) == 0 {
		return rules.Failed(status, body)
	}
	msg := strings.Join(parts, "; ")
	return &vendor.JobOutcome{State: vendor.JobFailed, Status: status, Error: &vendor.JobError{Status: status, Message: msg}}
}

// outcome maps a generation's status: running, the finished video, or the
// upstream's failure (FAILED is the upstream's 502, REJECTED its 400,
// TIMED_OUT its 504; CANCELED is cancelled).
func (v *Vendor) outcome(req *vendor.JobRequest, r *lipsync.Request, rt *route, g *generation) *vendor.JobOutcome {
	msg := func(def string) string {
		if g.Error != nil && *g.Error != "" {
			if g.ErrorCode != nil && *g.ErrorCode != "" {
				return *g.Error + " (" + *g.ErrorCode + ")"
			}
			return *g.Error
		}
		return def
	}
	failed := func(status int, def string) *vendor.JobOutcome {
		return &vendor.JobOutcome{State: vendor.JobFailed, Status: status, Error: &vendor.JobError{Status: status, Message: msg(def)}}
	}
	switch g.Status {
	case "PENDING", "PROCESSING", "":
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: g.ID, PollAfter: rt.poll}
	case "COMPLETED":
		link := g.OutputMediaURL
		if link == nil || *link == "" {
			link = g.OutputURL
		}
		if link == nil || *link == "" {
			return failed(http.StatusBadGateway, "the generation completed without an output link")
		}
		secs := float64(r.Duration)
		if g.OutputDuration != nil {
			secs = *g.OutputDuration
		}
		return lipsync.Made(req, r, video.Result{URL: *link, ContentType: "video/mp4", Seconds: secs})
	case "REJECTED":
		return failed(http.StatusBadRequest, "the upstream rejected the generation")
	case "TIMED_OUT":
		return failed(http.StatusGatewayTimeout, "the generation timed out upstream")
	case "CANCELED", "CANCELLED":
		out := failed(http.StatusConflict, "the upstream cancelled the generation")
		out.State = vendor.JobCancelled
		return out
	}
	return failed(http.StatusBadGateway, fmt.Sprintf("the generation failed upstream (%s)", g.Status))
}

// Run makes a lip sync synchronously: a submit, then polls until it ends
// or the call's timeout passes.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	rt, err := v.route(req.Channel)
	if err != nil {
		return nil, err
	}
	return httpvendor.RunJob(ctx, v, req, rt.poll)
}

// Cancel has nothing to call: the API offers no cancel of a generation.
func (v *Vendor) Cancel(context.Context, *vendor.JobRequest) error { return nil }

// route is a channel's route, or FailureConfig.
func (v *Vendor) route(channel string) (*route, error) {
	r, ok := v.Route(channel)
	if !ok {
		return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "syncso: channel " + channel + " is not configured"}
	}
	return r.(*route), nil
}

var _ vendor.Jobs = (*Vendor)(nil)
