// Package video holds the video family's rules, the spec's video part
// (POST /v1/videos/generations, its poll and its list), once for every
// plugin that serves video:
//
//   - Spec: the family's contract (routes, unit, statuses, limits);
//   - Parse and Plan: the request's validation (prompt or content,
//     duration and the model's bounds, the model's resolution rules) and
//     the seconds to hold, at the resolution's tier when the model
//     prices by tier;
//   - Record and Succeeded: the task's record (the video object) as its
//     submit answers it and its poll shows it once done (video_url,
//     expires_at, the seconds delivered), the seconds the upstream
//     reported settling, rounded up and never above the hold.
//
// It speaks no vendor's wire. Package videotest is the suite every video
// plugin passes.
package video

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "video"

// OpGenerations is the create route's operation.
const OpGenerations = "generations"

// Model settings the rules read (the model block's settings; max_duration
// is the model's own attribute).
const (
	SettingMaxDuration = "max_duration" // seconds; the hold of a call without duration
	SettingMinDuration = "min_duration"
	// SettingResolutions lists the resolutions the model accepts
	// ("480p,720p": one tier of models accepts only those).
	SettingResolutions = "resolutions"
	// SettingResolutionWithVideo: "true" when the model needs a
	// resolution with a reference video.
	SettingResolutionWithVideo = "resolution_with_video"
	// SettingDefaultResolution is the tier of a call without resolution
	// on a model priced by tier.
	SettingDefaultResolution = "default_resolution"
	// Capabilities the catalog shows: modes and ratios (comma-separated),
	// max_refs (reference images), audio ("true").
	SettingModes   = "modes"
	SettingRatios  = "ratios"
	SettingMaxRefs = "max_refs"
	SettingAudio   = "audio"
)

// DefaultMaxRefs bounds the reference images of a model that sets none.
const DefaultMaxRefs = 16

// The shared route: video, and the digital-human and editing families
// (avatar, lipsync, motion, clip), submit, poll and list here.
const (
	Path   = "/v1/videos/generations"
	Prefix = "vid_"
	// Poll is how a task of the route is read, as the banner says it.
	Poll = "GET " + Path + "/{id}"
)

// Statuses are the words of the route's tasks, its list filter.
var Statuses = []string{"queued", "running", "succeeded", "failed", "expired", "cancelled"}

// Routes are the shared route's declarations as every family on it makes
// them: the create (always a task, a 32 MB body, ids vid_, rows of unit
// type video) billed at priceUnit, with the body fields refs that name
// earlier tasks; its poll; its list (the route's statuses, 30 a page, at
// most 100). A family on the route declares all three, so that polls and
// lists show its tasks.
func Routes(priceUnit string, refs ...vendor.RefField) []vendor.FamilyRoute {
	return []vendor.FamilyRoute{
		{Method: http.MethodPost, Path: Path, Kind: vendor.RouteCreate, Operation: OpGenerations,
			MaxBody: 32 << 20, Async: vendor.AsyncAlways, UnitType: "video", PriceUnit: priceUnit, TaskPrefix: Prefix, Refs: refs,
			LogKind: "video"},
		{Method: http.MethodGet, Path: Path + "/{id}", Kind: vendor.RoutePoll, TaskPrefix: Prefix},
		{Method: http.MethodGet, Path: Path, Kind: vendor.RouteList, TaskPrefix: Prefix,
			List: &vendor.ListSpec{Statuses: Statuses, LimitDefault: 30, LimitMax: 100}},
	}
}

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "video", PriceUnit: "per_second", TaskPrefix: Prefix,
		Routes:         Routes("per_second"),
		InFlightStatus: http.StatusOK, ListItem: "poll", ListLimitDefault: 30, ListLimitMax: 100,
		ListStatuses: Statuses,
		MaxRuntime:   30 * time.Minute, AttemptTimeout: 60 * time.Second, CallTimeout: 60 * time.Second,
		Retention: 24 * time.Hour, ResumeAfterRestart: true,
		Record: true, RecordError: vendor.RecordErrorObject, ExpireResults: true,
		Caps: []vendor.CapField{
			{Path: "modes", Setting: SettingModes, Kind: vendor.CapList},
			{Path: "ratios", Setting: SettingRatios, Kind: vendor.CapList},
			{Path: "duration.min", Setting: SettingMinDuration, Kind: vendor.CapInt},
			{Path: "duration.max", Setting: SettingMaxDuration, Kind: vendor.CapInt},
			{Path: "refs.images", Setting: SettingMaxRefs, Kind: vendor.CapInt},
			{Path: "audio", Setting: SettingAudio, Kind: vendor.CapBool},
			{Path: "resolutions", Setting: SettingResolutions, Kind: vendor.CapList},
		},
		Endpoint: "videos",
		Examples: []vendor.Example{{Method: http.MethodPost, Path: Path,
			Body: `"prompt": "waves on a pier", "duration": 5`, Note: "   # then " + Poll}},
	}
}

