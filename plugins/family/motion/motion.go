// Package motion holds the motion-transfer family's rules (dh-motion on
// the shared video route), once for every plugin that serves it:
// source_video_url (a public direct link), content (1 to 7 portraits,
// {type: image_url, image_url: {url}}), face_count (1 to 7, equal to the
// portraits; the count by default), resolution (fast, standard by
// default, or max: the price tier held when the model prices by
// resolution, per_second_by_resolution; a flat per_second bills every
// tier), duration (required: the source video's length, the seconds
// held). Settled on the upstream's seconds, rounded up, never above the
// hold. motiontest is the suite every motion plugin passes.
package motion

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "motion"

// Limits and tiers.
const (
	MaxPortraits = 7
	Fast         = "fast"
	Standard     = "standard"
	Max          = "max"
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	s := video.Joined(Family, "per_second")
	s.Refusals = rules.Rule9
	s.Examples = []vendor.Example{{Method: http.MethodPost, Path: video.Path,
		Body: `"source_video_url": "https://example.com/v/dance.mp4", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/p/ada.jpg"}}], "face_count": 1, "resolution": "fast", "duration": 1`,
		Note: "   # motion transfer; then " + video.Poll}}
	return s
}

// Request is a motion transfer as the rules read it.
type Request struct {
	SourceVideoURL string
	Portraits      []string
	FaceCount      int
	Resolution     string
	Duration       int
	Extra          []video.Field
}

// Parse reads and validates a motion transfer; allowPrivate is the
// private-address policy's switch.
func Parse(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobError) {
	r := &Request{Resolution: Standard}
	faces := -1
	duration, extra, bad := video.Walk(req.Body, func(name string, v gjson.Result) (bool, *vendor.JobError) {
		switch name {
		case "source_video_url":
			u, bad := rules.LinkField(name, v, allowPrivate)
			r.SourceVideoURL = u
			return true, bad
		case "content":
			return true, r.portraits(v, allowPrivate)
		case "face_count":
			n, ok := rules.WholeNumber(v)
			if !ok || n < 1 || n > MaxPortraits {
				return true, rules.Invalid("face_count must be a whole number from 1 to " + strconv.Itoa(MaxPortraits) + "; got " + v.Raw + ".")
			}
			faces = n
		case "resolution":
			if v.Type != gjson.String || v.Str != Fast && v.Str != Standard && v.Str != Max {
				return true, rules.Invalid("resolution must be fast, standard (the default) or max; got " + v.Raw + ".")
			}
			r.Resolution = v.Str
		default:
			return false, nil
		}
		return true, nil
	})
	if bad != nil {
		return nil, bad
	}
	r.Extra = extra
	n := len(r.Portraits)
	switch {
	case r.SourceVideoURL == "":
		return nil, rules.Invalid("source_video_url is required: a public direct link to the video whose motion is transferred.")
	case n == 0:
		return nil, rules.Invalid("content is required: 1 to 7 portraits, {\"type\":\"image_url\",\"image_url\":{\"url\":...}}.")
	case n > MaxPortraits:
		return nil, rules.Invalid("content has " + strconv.Itoa(n) + " portraits; at most " + strconv.Itoa(MaxPortraits) + ".")
	case faces >= 0 && faces != n:
		return nil, rules.Invalid("face_count is " + strconv.Itoa(faces) + " but content has " + strconv.Itoa(n) + " portraits; they must be equal.")
	}
	r.FaceCount = n
	d, bad := video.Seconds(duration, req.Model)
	if bad != nil {
		return nil, bad
	}
	r.Duration = d
	return r, nil
}

// portraits reads content: portraits, {type: image_url, image_url: {url}}.
func (r *Request) portraits(v gjson.Result, allowPrivate bool) *vendor.JobError {
	if !v.IsArray() {
		return rules.Invalid("content must be an array of 1 to 7 portraits, {\"type\":\"image_url\",\"image_url\":{\"url\":...}}.")
	}
	for i, it := range v.Array() {
		at := "content[" + strconv.Itoa(i) + "]"
		u := it.Get("image_url.url")
		if !u.Exists() {
			u = it.Get("image_url")
		}
		if it.Get("type").Str != "image_url" || u.Type != gjson.String {
			return rules.Invalid(at + " must be {\"type\":\"image_url\",\"image_url\":{\"url\":...}}: a portrait.")
		}
		if bad := rules.PublicURL(at+".image_url.url", u.Str, allowPrivate); bad != nil {
			return bad
		}
		r.Portraits = append(r.Portraits, u.Str)
	}
	return nil
}

// Plan validates a request and holds its seconds at its resolution's
// tier (the gateway prices it: a tier the model's table lacks is 400, a
// flat per_second bills every tier).
func Plan(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, rules.WithPolicy(Parse, allowPrivate), func(r *Request) *vendor.JobPlan {
		return rules.HoldRecord(req, r.Resolution, int64(r.Duration))
	})
}

// Made is the outcome of a finished motion transfer: the video record
// with its resolution, the upstream's seconds settling at its tier,
// rounded up, never above the hold.
func Made(req *vendor.JobRequest, r *Request, res video.Result) *vendor.JobOutcome {
	return video.Succeeded(req, &video.Request{Duration: r.Duration, Resolution: r.Resolution, Tier: r.Resolution}, res)
}
