// Package lipsync holds the lip-sync family's rules (dh-lipsync,
// dh-lipsync-pro, dh-lipsync-max on the shared video route), once for
// every plugin that serves them: source_video_url and audio_url (public
// direct links) and duration (required, the seconds held; the video's
// length follows the audio), settled on the seconds the upstream reports,
// rounded up, never above the hold. Each model is priced on its own
// (per_second). It speaks no vendor's wire; lipsynctest is the suite
// every lip-sync plugin passes.
package lipsync

import (
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "lipsync"

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	s := video.Joined(Family, "per_second")
	s.Refusals = rules.Rule9
	s.Examples = []vendor.Example{{Method: http.MethodPost, Path: video.Path,
		Body: `"source_video_url": "https://example.com/v/talk.mp4", "audio_url": "https://example.com/a/hello.wav", "duration": 1`,
		Note: "   # lip sync; then " + video.Poll}}
	return s
}

// Request is a lip sync as the rules read it.
type Request struct {
	SourceVideoURL string
	AudioURL       string
	Duration       int
	Extra          []video.Field
}

// Parse reads and validates a lip sync; allowPrivate is the
// private-address policy's switch.
func Parse(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobError) {
	r := &Request{}
	duration, extra, bad := video.Walk(req.Body, func(name string, v gjson.Result) (bool, *vendor.JobError) {
		if name != "source_video_url" && name != "audio_url" {
			return false, nil
		}
		u, bad := rules.LinkField(name, v, allowPrivate)
		if name == "audio_url" {
			r.AudioURL = u
		} else {
			r.SourceVideoURL = u
		}
		return true, bad
	})
	if bad != nil {
		return nil, bad
	}
	r.Extra = extra
	switch {
	case r.SourceVideoURL == "":
		return nil, rules.Invalid("source_video_url is required: a public direct link to the video whose lips move.")
	case r.AudioURL == "":
		return nil, rules.Invalid("audio_url is required: a public direct link to the speech the lips follow.")
	}
	d, bad := video.Seconds(duration, req.Model)
	if bad != nil {
		return nil, bad
	}
	r.Duration = d
	return r, nil
}

// Plan validates a request and holds its seconds.
func Plan(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, rules.WithPolicy(Parse, allowPrivate), func(r *Request) *vendor.JobPlan {
		return rules.HoldRecord(req, "", int64(r.Duration))
	})
}

// Made is the outcome of a finished lip sync: the video record, the
// upstream's seconds settling, rounded up, never above the hold.
func Made(req *vendor.JobRequest, r *Request, res video.Result) *vendor.JobOutcome {
	return video.Succeeded(req, &video.Request{Duration: r.Duration}, res)
}
