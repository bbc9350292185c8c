package openai

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The Jobs service: each family's calls go to its file. Images and
// speech are synchronous upstream calls (the gateway runs an async
// request in its background); video is an upstream job.

// Validate checks a request by its family's rules and this vendor's.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	switch req.Family {
	case images.Family:
		return planImages(req), nil
	case speech.Family:
		_, plan := speech.Plan(req)
		return plan, nil
	case video.Family:
		_, plan := planVideo(req)
		return plan, nil
	}
	return &vendor.JobPlan{Error: unknownFamily(req)}, nil
}

// Run makes one synchronous call: an image or speech request, or a
// video job submitted and polled to its end.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	switch req.Family {
	case images.Family:
		return v.runImages(ctx, req)
	case speech.Family:
		return v.runSpeech(ctx, req)
	case video.Family:
		return httpvendor.RunJob(ctx, v, req, v.pollEvery(req.Channel))
	}
	return rules.Refused(unknownFamily(req)), nil
}

// Submit starts a video job; the other families have no upstream jobs.
func (v *Vendor) Submit(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family != video.Family {
		return nil, noJobs
	}
	return v.submitVideo(ctx, req)
}

// Poll asks about a video job.
func (v *Vendor) Poll(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family != video.Family {
		return nil, noJobs
	}
	return v.pollVideo(ctx, req)
}

// Cancel deletes a video job upstream, best effort.
func (v *Vendor) Cancel(ctx context.Context, req *vendor.JobRequest) error {
	if req.Family != video.Family {
		return noJobs
	}
	return v.cancelVideo(ctx, req)
}

// noJobs answers the job calls of a synchronous family.
var noJobs = &vendor.Failure{Kind: vendor.FailureConfig, Message: "openai: images and speech run synchronously; there is no upstream job"}

func unknownFamily(req *vendor.JobRequest) *vendor.JobError {
	return rules.Invalid("the openai plugin does not serve the family " + req.Family + ".")
}

// pollEvery is the channel's poll interval.
func (v *Vendor) pollEvery(channel string) time.Duration {
	if r, ok := v.Route(channel); ok {
		if rt, ok := r.(*route); ok {
			return rt.pollEvery
		}
	}
	return defaultPollInterval
}

var _ vendor.Jobs = (*Vendor)(nil)
