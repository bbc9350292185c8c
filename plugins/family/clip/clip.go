// Package clip holds the clip family's rules: social-style editing's
// compose (clip-compose on the shared video route, 90 a task whatever the
// length) and its template reads, once for every plugin that serves them.
//
// A compose names the recognition it edits (asr_id, a sub_ id the gateway
// resolves: this account's, not expired) and the same video_url that
// recognition was made from. Its fields: enable_title_effect (default
// false), enable_caption_effect and enable_keyword_effect (default true),
// title (truncated at 30 characters), video_style_id (a listed
// template's; without it, no subtitles, title or name card), music_url,
// name_card {name at most 20 characters, description at most 40},
// sentences (the recognition's lines with only their content changed:
// the same count, in order, each non-empty; showRange ignored; another
// count is 400 naming the expected one), pip_config (at most 20 {media_url,
// begin_time, end_time} in milliseconds, end after begin). The template
// reads: GET /v1/videos/clip-templates/categories {list} and GET
// /v1/videos/clip-templates {list, sid: "", api_version} (cate_id
// optional), free, gated by clip-compose like every editing helper.
// cliptest is the suite every clip plugin passes.
package clip

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "clip"

// Names and limits.
const (
	Model       = "clip-compose"
	APIVersion  = subtitle.APIVersion
	MaxTitle    = 30
	MaxCardName = 20
	MaxCardDesc = 40
	MaxPIP      = 20
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	s := video.Joined(Family, "per_call", vendor.RefField{Field: "asr_id", Prefix: subtitle.Prefix})
	s.Routes = append(s.Routes,
		vendor.FamilyRoute{Method: http.MethodGet, Path: "/v1/videos/clip-templates/categories", Kind: vendor.RouteRead,
			Operation: OpCategories, Model: Model, Gate: Model},
		vendor.FamilyRoute{Method: http.MethodGet, Path: "/v1/videos/clip-templates", Kind: vendor.RouteRead,
			Operation: OpTemplates, Model: Model, Gate: Model},
	)
	s.Refusals = rules.Rule9
	// The editing flow: pick a template, recognise a video's speech (the
	// subtitle family), compose with the recognition's asr_id.
	s.Examples = []vendor.Example{
		{Method: http.MethodGet, Path: "/v1/videos/clip-templates", Note: "   # editing: pick a template"},
		{Family: subtitle.Family, Method: http.MethodPost, Path: "/v1/videos/clip-subtitles",
			Body: `"video_url": "https://example.com/v/talk.mp4"`, Note: "   # recognise; its asr_id composes:"},
		{Method: http.MethodPost, Path: video.Path,
			Body: `"video_url": "https://example.com/v/talk.mp4", "asr_id": "ASR_ID", "video_style_id": "talk-01"`,
			Note: "   # then " + video.Poll},
	}
	return s
}

// Card is a name card.
type Card struct{ Name, Description string }

// PIP is a picture-in-picture item, in milliseconds.
type PIP struct {
	MediaURL   string
	Begin, End int64
}

// Request is a compose as the rules read it.
type Request struct {
	VideoURL      string
	ASRID         string
	TitleEffect   bool
	CaptionEffect bool
	KeywordEffect bool
	Title         string // truncated at 30 characters
	StyleID       string
	MusicURL      string
	Card          *Card
	// Lines are the subtitles to burn: the recognition's, with the
	// contents the client edited (Edited) in their place.
	Lines  []subtitle.Line
	Edited bool
	PIP    []PIP
	Extra  []video.Field
}

