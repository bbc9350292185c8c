// Package speech holds the speech family's rules: POST /v1/audio/speech
// like OpenAI's (input, voice, response_format, speed, instructions),
// answered with the audio's bytes and their content type, or with async:
// true a task (pending, succeeded, failed) whose poll adds audio_url; one
// unit per character (Unicode code point) of input. A voice the gateway
// cloned (a voc_ id) is resolved by the gateway and reaches the plugin as
// a reference to the upstream's own voice id. speechtest is the suite
// every speech plugin passes.
package speech

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
const Family = "speech"

// OpSpeech is the create route's operation.
const OpSpeech = "speech"

// MaxInput is the longest input, in characters (OpenAI's limit).
const MaxInput = 4096

// VoicePrefix marks the gateway's cloned voices (the voice family's ids).
const VoicePrefix = "voc_"

// Formats are the response formats and their content types.
var Formats = map[string]string{
	"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm",
}

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "audio", PriceUnit: "per_character", TaskPrefix: "tts_",
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: "/v1/audio/speech", Kind: vendor.RouteCreate, Operation: OpSpeech,
				MaxBody: 1 << 20, Async: vendor.AsyncField, Refs: []vendor.RefField{{Field: "voice", Prefix: VoicePrefix}}},
			{Method: http.MethodGet, Path: "/v1/audio/speech/{id}", Kind: vendor.RoutePoll},
			{Method: http.MethodGet, Path: "/v1/audio/speech", Kind: vendor.RouteList},
		},
		StatusWords:    map[string]string{"queued": "pending", "running": "pending"},
		InFlightStatus: http.StatusOK, ListItem: "poll", ListLimitDefault: 30, ListLimitMax: 100,
		ListStatuses: []string{"pending", "succeeded", "failed"},
		MaxRuntime:   10 * time.Minute, AttemptTimeout: 240 * time.Second, CallTimeout: 280 * time.Second,
		Retention: 24 * time.Hour, ResumeAfterRestart: true,
		Record: true, RecordError: vendor.RecordErrorObject,
		Endpoint: "audio", LogKind: "audio",
		Examples: []vendor.Example{{Method: http.MethodPost, Path: "/v1/audio/speech",
			Body: `"input": "Welcome to the toll road.", "voice": "alloy"`, Note: " -o speech.mp3"}},
	}
}

// Request is a speech request as the rules read it.
type Request struct {
	Input        string
	Voice        string // as sent: a preset, or the gateway's voice id
	Upstream     string // the voice as the upstream knows it
	Format       string
	Speed        float64 // 0: the upstream's default
	Instructions string
	Async        bool
	Extra        []Field
}

// Field is one JSON member: its name and raw value.
type Field struct{ Name, Raw string }

// Parse reads and validates a speech request.
func Parse(req *vendor.JobRequest) (*Request, *vendor.JobError) {
	r := &Request{Format: "mp3"}
	if bad := rules.Fields(req.Body, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "input":
			if v.Type != gjson.String {
				return rules.Invalid("input must be a string: the text to speak.")
			}
			r.Input = v.Str
		case "voice":
			if v.Type != gjson.String || strings.TrimSpace(v.Str) == "" {
				return rules.Invalid("voice must be a string: a preset voice or the id of a cloned one.")
			}
			r.Voice = v.Str
		case "response_format":
			if _, ok := Formats[v.Str]; v.Type != gjson.String || !ok {
				return rules.Invalid("response_format must be one of " + strings.Join(formatNames(), ", ") + "; got " + v.Raw + ".")
			}
			r.Format = v.Str
		case "speed":
			f, ok := rules.Number(v)
			if !ok || f < 0.25 || f > 4 {
				return rules.Invalid("speed must be a number from 0.25 to 4.0; got " + v.Raw + ".")
			}
			r.Speed = f
		case "instructions":
			if v.Type != gjson.String {
				return rules.Invalid("instructions must be a string.")
			}
			r.Instructions = v.Str
		case "async":
			b, ok := rules.Boolean(v)
			if !ok {
				return rules.Invalid("async must be true or false; got " + v.Raw + ".")
			}
			r.Async = b
		case "stream_format":
			if v.Str != "audio" {
				return rules.Invalid("stream_format: only audio is offered (the answer is the audio file).")
			}
		default:
			r.Extra = append(r.Extra, Field{name, v.Raw})
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	switch {
	case strings.TrimSpace(r.Input) == "":
		return nil, rules.Invalid("input is required: the text to speak.")
	case rules.Chars(r.Input) > MaxInput:
		return nil, rules.Invalid("input is longer than " + strconv.Itoa(MaxInput) + " characters (" + strconv.FormatInt(rules.Chars(r.Input), 10) + ").")
	case r.Voice == "":
		return nil, rules.Invalid("voice is required: a preset voice or the id of a cloned one.")
	}
	r.Upstream = r.Voice
	if ref := rules.Ref(req, "voice"); ref != nil && ref.UpstreamRef != "" {
		r.Upstream = ref.UpstreamRef
	}
	return r, nil
}

func formatNames() []string {
	out := make([]string, 0, len(Formats))
	for k := range Formats {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Plan validates a request and holds its characters.
func Plan(req *vendor.JobRequest) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, Parse, func(r *Request) *vendor.JobPlan {
		plan := &vendor.JobPlan{Hold: []vendor.Units{{Count: rules.Chars(r.Input)}}}
		if req.Async || r.Async {
			plan.Record = rules.TaskRecord(req).Bytes()
		}
		return plan
	})
}

// Succeeded is the outcome of spoken audio: synchronously, the bytes with
// their content type (OpenAI's answer); for a task, its record with
// audio_url (the gateway hosts the audio) and expires_at. Every character
// of input settles.
func Succeeded(req *vendor.JobRequest, r *Request, audio []byte, contentType string) *vendor.JobOutcome {
	if contentType == "" {
		contentType = Formats[r.Format]
	}
	out := &vendor.JobOutcome{State: vendor.JobSucceeded, Status: http.StatusOK,
		Units: []vendor.Units{{Count: rules.Chars(r.Input)}}}
	if !req.Async && !r.Async {
		out.Headers = map[string]string{"content-type": contentType}
		out.Body = audio
		return out
	}
	out.Headers = map[string]string{"content-type": "application/json"}
	out.Body = rules.TaskRecord(req).Str("audio_url", "").Raw("expires_at", "null").Str("response_format", r.Format).Bytes()
	out.ExpiresSlot = "expires_at"
	out.Files = []vendor.ResultFile{{Slot: "audio_url", ContentType: contentType, Name: req.TaskID + "." + r.Format, Data: audio}}
	return out
}
