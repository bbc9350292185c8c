package sim

import (
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// simVideo serves the video family as an upstream job: the video lasts
// the seconds asked, or [sim:seconds=N] (the upstream-reported seconds
// that settle).
type simVideo struct{}

func (simVideo) plan(req *vendor.JobRequest) *vendor.JobPlan {
	_, plan := video.Plan(req)
	return plan
}

func (simVideo) upstreamJob() bool { return true }

func (simVideo) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := video.Parse(req) // plan checked it
	secs := float64(r.Duration)
	if k.Seconds >= 0 {
		secs = k.Seconds
	}
	seed := fnv64(fnv64(fnvOffset, req.Model.Upstream), unsafeString(req.Body))
	return video.Succeeded(req, r, video.Result{Data: VideoMP4(int64(secs+0.999), seed), ContentType: "video/mp4", Seconds: secs})
}
