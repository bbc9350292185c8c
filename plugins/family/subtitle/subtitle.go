// Package subtitle holds the subtitle family's rules: the recognition
// step of social-style editing (POST /v1/videos/clip-subtitles, the model
// clip-subtitle implied), once for every plugin that serves it.
//
// A recognition takes {video_url, async}: synchronously it answers within
// 240 seconds (then 504 upstream_timeout, not charged) with {model,
// asr_id, api_version, segments, sentences}; with async: true it answers
// 202 {id, object: "clip_subtitle", model, status: "running", asr_id,
// api_version} and GET /v1/videos/clip-subtitles/{id} polls it (failed
// after 25 minutes). Segments and sentences are the same subtitle lines
// ({showRange: [startMs, endMs], content}). A video without recognisable
// speech, or longer than 5 minutes by the length the upstream reports, is
// 400 invalid_request and not charged; a success is charged one call.
// Every result, synchronous or not, is kept 24 hours: its asr_id (the
// task's id) is what a clip-compose names, and the gateway resolves it.
// The editing helpers need clip-compose in the key's allowlist;
// recognition needs no entry of its own. subtitletest is the suite every
// subtitle plugin passes.
package subtitle

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "subtitle"

// Names of the family.
const (
	OpRecognize = "recognize"
	Prefix      = "sub_"
	// Model is the model a recognition runs; Gate the model the key must
	// be allowed for every editing helper.
	Model = "clip-subtitle"
	Gate  = "clip-compose"
	// APIVersion is the api_version the editing answers carry.
	APIVersion = "v1"
	// MaxSource is the longest source video, in seconds (5 minutes).
	MaxSource = 300
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "transcript", PriceUnit: "per_call", TaskPrefix: Prefix,
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: "/v1/videos/clip-subtitles", Kind: vendor.RouteCreate, Operation: OpRecognize,
				MaxBody: 1 << 20, Async: vendor.AsyncField, Model: Model, Gate: Gate, Recorded: true, ExpireRecords: true},
			{Method: http.MethodGet, Path: "/v1/videos/clip-subtitles/{id}", Kind: vendor.RoutePoll, Gate: Gate},
		},
		StatusWords:    map[string]string{"queued": "running", "cancelled": "failed"},
		InFlightStatus: http.StatusAccepted,
		MaxRuntime:     25 * time.Minute, AttemptTimeout: 240 * time.Second, CallTimeout: 240 * time.Second,
		Retention: 24 * time.Hour, ResumeAfterRestart: true,
		Record: true, RecordError: vendor.RecordErrorMessage,
		Refusals: rules.Rule9,
	}
}

// Request is a recognition as the rules read it.
type Request struct {
	VideoURL string
	Async    bool
}

// Parse reads and validates a recognition; allowPrivate is the
// private-address policy's switch.
func Parse(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobError) {
	r := &Request{}
	if bad := rules.Fields(req.Body, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "video_url":
			u, bad := rules.LinkField(name, v, allowPrivate)
			if bad != nil {
				return bad
			}
			r.VideoURL = u
		case "async":
			b, ok := rules.Boolean(v)
			if !ok {
				return rules.Invalid("async must be true or false; got " + v.Raw + ".")
			}
			r.Async = b
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	if r.VideoURL == "" {
		return nil, rules.Invalid("video_url is required: a public http(s) direct link to a video of at most 5 minutes with clear speech.")
	}
	return r, nil
}

// Plan validates a recognition and holds one call; its record is what
// an async submit answers.
func Plan(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, rules.WithPolicy(Parse, allowPrivate), func(r *Request) *vendor.JobPlan {
		return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}, Record: record(req, r).Raw("error", "null").Bytes()}
	})
}

// record is the recognition's record: {id, object, model, status,
// asr_id (the task's id: what a compose names), api_version, video_url}.
func record(req *vendor.JobRequest, r *Request) *rules.Record {
	return rules.NewRecord().Str("id", req.TaskID).Str("object", "clip_subtitle").Str("model", req.Model.ID).
		Str("status", "running").Str("asr_id", req.TaskID).Str("api_version", APIVersion).Str("video_url", r.VideoURL)
}

// Line is a subtitle line: showRange [startMs, endMs] and its content.
type Line struct {
	Start, End int64 // milliseconds
	Content    string
}

// Lines renders lines as the spec's array of {showRange, content}.
func Lines(ls []Line) string {
	return rules.List(len(ls), func(i int) *rules.Record {
		return rules.NewRecord().Raw("showRange", "["+strconv.FormatInt(ls[i].Start, 10)+","+strconv.FormatInt(ls[i].End, 10)+"]").
			Str("content", ls[i].Content)
	})
}

// Recognised is the outcome of a recognition the upstream finished: its
// lines as segments and, identical, sentences, and the source's length in
// seconds as the upstream reports it. A source over 5 minutes, or no
// speech, is the client's 400 and nothing is charged; otherwise one call.
func Recognised(req *vendor.JobRequest, r *Request, lines []Line, seconds float64) *vendor.JobOutcome {
	if seconds > MaxSource {
		return rules.Refused(rules.Invalid("the video at video_url is " + strconv.FormatFloat(seconds, 'f', -1, 64) +
			" seconds long; social-style editing takes a source of at most 5 minutes."))
	}
	if len(lines) == 0 {
		return NoSpeech(r.VideoURL)
	}
	ls := Lines(lines)
	body := record(req, r).Float("duration", seconds).Raw("segments", ls).Raw("sentences", ls).Raw("error", "null")
	return rules.Answer(body.Bytes(), vendor.Units{Count: 1})
}

// NoSpeech is the refusal of a video without recognisable speech: the
// client's 400 invalid_request, not charged.
func NoSpeech(link string) *vendor.JobOutcome {
	return rules.Refused(rules.Invalid("no speech was recognised in the video at " + link + "; the source needs clear speech."))
}

// Recognition is an earlier recognition as a compose reads it from its
// record: the link it was made from and its lines.
type Recognition struct {
	VideoURL string
	Lines    []Line
}

// RecognitionOf reads a recognition's record (a resolved asr_id's).
func RecognitionOf(record []byte) (*Recognition, bool) {
	r := gjson.ParseBytes(record)
	if !r.IsObject() || !r.Get("segments").IsArray() {
		return nil, false
	}
	out := &Recognition{VideoURL: r.Get("video_url").Str}
	for _, s := range r.Get("segments").Array() {
		rg := s.Get("showRange").Array()
		var l Line
		if len(rg) == 2 {
			l.Start, l.End = rg[0].Int(), rg[1].Int()
		}
		l.Content = s.Get("content").Str
		out.Lines = append(out.Lines, l)
	}
	return out, true
}
