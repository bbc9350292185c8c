package openai

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The video family on OpenAI's videos API (Sora): POST /v1/videos
// (multipart: prompt, model, seconds, size, an input_reference image) makes
// a job, GET /v1/videos/{id} tells where it stands (queued, in_progress,
// completed, failed), GET /v1/videos/{id}/content is the MP4, which the
// gateway fetches itself with the channel's key and hosts. The seconds the
// video object reports settle. The job's reference is OpenAI's video id.

const pathVideos = "/v1/videos"

// planVideo checks a request by the family's rules and what the videos
// API takes: one reference image at most (input_reference), a size it can
// name. Every video is an upstream job.
func planVideo(req *vendor.JobRequest) (*video.Request, *vendor.JobPlan) {
	r, plan := video.Plan(req)
	if plan.Error != nil {
		return nil, plan
	}
	if _, bad := soraSize(r); bad != nil {
		return nil, &vendor.JobPlan{Error: bad}
	}
	if bad := soraReferences(r); bad != nil {
		return nil, &vendor.JobPlan{Error: bad}
	}
	plan.UpstreamJob = true
	return r, plan
}

// consumed are request fields the plugin turns into the videos API's own
// (size) rather than pass on.
var consumed = map[string]bool{"size": true, "ratio": true, "aspect_ratio": true}

// submitVideo creates the job.
func (v *Vendor) submitVideo(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, plan := planVideo(req)
	if plan.Error != nil {
		return rules.Refused(plan.Error), nil
	}
	if err := v.Known(req.Channel); err != nil {
		return nil, err
	}
	size, _ := soraSize(r)
	var f httpvendor.Form
	f.Field("prompt", strings.TrimSpace(r.Text()))
	f.Field("model", req.Model.Upstream)
	f.Field("seconds", strconv.Itoa(r.Duration))
	if size != "" {
		f.Field("size", size)
	}
	for _, x := range r.Extra {
		if !consumed[x.Name] {
			f.JSONField(x.Name, x.Raw)
		}
	}
	if refs := r.References(); len(refs) == 1 {
		data, ct, err := v.Fetch(ctx, refs[0].URL, maxReference)
		var fe *httpvendor.FetchError
		if errors.As(err, &fe) {
			return rules.Refused(rules.Invalid("the reference image (" + refs[0].URL + ") could not be fetched: " + fe.Reason + ".")), nil
		}
		if err != nil {
			return nil, err
		}
		if ct = imageType(ct, data); ct == "" {
			return rules.Refused(rules.Invalid("the reference (" + refs[0].URL + ") is not a PNG, JPEG or WebP image.")), nil
		}
		f.File("input_reference", "reference."+strings.TrimPrefix(ct, "image/"), ct, data)
	}
	body, ct := f.Reader(ctx)
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: pathVideos, ContentType: ct, BodyReader: body,
		Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return rules.Failed(resp.Status, resp.Body), nil
	}
	return v.videoState(req, r, resp.Body)
}

// pollVideo reads the job.
func (v *Vendor) pollVideo(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, bad := video.Parse(req)
	if bad != nil {
		return rules.Refused(bad), nil
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Method: http.MethodGet,
		Path: pathVideos + "/" + url.PathEscape(req.UpstreamRef), Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return httpvendor.PollRefusal(resp)
	}
	return v.videoState(req, r, resp.Body)
}

// cancelVideo deletes the job (the videos API has no cancel).
func (v *Vendor) cancelVideo(ctx context.Context, req *vendor.JobRequest) error {
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Method: http.MethodDelete,
		Path: pathVideos + "/" + url.PathEscape(req.UpstreamRef), Timeout: req.Timeout})
	if err != nil {
		return err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return &vendor.Failure{Kind: vendor.FailureBroken, Message: "openai: deleting the video: " + rules.UpstreamMessage(resp.Status, resp.Body)}
	}
	return nil
}

