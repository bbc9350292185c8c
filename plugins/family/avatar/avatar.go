// Package avatar holds the avatar family's rules, the spec's Avatars and
// the dh-avatar model of its digital-human video, once for every plugin
// that serves them:
//
//   - POST /v1/videos/avatars registers an avatar (a task of its own, ids
//     avt_, the model dh-avatar-create implied, one call billed): {name,
//     source_url, source_kind}; the client sees the spec's Avatar record
//     exactly ({id, name, source_kind, status, error, created_at} with an
//     ISO 8601 created_at), pending until the upstream made it, then ready
//     or failed (refunded in full, its error kept as the evidence);
//   - GET /v1/videos/avatars lists the account's avatars ({object, data},
//     newest first, up to 200), GET .../{id} polls one, DELETE .../{id}
//     removes a ready or failed one (400 while pending), GET .../presets
//     answers the platform's {avatars: [{id, name}]};
//   - dh-avatar on the shared video route: an avatar (an avt_ id, resolved
//     by the gateway, or a preset), duration (required, the seconds held),
//     and either audio_url or voice (a voc_ id or a preset) with text.
//
// It speaks no vendor's wire. avatartest is the suite every avatar plugin
// passes.
package avatar

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "avatar"

// Operations: a registration, the presets read, and a video.
const (
	OpRegister    = "register"
	OpPresets     = "presets"
	OpGenerations = video.OpGenerations
)

// Ids and models.
const (
	Prefix      = "avt_" // the gateway's avatar ids
	VoicePrefix = "voc_" // the gateway's cloned voices
	// ModelCreate is the model a registration runs (the body names none).
	ModelCreate = "dh-avatar-create"
	MaxName     = 20
)

// Source kinds.
const (
	KindImage = "image"
	KindVideo = "video"
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	s := video.Joined(Family, "per_second",
		vendor.RefField{Field: "avatar", Prefix: Prefix}, vendor.RefField{Field: "voice", Prefix: VoicePrefix})
	s.UnitType, s.PriceUnit, s.TaskPrefix = "avatar", "per_call", Prefix
	s.Routes = append(s.Routes,
		vendor.FamilyRoute{Method: http.MethodPost, Path: "/v1/videos/avatars", Kind: vendor.RouteCreate, Operation: OpRegister,
			MaxBody: 1 << 20, Async: vendor.AsyncAlways, Model: ModelCreate, RecordError: vendor.RecordErrorMessage,
			StatusWords: map[string]string{"queued": "pending", "running": "pending", "succeeded": "ready", "cancelled": "failed"}},
		vendor.FamilyRoute{Method: http.MethodGet, Path: "/v1/videos/avatars", Kind: vendor.RouteList,
			List: &vendor.ListSpec{Statuses: []string{"pending", "ready", "failed"}, LimitDefault: 200, LimitMax: 200, Bare: true}},
		vendor.FamilyRoute{Method: http.MethodGet, Path: "/v1/videos/avatars/presets", Kind: vendor.RouteRead, Operation: OpPresets},
		vendor.FamilyRoute{Method: http.MethodGet, Path: "/v1/videos/avatars/{id}", Kind: vendor.RoutePoll},
		vendor.FamilyRoute{Method: http.MethodDelete, Path: "/v1/videos/avatars/{id}", Kind: vendor.RouteDelete},
	)
	// Registration typically takes 5 to 10 minutes; a task runs an hour
	// at most, and one cut by a restart polls on.
	s.MaxRuntime = time.Hour
	s.Refusals = rules.Rule9
	s.Examples = []vendor.Example{{Method: http.MethodPost, Path: video.Path,
		Body: `"avatar": "anna", "voice": "alloy", "text": "Welcome to the toll road.", "duration": 5`,
		Note: "   # a preset avatar speaks; then " + video.Poll}}
	return s
}

// Registration is an avatar registration as the rules read it.
type Registration struct {
	Name       string
	SourceURL  string
	SourceKind string
}