// Parse reads and validates a compose; allowPrivate is the
// private-address policy's switch.
func Parse(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobError) {
	r := &Request{CaptionEffect: true, KeywordEffect: true}
	var sentences gjson.Result
	if bad := rules.Fields(req.Body, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "video_url", "music_url":
			u, bad := rules.LinkField(name, v, allowPrivate)
			if bad != nil {
				return bad
			}
			if name == "video_url" {
				r.VideoURL = u
			} else {
				r.MusicURL = u
			}
		case "asr_id":
			if v.Type != gjson.String || v.Str == "" {
				return rules.Invalid("asr_id must be a string: the asr_id of the recognition (POST /v1/videos/clip-subtitles).")
			}
			r.ASRID = v.Str
		case "enable_title_effect", "enable_caption_effect", "enable_keyword_effect":
			b, ok := rules.Boolean(v)
			if !ok {
				return rules.Invalid(name + " must be true or false; got " + v.Raw + ".")
			}
			switch name {
			case "enable_title_effect":
				r.TitleEffect = b
			case "enable_caption_effect":
				r.CaptionEffect = b
			default:
				r.KeywordEffect = b
			}
		case "title":
			if v.Type != gjson.String {
				return rules.Invalid("title must be a string.")
			}
			r.Title = truncate(v.Str, MaxTitle)
		case "video_style_id":
			if v.Type != gjson.String {
				return rules.Invalid("video_style_id must be a string: a template's style_id (GET /v1/videos/clip-templates).")
			}
			r.StyleID = v.Str
		case "name_card":
			c, bad := card(v)
			if bad != nil {
				return bad
			}
			r.Card = c
		case "sentences":
			sentences = v
		case "pip_config":
			ps, bad := pips(v, allowPrivate)
			if bad != nil {
				return bad
			}
			r.PIP = ps
		default:
			r.Extra = append(r.Extra, video.Field{Name: name, Raw: v.Raw})
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	switch {
	case r.VideoURL == "":
		return nil, rules.Invalid("video_url is required: the same link the recognition was made from.")
	case r.ASRID == "":
		return nil, rules.Invalid("asr_id is required: recognise the video first (POST /v1/videos/clip-subtitles) and pass its asr_id.")
	}
	ref := rules.Ref(req, "asr_id")
	if ref == nil {
		return nil, rules.Invalid("asr_id: '" + r.ASRID + "' does not exist (an asr_id is usable only by the account that recognised the video, for 24 hours); recognise the video again.")
	}
	rec, ok := subtitle.RecognitionOf(ref.Record)
	if !ok {
		return nil, rules.Invalid("asr_id: '" + r.ASRID + "' is no finished recognition; recognise the video again.")
	}
	if rec.VideoURL != r.VideoURL {
		return nil, rules.Invalid("video_url must be the link asr_id '" + r.ASRID + "' was recognised from (" + rec.VideoURL + ").")
	}
	r.Lines = rec.Lines
	if sentences.Exists() && sentences.Type != gjson.Null {
		if bad := r.edit(sentences); bad != nil {
			return nil, bad
		}
	}
	if r.StyleID != "" {
		set, bad := SetOf(req.Model)
		if bad != nil {
			return nil, bad
		}
		if !set.Has(r.StyleID) {
			return nil, rules.Invalid("video_style_id: '" + r.StyleID + "' is not a listed template (GET /v1/videos/clip-templates lists them).")
		}
	}
	return r, nil
}

// edit lays the client's sentences over the recognition's lines: the same
// count, each with non-empty content; a showRange sent is ignored.
func (r *Request) edit(v gjson.Result) *vendor.JobError {
	if !v.IsArray() {
		return rules.Invalid("sentences must be an array of the recognition's " + strconv.Itoa(len(r.Lines)) + " lines, {showRange, content}, only content changed.")
	}
	items := v.Array()
	if len(items) != len(r.Lines) {
		return rules.Invalid("sentences has " + strconv.Itoa(len(items)) + " lines; the recognition has " + strconv.Itoa(len(r.Lines)) +
			": send exactly " + strconv.Itoa(len(r.Lines)) + ", in order, changing only their content.")
	}
	lines := make([]subtitle.Line, len(items))
	for i, it := range items {
		c := it.Get("content")
		if !it.IsObject() || c.Type != gjson.String || strings.TrimSpace(c.Str) == "" {
			return rules.Invalid("sentences[" + strconv.Itoa(i) + "].content must be a non-empty string.")
		}
		lines[i] = subtitle.Line{Start: r.Lines[i].Start, End: r.Lines[i].End, Content: c.Str}
	}
	r.Lines, r.Edited = lines, true
	return nil
}

func card(v gjson.Result) (*Card, *vendor.JobError) {
	if !v.IsObject() {
		return nil, rules.Invalid("name_card must be an object {name, description}.")
	}
	c := &Card{}
	for _, f := range []struct {
		name string
		max  int64
		to   *string
	}{{"name", MaxCardName, &c.Name}, {"description", MaxCardDesc, &c.Description}} {
		x := v.Get(f.name)
		if !x.Exists() || x.Type == gjson.Null {
			continue
		}
		if x.Type != gjson.String {
			return nil, rules.Invalid("name_card." + f.name + " must be a string.")
		}
		if n := rules.Chars(x.Str); n > f.max {
			return nil, rules.Invalid("name_card." + f.name + " is longer than " + strconv.FormatInt(f.max, 10) + " characters (" + strconv.FormatInt(n, 10) + ").")
		}
		*f.to = x.Str
	}
	return c, nil
}

func pips(v gjson.Result, allowPrivate bool) ([]PIP, *vendor.JobError) {
	if !v.IsArray() {
		return nil, rules.Invalid("pip_config must be an array of at most 20 {media_url, begin_time, end_time}.")
	}
	items := v.Array()
	if len(items) > MaxPIP {
		return nil, rules.Invalid("pip_config has " + strconv.Itoa(len(items)) + " items; at most " + strconv.Itoa(MaxPIP) + ".")
	}
	out := make([]PIP, len(items))
	for i, it := range items {
		at := "pip_config[" + strconv.Itoa(i) + "]"
		if !it.IsObject() {
			return nil, rules.Invalid(at + " must be {media_url, begin_time, end_time}.")
		}
		u, bad := rules.LinkField(at+".media_url", it.Get("media_url"), allowPrivate)
		if bad != nil {
			return nil, bad
		}
		b, okB := rules.WholeNumber(it.Get("begin_time"))
		e, okE := rules.WholeNumber(it.Get("end_time"))
		switch {
		case !okB || !okE || b < 0 || e < 0:
			return nil, rules.Invalid(at + ": begin_time and end_time must be whole milliseconds, 0 or more.")
		case e <= b:
			return nil, rules.Invalid(at + ": end_time (" + strconv.Itoa(e) + ") must be greater than begin_time (" + strconv.Itoa(b) + ").")
		}
		out[i] = PIP{MediaURL: u, Begin: int64(b), End: int64(e)}
	}
	return out, nil
}

// truncate cuts s to n characters.
func truncate(s string, n int) string {
	i := 0
	for at := range s {
		if i == n {
			return s[:at]
		}
		i++
	}
	return s
}

// Plan validates a compose and holds one task.
func Plan(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, rules.WithPolicy(Parse, allowPrivate), func(*Request) *vendor.JobPlan {
		return rules.HoldRecord(req, "", 1)
	})
}

// Composed is the outcome of a finished compose: the record with
// video_url (the gateway hosts the video and writes its link), expires_at
// and the video's length as the upstream reports it; one task settles.
func Composed(req *vendor.JobRequest, r *Request, res video.Result) *vendor.JobOutcome {
	out := video.Succeeded(req, &video.Request{Duration: 1 << 30}, res)
	out.Units = []vendor.Units{{Count: 1}}
	return out
}