// Joined is the spec a family that joins the route starts from (the
// digital-human and editing families): the route's declarations billed at
// priceUnit with its reference fields, the video family's vocabulary,
// limits and records; no catalog capabilities. The family names itself,
// and may add routes and its own refusal statuses.
func Joined(name, priceUnit string, refs ...vendor.RefField) vendor.FamilySpec {
	s := Spec()
	s.Name, s.PriceUnit, s.Caps, s.Examples = name, priceUnit, nil, nil
	s.Routes = Routes(priceUnit, refs...)
	return s
}

// Part is one item of content: text, or a reference (image, video,
// audio) by URL.
type Part struct {
	Type string // text, image_url, video_url, audio_url
	Text string
	URL  string
}

// Request is a video request as the rules read it; the fields the rules
// do not read are kept in Extra, in body order.
type Request struct {
	Prompt     string
	Content    []Part
	Duration   int // seconds: as asked, or the model's max_duration
	Resolution string
	Tier       string // the price tier held ("" for the flat price)
	Extra      []Field
}

// Field is one JSON member: its name and raw value.
type Field struct{ Name, Raw string }

// Text is everything the request says in words (the prompt and its text
// parts).
func (r *Request) Text() string {
	ts := []string{r.Prompt}
	for _, p := range r.Content {
		if p.Type == "text" {
			ts = append(ts, p.Text)
		}
	}
	return strings.Join(ts, "\n")
}

// References are the request's reference URLs.
func (r *Request) References() []Part {
	var out []Part
	for _, p := range r.Content {
		if p.URL != "" {
			out = append(out, p)
		}
	}
	return out
}

var ruled = map[string]bool{"model": true, "prompt": true, "content": true, "duration": true, "resolution": true}

// Parse reads and validates a video request by the family's rules and the
// model's settings.
func Parse(req *vendor.JobRequest) (*Request, *vendor.JobError) {
	body, bad := rules.Object(req.Body)
	if bad != nil {
		return nil, bad
	}
	r := &Request{}
	body.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if !ruled[name] {
			r.Extra = append(r.Extra, Field{name, v.Raw})
			return true
		}
		bad = r.field(name, v)
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	if strings.TrimSpace(r.Text()) == "" && len(r.References()) == 0 {
		return nil, rules.Invalid("prompt is required: describe the video, or give content with text or a reference.")
	}
	return r, r.checkModel(req.Model)
}

func (r *Request) field(name string, v gjson.Result) *vendor.JobError {
	if v.Type == gjson.Null {
		return nil
	}
	switch name {
	case "model":
		if v.Type != gjson.String {
			return rules.Invalid("model must be a string.")
		}
	case "prompt":
		if v.Type != gjson.String {
			return rules.Invalid("prompt must be a string.")
		}
		r.Prompt = v.Str
	case "duration":
		n, ok := rules.WholeNumber(v)
		if !ok || n < 1 {
			return rules.Invalid("duration must be a whole number of seconds, 1 or more; got " + v.Raw + ".")
		}
		r.Duration = n
	case "resolution":
		if v.Type != gjson.String || strings.TrimSpace(v.Str) == "" {
			return rules.Invalid("resolution must be a string such as 720p; got " + v.Raw + ".")
		}
		r.Resolution = v.Str
	case "content":
		if !v.IsArray() {
			return rules.Invalid("content must be an array of parts such as {\"type\":\"text\",\"text\":...} or {\"type\":\"image_url\",\"image_url\":{\"url\":...}}.")
		}
		for i, it := range v.Array() {
			p, err := part(it)
			if err != "" {
				return rules.Invalid("content[" + strconv.Itoa(i) + "]: " + err)
			}
			r.Content = append(r.Content, p)
		}
	}
	return nil
}

