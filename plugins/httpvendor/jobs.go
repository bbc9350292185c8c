package httpvendor

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// What the vendors of endpoint families share beyond one call: a channel
// that serves families only (its base URL and the header its key goes
// in), a link with the channel's credentials for the gateway to fetch a
// result from, how a poll's error status is read, and a job run as one
// synchronous call.

// Auth is where a channel's key goes: the header Name, its value Prefix
// + key ("Authorization", "Bearer "; "Xi-Api-Key", "").
type Auth struct {
	Name, Prefix string
}

// Bearer is the Authorization: Bearer KEY header.
var Bearer = Auth{Name: "Authorization", Prefix: "Bearer "}

// JobRoute is a channel of a vendor that serves endpoint families only:
// every call goes to Base + path with Header (the key) added.
type JobRoute struct {
	Base   string
	Header http.Header
}

// errNoChat is the refusal of a chat call on a families-only channel.
var errNoChat = errors.New("this vendor serves no chat protocol")

// Build refuses chat: the channel serves endpoint families only.
func (r *JobRoute) Build(*vendor.ChatRequest, http.Header) (string, error) { return "", errNoChat }

// BuildPath is the URL of path on the channel, with its headers.
func (r *JobRoute) BuildPath(path string, h http.Header) (string, error) {
	for k, v := range r.Header {
		h[k] = v
	}
	return r.Base + path, nil
}

// JobChannel checks a families-only channel (its settings among known, a
// base URL, a key, no chat protocols) and returns its route with the key
// in auth's header. refuseV1 as BaseURL takes it.
func JobChannel(ch vendor.Channel, auth Auth, refuseV1 bool, known ...string) (*JobRoute, error) {
	if err := CheckSettings(ch, known...); err != nil {
		return nil, err
	}
	if len(ch.Protocols) > 0 {
		return nil, vendor.ChannelError(ch.Name, "protocols", "this vendor serves endpoint families only (no chat protocol); drop protocols and name the families")
	}
	base, err := BaseURL(ch, refuseV1)
	if err != nil {
		return nil, err
	}
	key, err := APIKey(ch, true)
	if err != nil {
		return nil, err
	}
	return &JobRoute{Base: base, Header: http.Header{auth.Name: {auth.Prefix + key}}}, nil
}

// DurationSetting reads a channel setting holding a Go duration ("10s"),
// def when it is absent.
func DurationSetting(ch vendor.Channel, name string, def time.Duration) (time.Duration, error) {
	s, ok := ch.Settings[name]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d <= 0 {
		return 0, vendor.ChannelError(ch.Name, "settings", "%s = %q: want a positive duration such as \"10s\"", name, s)
	}
	return d, nil
}

// Link is the URL of path on a channel and the headers a call there
// carries (its key): a result the gateway fetches itself (a
// vendor.ResultFile with URL and Header), so the bytes never pass through
// the plugin.
func (v *Vendor) Link(channel, path string) (string, map[string]string, error) {
	r, ok := (*v.routes.Load())[channel]
	if !ok {
		return "", nil, configFailure("unknown channel %q", channel)
	}
	pr, ok := r.(PathRoute)
	if !ok {
		return "", nil, configFailure("channel %q serves chat only", channel)
	}
	h := make(http.Header, 4)
	u, err := pr.BuildPath(path, h)
	if err != nil {
		return "", nil, configFailure("channel %q: %v", channel, err)
	}
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return u, out, nil
}

// PollRefusal reads a poll answered with an error status. A 4xx other than
// 408, 409, 425 and 429 says the job is gone or refused: its failure. Any
// other status (a 5xx, a rate limit) says nothing of the job: a
// *vendor.Failure, so the gateway asks again later rather than end a job
// that may still run (and be paid for) upstream.
func PollRefusal(resp *vendor.ChatResponse) (*vendor.JobOutcome, error) {
	switch s := resp.Status; {
	case s >= 400 && s < 500 && s != 408 && s != 409 && s != 425 && s != 429:
		return rules.Failed(s, resp.Body), nil
	default:
		return nil, &vendor.Failure{Kind: vendor.FailureBroken,
			Message: "the upstream answered a poll with HTTP " + strconv.Itoa(s) + ": " + rules.UpstreamMessage(s, resp.Body)}
	}
}

// RunJob runs an upstream job as one synchronous call: Submit, then Poll
// (waiting what each answer asks, else pollEvery) until it ends, within
// req.Timeout and ctx. A job that outlives them is cancelled upstream,
// best effort, and the call is a FailureTimeout.
func RunJob(ctx context.Context, j vendor.Jobs, req *vendor.JobRequest, pollEvery time.Duration) (*vendor.JobOutcome, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Timeout, errTotal)
		defer cancel()
	}
	out, err := j.Submit(ctx, req)
	if err != nil || out.State != vendor.JobRunning {
		return out, err
	}
	p := *req
	for out.State == vendor.JobRunning {
		p.UpstreamRef = out.UpstreamRef
		wait := out.PollAfter
		if wait <= 0 {
			wait = pollEvery
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = j.Cancel(cctx, &p)
			cancel()
			return nil, classify(ctx, ctx.Err(), &vendor.ChatRequest{Timeout: req.Timeout})
		case <-t.C:
		}
		if out, err = j.Poll(ctx, &p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Route is a configured channel's route (the vendor's own type).
func (v *Vendor) Route(channel string) (Route, bool) {
	r, ok := (*v.routes.Load())[channel]
	return r, ok
}

// Audio reads a speech call's answer: a 2xx answer's audio and the
// content type it is passed on with (the upstream's, or "" for the
// format's own when it names none or only bytes); the upstream's refusal
// for another status; a FailureBroken for a 2xx answer that is no audio
// (JSON, HTML, nothing).
func Audio(resp *vendor.ChatResponse) ([]byte, string, *vendor.JobOutcome, error) {
	if !ok2xx(resp.Status) {
		return nil, "", rules.Failed(resp.Status, resp.Body), nil
	}
	ct, ok := audioType(resp.Headers["content-type"])
	if !ok || len(resp.Body) == 0 {
		return nil, "", nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "the speech answer is not audio (" + resp.Headers["content-type"] + ")"}
	}
	return resp.Body, ct, nil, nil
}

func audioType(ct string) (string, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case ct == "" || err != nil || mt == "application/octet-stream" || mt == "binary/octet-stream":
		return "", true
	case strings.HasPrefix(mt, "audio/"):
		return ct, true
	}
	return "", false
}

// Known is nil for a configured channel, else the FailureConfig of an
// unknown one: a call checks it before work that needs no upstream (a
// fetched reference) is done for nothing.
func (v *Vendor) Known(channel string) error {
	if _, ok := v.Route(channel); !ok {
		return configFailure("unknown channel %q", channel)
	}
	return nil
}

// Synchronous is embedded by a vendor whose families all answer at once
// (Validate never plans an upstream job): Submit, Poll and Cancel answer
// a FailureConfig.
type Synchronous struct{}

var errSynchronous = &vendor.Failure{Kind: vendor.FailureConfig, Message: "the vendor's families run synchronously; there is no upstream job"}

// Submit is not offered.
func (Synchronous) Submit(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, errSynchronous
}

// Poll is not offered.
func (Synchronous) Poll(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, errSynchronous
}

// Cancel is not offered.
func (Synchronous) Cancel(context.Context, *vendor.JobRequest) error { return errSynchronous }