// ParseRegistration reads and validates a registration; allowPrivate is
// the private-address policy's switch (server { allow_private_urls }).
func ParseRegistration(req *vendor.JobRequest, allowPrivate bool) (*Registration, *vendor.JobError) {
	r := &Registration{SourceKind: KindImage}
	named := false
	if bad := rules.Fields(req.Body, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "name":
			if v.Type != gjson.String {
				return rules.Invalid("name must be a string of 1 to " + strconv.Itoa(MaxName) + " characters.")
			}
			r.Name, named = v.Str, true
		case "source_url":
			u, bad := rules.LinkField(name, v, allowPrivate)
			if bad != nil {
				return bad
			}
			r.SourceURL = u
		case "source_kind":
			if v.Type != gjson.String || v.Str != KindImage && v.Str != KindVideo {
				return rules.Invalid("source_kind must be image (the default) or video; got " + v.Raw + ".")
			}
			r.SourceKind = v.Str
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	switch n := rules.Chars(r.Name); {
	case !named || n == 0 || strings.TrimSpace(r.Name) == "":
		return nil, rules.Invalid("name is required: 1 to " + strconv.Itoa(MaxName) + " characters.")
	case n > MaxName:
		return nil, rules.Invalid("name is longer than " + strconv.Itoa(MaxName) + " characters (" + strconv.FormatInt(n, 10) + ").")
	case r.SourceURL == "":
		return nil, rules.Invalid("source_url is required: a public http(s) direct link to the avatar's image or video (there is no upload).")
	}
	return r, nil
}

// Record is the spec's Avatar record: {id, name, source_kind, status,
// error, created_at}, created_at ISO 8601 with its offset; the gateway
// writes the status word (pending, ready, failed) and a failure's error.
func Record(req *vendor.JobRequest, r *Registration) []byte {
	created := req.Submitted
	if created.IsZero() {
		created = time.Now()
	}
	return rules.NewRecord().Str("id", req.TaskID).Str("name", r.Name).Str("source_kind", r.SourceKind).
		Str("status", "pending").Raw("error", "null").Str("created_at", rules.ISOTime(created)).Bytes()
}

// Registered is the outcome of an avatar the upstream made: its record,
// one call settled, and the upstream's own avatar id as the task's
// reference (what a dh-avatar call naming it receives).
func Registered(req *vendor.JobRequest, r *Registration, upstreamAvatar string) *vendor.JobOutcome {
	return rules.Kept(Record(req, r), upstreamAvatar, vendor.Units{Count: 1})
}

// Preset is a platform avatar.
type Preset = rules.Preset

// Presets is the presets read's answer: {avatars: [{id, name}]}.
func Presets(ps []Preset) *vendor.JobOutcome { return rules.Presets("avatars", ps) }

// Video is a dh-avatar request as the rules read it.
type Video struct {
	Avatar string // as sent: the gateway's avatar id, or a preset
	// AvatarUpstream is the avatar as the upstream knows it: a registered
	// avatar's upstream id, else the preset as sent; Registered says which.
	AvatarUpstream string
	Registered     bool
	AudioURL       string
	Voice          string // as sent: a cloned voice's id, or a preset
	VoiceUpstream  string
	Cloned         bool // the voice is one the account cloned
	Text           string
	Duration       int
	Extra          []video.Field
}

// ParseVideo reads and validates a dh-avatar request.
func ParseVideo(req *vendor.JobRequest, allowPrivate bool) (*Video, *vendor.JobError) {
	if req.Model.ID == ModelCreate {
		return nil, rules.Invalid("the model '" + ModelCreate + "' registers avatars: POST /v1/videos/avatars {name, source_url}.")
	}
	r := &Video{}
	duration, extra, bad := video.Walk(req.Body, func(name string, v gjson.Result) (bool, *vendor.JobError) {
		switch name {
		case "avatar":
			if v.Type != gjson.String || v.Str == "" {
				return true, rules.Invalid("avatar must be a string: the id of an avatar you registered, or a preset's.")
			}
			r.Avatar = v.Str
		case "audio_url":
			u, bad := rules.LinkField(name, v, allowPrivate)
			r.AudioURL = u
			return true, bad
		case "voice":
			if v.Type != gjson.String || v.Str == "" {
				return true, rules.Invalid("voice must be a string: the id of a voice you cloned, or a preset's.")
			}
			r.Voice = v.Str
		case "text":
			if v.Type != gjson.String {
				return true, rules.Invalid("text must be a string: the script the voice speaks.")
			}
			r.Text = v.Str
		default:
			return false, nil
		}
		return true, nil
	})
	if bad != nil {
		return nil, bad
	}
	r.Extra = extra
	switch {
	case r.Avatar == "":
		return nil, rules.Invalid("avatar is required: the id of an avatar you registered (POST /v1/videos/avatars) or a preset's (GET /v1/videos/avatars/presets).")
	case r.AudioURL != "" && (r.Voice != "" || r.Text != ""):
		return nil, rules.Invalid("give audio_url, or voice with text, not both.")
	case r.AudioURL == "" && r.Voice == "" && r.Text == "":
		return nil, rules.Invalid("audio_url, or voice with text, is required: what the avatar says.")
	case r.Voice != "" && r.Text == "":
		return nil, rules.Invalid("voice needs text: the script the voice speaks (or send audio_url instead).")
	case r.Text != "" && r.Voice == "":
		return nil, rules.Invalid("text needs voice: the id of a voice you cloned, or a preset's (or send audio_url instead).")
	}
	d, bad := video.Seconds(duration, req.Model)
	if bad != nil {
		return nil, bad
	}
	r.Duration = d
	r.AvatarUpstream, r.VoiceUpstream = r.Avatar, r.Voice
	if ref := rules.Ref(req, "avatar"); ref != nil {
		r.AvatarUpstream, r.Registered = ref.UpstreamRef, true
	}
	if ref := rules.Ref(req, "voice"); ref != nil {
		r.VoiceUpstream, r.Cloned = ref.UpstreamRef, true
	}
	return r, nil
}

// Plan validates a request of either operation: a registration holds one
// call, a video its duration's seconds; each answers its task's record.
func Plan(req *vendor.JobRequest, allowPrivate bool) *vendor.JobPlan {
	if req.Operation == OpRegister {
		_, plan := rules.Plan(req, Family, rules.WithPolicy(ParseRegistration, allowPrivate), func(r *Registration) *vendor.JobPlan {
			return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}, Record: Record(req, r)}
		})
		return plan
	}
	_, plan := rules.Plan(req, Family, rules.WithPolicy(ParseVideo, allowPrivate), func(r *Video) *vendor.JobPlan {
		return rules.HoldRecord(req, "", int64(r.Duration))
	})
	return plan
}

// Made is the outcome of a finished dh-avatar video: the video record,
// the seconds the upstream reported settling, rounded up, never above the
// hold.
func Made(req *vendor.JobRequest, r *Video, res video.Result) *vendor.JobOutcome {
	return video.Succeeded(req, &video.Request{Duration: r.Duration}, res)
}