// part reads one content part.
func part(it gjson.Result) (Part, string) {
	if !it.IsObject() {
		return Part{}, "must be an object with a type."
	}
	t := it.Get("type").Str
	switch t {
	case "text":
		if tx := it.Get("text"); tx.Type != gjson.String {
			return Part{}, "a text part needs text (a string)."
		}
		return Part{Type: t, Text: it.Get("text").Str}, ""
	case "image_url", "video_url", "audio_url":
		u := it.Get(t + ".url")
		if !u.Exists() {
			u = it.Get(t) // {type: image_url, image_url: "https://..."}
		}
		if u.Type != gjson.String || !rules.HTTPURL(u.Str) {
			return Part{}, "a " + t + " part needs " + t + ".url, a public http(s) URL."
		}
		return Part{Type: t, URL: u.Str}, ""
	}
	return Part{}, "unknown type " + strconv.Quote(t) + " (want text, image_url, video_url or audio_url)."
}

// checkModel applies the model's rules: duration bounds (the model's
// max_duration holds a call without one), resolutions, a resolution with a
// reference video, the number of references, and the tier to hold.
func (r *Request) checkModel(m vendor.JobModel) *vendor.JobError {
	maxD, hasMax, err := rules.IntSetting(m, SettingMaxDuration)
	if err != nil {
		return err
	}
	minD, hasMin, err := rules.IntSetting(m, SettingMinDuration)
	if err != nil {
		return err
	}
	switch {
	case r.Duration == 0 && !hasMax:
		return rules.Invalid("duration is required for the model '" + m.ID + "': the number of seconds to make.")
	case r.Duration == 0:
		r.Duration = maxD
	case hasMax && r.Duration > maxD:
		return rules.Invalid("duration " + strconv.Itoa(r.Duration) + " is above the model's maximum of " + strconv.Itoa(maxD) + " seconds.")
	case hasMin && r.Duration < minD:
		return rules.Invalid("duration " + strconv.Itoa(r.Duration) + " is below the model's minimum of " + strconv.Itoa(minD) + " seconds.")
	}
	if allowed := rules.ListSetting(m, SettingResolutions); r.Resolution != "" && len(allowed) > 0 && !slices.Contains(allowed, r.Resolution) {
		return rules.Invalid("resolution " + strconv.Quote(r.Resolution) + " is not offered by the model '" + m.ID + "' (it takes " + strings.Join(allowed, ", ") + ").")
	}
	if m.Settings[SettingResolutionWithVideo] == "true" && r.Resolution == "" {
		for _, p := range r.Content {
			if p.Type == "video_url" {
				return rules.Invalid("resolution is required with a reference video for the model '" + m.ID + "'.")
			}
		}
	}
	maxRefs, has, err := rules.IntSetting(m, SettingMaxRefs)
	if err != nil {
		return err
	}
	if !has {
		maxRefs = DefaultMaxRefs
	}
	if n := len(r.References()); n > maxRefs {
		return rules.Invalid("at most " + strconv.Itoa(maxRefs) + " references for the model '" + m.ID + "'; got " + strconv.Itoa(n) + ".")
	}
	if len(m.Tiers) > 0 {
		r.Tier = r.Resolution
		if r.Tier == "" {
			r.Tier = m.Settings[SettingDefaultResolution]
		}
		if r.Tier == "" {
			return rules.Invalid("resolution is required for the model '" + m.ID + "', priced by resolution (" + strings.Join(m.Tiers, ", ") + ").")
		}
	}
	return nil
}

