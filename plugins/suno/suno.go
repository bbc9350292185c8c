// Package suno is the vendor plugin for a Suno-style music task API, the
// sunoapi.org shape (kie.ai and others serve the same): the music family
// on POST /api/v1/generate, which answers a task id, and GET
// /api/v1/generate/record-info?taskId=, which tells where the task
// stands and, once it succeeded, lists its two songs. Authorization:
// Bearer. The API answers its errors with HTTP 200 and the error's code in
// the body; the plugin reads both.
package suno

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/music"
	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Channel settings.
const (
	// SettingCallbackURL is the callBackUrl the API requires on every
	// task; the plugin polls, so by default it is an address that
	// receives nothing (example.com is reserved for that).
	SettingCallbackURL = "callback_url"
	// SettingPollInterval is how often a task is polled ("15s").
	SettingPollInterval = "poll_interval"
)

// Defaults of the settings: the API asks for polls at most every 30
// seconds; a song is ready in two to three minutes.
const (
	defaultCallbackURL  = "https://example.com/tollgate/suno-callback"
	defaultPollInterval = 15 * time.Second
)

const (
	pathGenerate = "/api/v1/generate"
	pathRecord   = "/api/v1/generate/record-info"
)

// Vendor is the suno vendor: the music family through vendor.Jobs.
type Vendor struct {
	*httpvendor.Vendor
}

// New returns the suno vendor with no channels yet.
func New() *Vendor {
	return &Vendor{httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "suno", Families: []string{music.Family}, Version: httpvendor.Version,
			Specs: []vendor.FamilySpec{music.Spec()}},
		Prepare: prepare,
	})}
}

type route struct {
	*httpvendor.JobRoute
	callback  string
	pollEvery time.Duration
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	jr, err := httpvendor.JobChannel(ch, httpvendor.Bearer, false, SettingCallbackURL, SettingPollInterval)
	if err != nil {
		return nil, err
	}
	every, err := httpvendor.DurationSetting(ch, SettingPollInterval, defaultPollInterval)
	if err != nil {
		return nil, err
	}
	cb := defaultCallbackURL
	if v, ok := ch.Settings[SettingCallbackURL]; ok {
		if !rules.HTTPURL(v) {
			return nil, vendor.ChannelError(ch.Name, "settings", "%s = %q: want an http(s) URL", SettingCallbackURL, v)
		}
		cb = v
	}
	return &route{JobRoute: jr, callback: cb, pollEvery: every}, nil
}

func (v *Vendor) route(channel string) *route {
	if r, ok := v.Route(channel); ok {
		if rt, ok := r.(*route); ok {
			return rt
		}
	}
	return &route{callback: defaultCallbackURL, pollEvery: defaultPollInterval}
}

// Validate checks a request by the music family's rules; every
// generation is an upstream task.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	_, plan := music.Plan(req)
	plan.UpstreamJob = plan.Error == nil
	return plan, nil
}

// Run makes a generation as one synchronous call.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return httpvendor.RunJob(ctx, v, req, v.route(req.Channel).pollEvery)
}

// ourFields are the API's fields the plugin writes itself; a client's
// own value for one is not passed on.
var ourFields = map[string]bool{"customMode": true, "instrumental": true, "model": true, "callBackUrl": true,
	"prompt": true, "style": true, "title": true}

// Submit creates the task: custom mode when the client gave lyrics or a
// style (the prompt is then the lyrics, sung as written, and a missing
// title is the prompt's first words), else a description the API writes
// its own lyrics from.
func (v *Vendor) Submit(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, plan := music.Plan(req)
	if plan.Error != nil {
		return rules.Refused(plan.Error), nil
	}
	rt := v.route(req.Channel)
	custom := gjson.GetBytes(req.Body, "lyrics").Type == gjson.String || r.Tags != ""
	body := rules.NewRecord().Raw("customMode", strconv.FormatBool(custom)).Raw("instrumental", strconv.FormatBool(r.Instrumental)).
		Str("model", req.Model.Upstream).Str("callBackUrl", rt.callback).Str("prompt", r.Prompt)
	if custom {
		title := r.Title
		if title == "" {
			title = firstWords(r.Prompt, 4, music.MaxTitle)
		}
		body.Str("style", r.Tags).Str("title", title)
	}
	for _, f := range r.Extra {
		if !ourFields[f.Name] {
			body.Raw(f.Name, f.Raw)
		}
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: pathGenerate, ContentType: "application/json",
		Body: body.Bytes(), Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	data, refusal := envelope(resp)
	if refusal != nil {
		return refusal, nil
	}
	id := data.Get("taskId").Str
	if id == "" {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "suno: the answer holds no taskId"}
	}
	return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: id, PollAfter: rt.pollEvery}, nil
}

