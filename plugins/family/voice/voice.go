// Package voice holds the voice family's rules: POST /v1/audio/voices
// clones a voice synchronously, per call, from {name, audio_url} or a
// multipart form (name and an audio file), and answers {id, name, status:
// "ready", created_at}; the gateway keeps the clone as an ended task of
// the account (the speech and digital-human calls name it by its id, and
// the gateway resolves it), so a failed clone is an error answer, not
// kept and not charged. GET /v1/audio/voices lists the account's voices
// with the platform's presets, DELETE /v1/audio/voices/{id} removes one.
// voicetest is the suite every voice plugin passes.
package voice

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
const Family = "voice"

// Operations: the clone, and the presets a list merges (a JobReader read).
const (
	OpClone   = "clone"
	OpPresets = "presets"
)

// Prefix is the prefix of the gateway's voice ids.
const Prefix = "voc_"

// Limits of a clone.
const (
	MaxName  = 64
	MaxAudio = 32 << 20
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "voice", PriceUnit: "per_call", TaskPrefix: Prefix,
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: "/v1/audio/voices", Kind: vendor.RouteCreate, Operation: OpClone,
				Multipart: true, MaxBody: MaxAudio + 1<<20, Recorded: true},
			{Method: http.MethodGet, Path: "/v1/audio/voices", Kind: vendor.RouteList, Operation: OpPresets},
			{Method: http.MethodDelete, Path: "/v1/audio/voices/{id}", Kind: vendor.RouteDelete},
		},
		StatusWords:    map[string]string{"queued": "pending", "running": "pending", "succeeded": "ready"},
		InFlightStatus: http.StatusOK, ListItem: "poll", ListLimitDefault: 30, ListLimitMax: 100,
		ListStatuses:   []string{"ready"},
		AttemptTimeout: 120 * time.Second, CallTimeout: 180 * time.Second, MaxRuntime: 180 * time.Second,
		ModelOptional: true, Record: true, RecordError: vendor.RecordErrorMessage,
		Endpoint: "audio",
		Examples: []vendor.Example{{Method: http.MethodPost, Path: "/v1/audio/voices",
			Body: `"name": "Ada", "audio_url": "https://example.com/ada.wav"`}},
	}
}

// Request is a clone: the voice's name, a description, and its sample (a
// link, or an uploaded file).
type Request struct {
	Name        string
	Description string
	AudioURL    string
	File        *vendor.JobFile
}

// Parse reads and validates a clone.
func Parse(req *vendor.JobRequest) (*Request, *vendor.JobError) {
	raw := req.Body
	if len(raw) == 0 && len(req.Files) > 0 {
		raw = []byte("{}")
	}
	r := &Request{}
	if bad := rules.Fields(raw, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "name":
			if v.Type != gjson.String {
				return rules.Invalid("name must be a string.")
			}
			r.Name = strings.TrimSpace(v.Str)
		case "description":
			if v.Type != gjson.String {
				return rules.Invalid("description must be a string.")
			}
			r.Description = v.Str
		case "audio_url", "url":
			if v.Type != gjson.String || !rules.HTTPURL(v.Str) {
				return rules.Invalid("audio_url must be a public http(s) link to the voice sample.")
			}
			r.AudioURL = v.Str
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	for i := range req.Files {
		f := &req.Files[i]
		switch f.Field {
		case "file", "audio", "files", "files[]":
			if r.File != nil {
				return nil, rules.Invalid("one voice sample per clone.")
			}
			if f.Len() == 0 {
				return nil, rules.Invalid("the sample file " + strconv.Quote(f.Filename) + " is empty.")
			}
			if f.Len() > MaxAudio {
				return nil, rules.Invalid("the sample is larger than " + strconv.Itoa(MaxAudio>>20) + " MB.")
			}
			r.File = f
		default:
			return nil, rules.Invalid("unknown file field " + strconv.Quote(f.Field) + ": the sample goes in file.")
		}
	}
	switch {
	case r.Name == "":
		return nil, rules.Invalid("name is required: what to call the voice.")
	case rules.Chars(r.Name) > MaxName:
		return nil, rules.Invalid("name is longer than " + strconv.Itoa(MaxName) + " characters.")
	case r.AudioURL == "" && r.File == nil:
		return nil, rules.Invalid("a voice sample is required: audio_url (a public http(s) link), or a file in a multipart form.")
	case r.AudioURL != "" && r.File != nil:
		return nil, rules.Invalid("give the sample once: audio_url or a file, not both.")
	}
	return r, nil
}

// Plan validates a clone and holds one call.
func Plan(req *vendor.JobRequest) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, Parse, func(r *Request) *vendor.JobPlan {
		return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}, Record: record(req, r).Bytes()}
	})
}

func record(req *vendor.JobRequest, r *Request) *rules.Record {
	created := req.Submitted
	if created.IsZero() {
		created = time.Now()
	}
	rec := rules.NewRecord().Str("id", req.TaskID).Str("object", "voice").Str("name", r.Name).Str("status", "ready")
	if r.Description != "" {
		rec.Str("description", r.Description)
	}
	return rec.Int("created_at", created.Unix())
}

// Cloned is the outcome of a clone the upstream made: the voice's record,
// the upstream's own voice id as the task's reference (what later calls
// use), one call settled.
func Cloned(req *vendor.JobRequest, r *Request, upstreamVoice string) *vendor.JobOutcome {
	return rules.Kept(record(req, r).Bytes(), upstreamVoice, vendor.Units{Count: 1})
}

// Preset is a platform voice.
type Preset = rules.Preset

// Presets is the answer a list merges: {presets: [{id, name}]}.
func Presets(ps []Preset) *vendor.JobOutcome { return rules.Presets("presets", ps) }
