// Package music holds the music family's rules (POST
// /v1/music/generations, its poll and list), the common Suno-style task
// API as PRODUCT.md settles it: one generation is one unit and two songs;
// the task is processing until its poll adds songs: [{id, audio_url,
// title, duration}]. It speaks no vendor's wire; musictest is the suite
// every music plugin passes.
package music

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "music"

// OpGenerations is the create route's operation.
const OpGenerations = "generations"

// SongsPerGeneration is how many songs one generation makes.
const SongsPerGeneration = 2

// Limits of a request's fields.
const (
	MaxPrompt = 3000 // characters: a description, or lyrics
	MaxTitle  = 80
	MaxTags   = 200
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "music", PriceUnit: "per_generation", TaskPrefix: "mus_",
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: "/v1/music/generations", Kind: vendor.RouteCreate, Operation: OpGenerations,
				MaxBody: 1 << 20, Async: vendor.AsyncAlways},
			{Method: http.MethodGet, Path: "/v1/music/generations/{id}", Kind: vendor.RoutePoll},
			{Method: http.MethodGet, Path: "/v1/music/generations", Kind: vendor.RouteList},
		},
		StatusWords:    map[string]string{"queued": "processing", "running": "processing"},
		InFlightStatus: http.StatusOK, ListItem: "poll", ListLimitDefault: 30, ListLimitMax: 100,
		ListStatuses: []string{"processing", "succeeded", "failed", "expired", "cancelled"},
		MaxRuntime:   30 * time.Minute, AttemptTimeout: 60 * time.Second, CallTimeout: 60 * time.Second,
		Retention: 24 * time.Hour, ResumeAfterRestart: true,
		Record: true, RecordError: vendor.RecordErrorObject, ExpireResults: true, LogKind: "music",
		Examples: []vendor.Example{{Method: http.MethodPost, Path: "/v1/music/generations",
			Body: `"prompt": "a sea shanty about toll roads"`, Note: "   # then GET /v1/music/generations/{id}"}},
	}
}

// Request is a music request: a prompt (a description, or lyrics with
// custom mode), an optional title and style tags, instrumental or not.
type Request struct {
	Prompt       string
	Title        string
	Tags         string
	Instrumental bool
	Extra        []Field
}

// Field is one JSON member: its name and raw value.
type Field struct{ Name, Raw string }

// Parse reads and validates a music request.
func Parse(req *vendor.JobRequest) (*Request, *vendor.JobError) {
	r := &Request{}
	if bad := rules.Fields(req.Body, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "prompt", "lyrics":
			if v.Type != gjson.String {
				return rules.Invalid(name + " must be a string.")
			}
			if r.Prompt == "" || name == "lyrics" {
				r.Prompt = v.Str
			}
		case "title":
			if v.Type != gjson.String || rules.Chars(v.Str) > MaxTitle {
				return rules.Invalid("title must be a string of at most " + strconv.Itoa(MaxTitle) + " characters.")
			}
			r.Title = v.Str
		case "tags", "style":
			if v.Type != gjson.String || rules.Chars(v.Str) > MaxTags {
				return rules.Invalid(name + " must be a string of at most " + strconv.Itoa(MaxTags) + " characters.")
			}
			r.Tags = v.Str
		case "instrumental", "make_instrumental":
			b, ok := rules.Boolean(v)
			if !ok {
				return rules.Invalid(name + " must be true or false; got " + v.Raw + ".")
			}
			r.Instrumental = b
		default:
			r.Extra = append(r.Extra, Field{name, v.Raw})
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	switch {
	case strings.TrimSpace(r.Prompt) == "":
		return nil, rules.Invalid("prompt is required: describe the song, or give its lyrics.")
	case rules.Chars(r.Prompt) > MaxPrompt:
		return nil, rules.Invalid("prompt is longer than " + strconv.Itoa(MaxPrompt) + " characters.")
	}
	return r, nil
}

// Plan validates a request and holds one generation.
func Plan(req *vendor.JobRequest) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, Parse, func(r *Request) *vendor.JobPlan {
		return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}, Record: rules.TaskRecord(req).Bytes()}
	})
}

// Song is one song an upstream made: its audio (bytes, or a link the
// gateway fetches), title and length in seconds.
type Song struct {
	Data        []byte
	URL         string
	Header      map[string]string
	ContentType string
	Title       string
	Duration    float64
}

// Succeeded is the outcome of a finished generation: the record with
// songs [{id, audio_url, title, duration}] (the gateway hosts each song
// and writes its link) and expires_at; one generation settles.
func Succeeded(req *vendor.JobRequest, r *Request, songs []Song) *vendor.JobOutcome {
	out := rules.Answer(nil)
	out.ExpiresSlot = "expires_at"
	items := make([]*rules.Record, len(songs))
	for i, s := range songs {
		title := s.Title
		if title == "" {
			title = r.Title
		}
		ct := s.ContentType
		if ct == "" {
			ct = "audio/mpeg"
		}
		id := req.TaskID + "-" + strconv.Itoa(i+1)
		items[i] = rules.NewRecord().Str("id", id).Str("audio_url", "").Str("title", title).Float("duration", s.Duration)
		out.Files = append(out.Files, vendor.ResultFile{Slot: "songs." + strconv.Itoa(i) + ".audio_url", ContentType: ct,
			Name: id + ".mp3", Data: s.Data, URL: s.URL, Header: s.Header})
	}
	songsList := rules.List(len(items), func(i int) *rules.Record { return items[i] })
	out.Body = rules.TaskRecord(req).Raw("songs", songsList).Raw("expires_at", "null").Bytes()
	if len(songs) > 0 {
		out.Units = []vendor.Units{{Count: 1}}
	}
	return out
}