// Poll reads the task's record and maps its status onto the job's
// states: PENDING, TEXT_SUCCESS and FIRST_SUCCESS run; SUCCESS succeeds
// with its songs (the gateway fetches and hosts each); the failures fail.
func (v *Vendor) Poll(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, bad := music.Parse(req)
	if bad != nil {
		return rules.Refused(bad), nil
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Method: http.MethodGet,
		Path: pathRecord + "?taskId=" + url.QueryEscape(req.UpstreamRef), Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return httpvendor.PollRefusal(resp)
	}
	if code := gjson.GetBytes(resp.Body, "code"); code.Exists() && code.Int() != 200 {
		return httpvendor.PollRefusal(&vendor.ChatResponse{Status: apiStatus(int(code.Int())), Body: resp.Body})
	}
	data := gjson.GetBytes(resp.Body, "data")
	songs := data.Get("response.sunoData").Array()
	switch st := data.Get("status").Str; st {
	case "PENDING", "TEXT_SUCCESS", "FIRST_SUCCESS":
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: req.UpstreamRef, PollAfter: v.route(req.Channel).pollEvery}, nil
	case "SUCCESS", "CALLBACK_EXCEPTION":
		// A failed callback says nothing of the songs: they are there
		// when the record lists them.
		if out := succeeded(req, r, songs); out != nil {
			return out, nil
		}
		if st == "SUCCESS" {
			return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "suno: a task that succeeded lists no song to download"}
		}
		return failed(http.StatusBadGateway, data, "the task ended without songs ("+st+")"), nil
	case "SENSITIVE_WORD_ERROR":
		return failed(http.StatusBadRequest, data, "the prompt was refused by the upstream's content filter"), nil
	case "CREATE_TASK_FAILED", "GENERATE_AUDIO_FAILED":
		status := http.StatusBadGateway
		if c := int(data.Get("errorCode").Int()); c >= 400 && c <= 499 {
			status = c
		}
		return failed(status, data, "the upstream could not make the songs ("+st+")"), nil
	default:
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "suno: a task in the unknown status " + strconv.Quote(st)}
	}
}

// Cancel does nothing: the API cannot stop a task.
func (v *Vendor) Cancel(context.Context, *vendor.JobRequest) error { return nil }

// succeeded is the outcome of a record listing downloadable songs, nil
// when it lists none.
func succeeded(req *vendor.JobRequest, r *music.Request, items []gjson.Result) *vendor.JobOutcome {
	var songs []music.Song
	for _, it := range items {
		u := it.Get("audioUrl").Str
		if u == "" {
			u = it.Get("sourceAudioUrl").Str
		}
		if !rules.HTTPURL(u) {
			continue
		}
		title := it.Get("title").Str
		if r.Title != "" {
			title = r.Title // the client named the song
		}
		songs = append(songs, music.Song{URL: u, ContentType: "audio/mpeg", Title: title, Duration: it.Get("duration").Num})
	}
	if len(songs) == 0 {
		return nil
	}
	return music.Succeeded(req, r, songs)
}

// failed is a task that failed, with the record's message or msg.
func failed(status int, data gjson.Result, msg string) *vendor.JobOutcome {
	if m := data.Get("errorMessage").Str; m != "" {
		msg = m
	}
	return &vendor.JobOutcome{State: vendor.JobFailed, Status: status, Error: &vendor.JobError{Status: status, Message: msg}}
}

// envelope reads an answer's {code, msg, data}: data when code is 200,
// else the refusal (the HTTP status's, or the code's).
func envelope(resp *vendor.ChatResponse) (gjson.Result, *vendor.JobOutcome) {
	if resp.Status < 200 || resp.Status > 299 {
		return gjson.Result{}, rules.Failed(resp.Status, resp.Body)
	}
	b := gjson.ParseBytes(resp.Body)
	if c := b.Get("code"); c.Exists() && c.Int() != 200 {
		return gjson.Result{}, rules.Failed(apiStatus(int(c.Int())), resp.Body)
	}
	return b.Get("data"), nil
}

// apiStatus is the HTTP status an error code of the API stands for: its
// own where it is one, 430 (calls too frequent) a 429, 455 (maintenance)
// a 503, 429 (the operator's credits ran out: no fault of the client's,
// another channel may serve) a 503, and anything else not an error status
// a 502.
func apiStatus(code int) int {
	switch {
	case code == 430:
		return http.StatusTooManyRequests
	case code == 455, code == 429:
		return http.StatusServiceUnavailable
	case code >= 400 && code <= 599:
		return code
	}
	return http.StatusBadGateway
}

// firstWords are the first n words of s, at most max characters.
func firstWords(s string, n, max int) string {
	w := strings.Fields(s)
	t := strings.Join(w[:min(len(w), n)], " ")
	if r := []rune(t); len(r) > max {
		t = string(r[:max])
	}
	return t
}

var _ vendor.Jobs = (*Vendor)(nil)