// videoState maps a video object onto the job's states: queued and
// in_progress run (the record shows the progress), completed succeeds on
// the seconds it reports, failed fails with its error.
func (v *Vendor) videoState(req *vendor.JobRequest, r *video.Request, body []byte) (*vendor.JobOutcome, error) {
	b := gjson.ParseBytes(body)
	id := b.Get("id").Str
	if !b.IsObject() || id == "" {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "openai: the answer is not a video object"}
	}
	switch st := b.Get("status").Str; st {
	case "queued", "in_progress":
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: id, PollAfter: v.pollEvery(req.Channel),
			Body: rules.TaskRecord(req).Int("progress", b.Get("progress").Int()).Bytes()}, nil
	case "completed":
		link, header, err := v.Link(req.Channel, pathVideos+"/"+url.PathEscape(id)+"/content")
		if err != nil {
			return nil, err
		}
		secs, ok := rules.Number(b.Get("seconds"))
		if !ok {
			secs = float64(r.Duration) // a video object always says; what was asked was made
		}
		out := video.Succeeded(req, r, video.Result{URL: link, Header: header, ContentType: "video/mp4", Seconds: secs})
		out.UpstreamRef = id
		return out, nil
	case "failed":
		status := soraFailureStatus(b.Get("error.code").Str)
		msg := b.Get("error.message").Str
		if msg == "" {
			msg = "the video could not be generated"
		}
		return &vendor.JobOutcome{State: vendor.JobFailed, UpstreamRef: id, Status: status,
			Error: &vendor.JobError{Status: status, Message: msg}}, nil
	default:
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "openai: a video in the unknown status " + strconv.Quote(st)}
	}
}

// soraFailureStatus is the status a failed video's error code stands for:
// a refused prompt or input is the client's 400, a rate limit 429, any
// other failure the upstream's (502).
func soraFailureStatus(code string) int {
	switch {
	case strings.Contains(code, "moderation"), strings.Contains(code, "policy"), strings.HasPrefix(code, "invalid"):
		return http.StatusBadRequest
	case code == "rate_limit_exceeded":
		return http.StatusTooManyRequests
	}
	return http.StatusBadGateway
}

var reSize = regexp.MustCompile(`^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$`)

// soraSize is the size the videos API is asked for: the client's size,
// or its resolution (WxH, or 720p or 1080p turned by its ratio, 9:16 by
// default as the API's is), or none (the API's default).
func soraSize(r *video.Request) (string, *vendor.JobError) {
	var ratio string
	for _, x := range r.Extra {
		v := gjson.Parse(x.Raw)
		switch x.Name {
		case "size":
			if v.Type != gjson.String || !reSize.MatchString(v.Str) {
				return "", rules.Invalid("size must be WIDTHxHEIGHT, such as 1280x720.")
			}
			return v.Str, nil
		case "ratio", "aspect_ratio":
			ratio = v.Str
		}
	}
	res := strings.ToLower(r.Resolution)
	if res == "" || reSize.MatchString(res) {
		return res, nil
	}
	var landscape bool
	switch ratio {
	case "", "9:16", "portrait":
	case "16:9", "landscape":
		landscape = true
	default:
		return "", rules.Invalid("ratio " + strconv.Quote(ratio) + " is not offered: this vendor makes 16:9 and 9:16 videos.")
	}
	sizes := map[string][2]string{"720p": {"720x1280", "1280x720"}, "1080p": {"1024x1792", "1792x1024"}, "1024p": {"1024x1792", "1792x1024"}}
	s, ok := sizes[res]
	if !ok {
		return "", rules.Invalid("resolution " + strconv.Quote(r.Resolution) + " is not offered by this vendor (720p, 1080p, or WIDTHxHEIGHT).")
	}
	if landscape {
		return s[1], nil
	}
	return s[0], nil
}

// soraReferences checks the references: the videos API takes one image.
func soraReferences(r *video.Request) *vendor.JobError {
	refs := r.References()
	for _, p := range refs {
		if p.Type != "image_url" {
			return rules.Invalid("a " + p.Type + " reference is not offered by this vendor: it takes one reference image (image_url).")
		}
	}
	if len(refs) > 1 {
		return rules.Invalid("this vendor takes one reference image; got " + strconv.Itoa(len(refs)) + ".")
	}
	return nil
}