// Walk walks a request body of a family joining the route (rules.Fields):
// fn reads the members it knows and says so; duration is returned raw
// (for Seconds, once the family's own checks passed); every other member
// is kept, in body order, to pass upstream.
func Walk(body []byte, fn func(name string, v gjson.Result) (bool, *vendor.JobError)) (duration gjson.Result, extra []Field, bad *vendor.JobError) {
	bad = rules.Fields(body, func(name string, v gjson.Result) *vendor.JobError {
		if name == "duration" {
			duration = v
			return nil
		}
		known, bad := fn(name, v)
		if !known && bad == nil {
			extra = append(extra, Field{Name: name, Raw: v.Raw})
		}
		return bad
	})
	return duration, extra, bad
}

// Seconds reads a duration the model requires (the digital-human
// models): whole seconds, 1 or more, within the model's max_duration when
// it sets one; field is the body's member, absent when not sent.
func Seconds(field gjson.Result, m vendor.JobModel) (int, *vendor.JobError) {
	if !field.Exists() || field.Type == gjson.Null {
		return 0, rules.Invalid("duration is required for the model '" + m.ID + "': the seconds to hold (the cost is capped at them; the seconds made settle).")
	}
	n, ok := rules.WholeNumber(field)
	if !ok || n < 1 {
		return 0, rules.Invalid("duration must be a whole number of seconds, 1 or more; got " + field.Raw + ".")
	}
	maxD, hasMax, err := rules.IntSetting(m, SettingMaxDuration)
	if err != nil {
		return 0, err
	}
	if hasMax && n > maxD {
		return 0, rules.Invalid("duration " + strconv.Itoa(n) + " is above the model's maximum of " + strconv.Itoa(maxD) + " seconds.")
	}
	return n, nil
}

// Plan validates a request and holds its seconds; its record is what the
// submit answers.
func Plan(req *vendor.JobRequest) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, Parse, func(r *Request) *vendor.JobPlan {
		return &vendor.JobPlan{Hold: []vendor.Units{{Tier: r.Tier, Count: int64(r.Duration)}}, Record: Record(req, r)}
	})
}

// Record is the task's record while it runs: {id, status, model,
// created_at}.
func Record(req *vendor.JobRequest, r *Request) []byte {
	return rules.TaskRecord(req).Bytes()
}

// Result is an upstream's finished video: its bytes, or a link the
// gateway fetches (with the headers it needs), and the seconds it lasts as
// the upstream reports them.
type Result struct {
	Data        []byte
	URL         string
	Header      map[string]string
	ContentType string
	Seconds     float64
}

// ExpiresSlot is where the gateway writes when the hosted video expires.
const ExpiresSlot = "expires_at"

// Succeeded is the outcome of a finished video: the record with video_url
// (the gateway hosts the video and writes its link), expires_at and
// duration, and the seconds that settle: the upstream's, rounded up, never
// above the hold.
func Succeeded(req *vendor.JobRequest, r *Request, res Result) *vendor.JobOutcome {
	secs := rules.SettledSeconds(res.Seconds, int64(r.Duration))
	ct := res.ContentType
	if ct == "" {
		ct = "video/mp4"
	}
	body := rules.TaskRecord(req).Str("video_url", "").Raw("expires_at", "null").Int("duration", secs)
	if r.Resolution != "" {
		body.Str("resolution", r.Resolution)
	}
	return &vendor.JobOutcome{
		State: vendor.JobSucceeded, Status: http.StatusOK, Headers: map[string]string{"content-type": "application/json"},
		Body: body.Bytes(), ExpiresSlot: ExpiresSlot,
		Files: []vendor.ResultFile{{Slot: "video_url", ContentType: ct, Name: req.TaskID + ".mp4", Data: res.Data, URL: res.URL, Header: res.Header}},
		Units: []vendor.Units{{Tier: r.Tier, Count: secs}},
	}
}
