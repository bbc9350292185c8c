// Package avatartest is the conformance suite every avatar plugin
// passes: registrations (the spec's Avatar record, the upstream's avatar
// id kept as the task's reference, the presets) and dh-avatar videos (an
// avatar preset or a registered one; audio, or a voice with text). The
// upstream must obey the sim's job markers in the links' query strings.
package avatartest

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/avatar"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the avatar plugin under test: Model is its dh-avatar model,
// Create its registration model (dh-avatar-create), Preset one of its
// preset avatars and Voice one of its preset voices.
type Target struct {
	familytest.Target
	Create        vendor.JobModel
	Preset, Voice string
}

var isoOffset = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$`)

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	if tg.Channel == "" {
		tg.Channel = "main"
	}
	reg := tg.Target
	reg.Model = tg.Create
	src := `"source_url":"https://media.example/ada.jpg`
	t.Run("register", func(t *testing.T) {
		s := &familytest.Suite{
			Target: reg, Spec: avatar.Spec(), Operation: avatar.OpRegister, Async: true,
			Refusals: []familytest.Case{
				{Desc: "no name", Body: `{` + src + `"}`},
				{Desc: "name of spaces", Body: `{"name":"   ",` + src + `"}`},
				{Desc: "name over 20 characters", Body: `{"name":"` + strings.Repeat("é", 21) + `",` + src + `"}`},
				{Desc: "no source", Body: `{"name":"Ada"}`},
				{Desc: "source not http(s)", Body: `{"name":"Ada","source_url":"file:///etc/passwd"}`},
				{Desc: "unknown source kind", Body: `{"name":"Ada",` + src + `","source_kind":"gif"}`},
			},
			Holds: []familytest.Hold{{Desc: "one call", Body: `{"name":"Ada",` + src + `"}`, Want: []vendor.Units{{Count: 1}}}},
			Good:  familytest.Case{Body: `{"name":"Ada",` + src + `","source_kind":"image"}`},
			Marked: func(m string) familytest.Case {
				return familytest.Case{Body: `{"name":"Ada",` + src + `?m=` + m + `"}`}
			},
			Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
				b := gjson.ParseBytes(out.Body)
				if familytest.Keys(b) != "id,name,source_kind,status,error,created_at" || b.Get("id").Str != req.TaskID ||
					b.Get("name").Str != "Ada" || b.Get("source_kind").Str != "image" || !isoOffset.MatchString(b.Get("created_at").Str) ||
					out.UpstreamRef == "" || !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
					t.Fatalf("avatar %s, reference %q, units %+v", out.Body, out.UpstreamRef, out.Units)
				}
			},
		}
		s.Run(t)
	})
	v := tg.New(t)
	j := familytest.Jobs(t, v)
	audio := `"audio_url":"https://media.example/hello.wav`
	s := &familytest.Suite{
		Target: tg.Target, Spec: avatar.Spec(), Operation: video.OpGenerations, Async: true,
		Refusals: []familytest.Case{
			{Desc: "no avatar", Body: `{` + audio + `","duration":5}`},
			{Desc: "no duration", Body: `{"avatar":"` + tg.Preset + `",` + audio + `"}`},
			{Desc: "audio and voice", Body: `{"avatar":"` + tg.Preset + `",` + audio + `","voice":"` + tg.Voice + `","text":"hi","duration":5}`},
			{Desc: "neither audio nor voice", Body: `{"avatar":"` + tg.Preset + `","duration":5}`},
			{Desc: "voice without text", Body: `{"avatar":"` + tg.Preset + `","voice":"` + tg.Voice + `","duration":5}`},
			{Desc: "text without voice", Body: `{"avatar":"` + tg.Preset + `","text":"hi","duration":5}`},
			{Desc: "audio not http(s)", Body: `{"avatar":"` + tg.Preset + `","audio_url":"ftp://h/a.wav","duration":5}`},
		},
		Holds: []familytest.Hold{{Desc: "duration asked", Body: `{"avatar":"` + tg.Preset + `",` + audio + `","duration":6}`, Want: []vendor.Units{{Count: 6}}}},
		Good:  familytest.Case{Body: `{"avatar":"` + tg.Preset + `",` + audio + `","duration":5}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"avatar":"` + tg.Preset + `",` + audio + `?m=` + m + `","duration":5}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			videotest.CheckVideo(t, req, out, vendor.Units{Count: 5})
		},
	}
	t.Run("video", s.Run)
	t.Run("video_with_a_voice_and_text", func(t *testing.T) {
		out, err := familytest.Execute(t, j, s.Request(familytest.Case{Body: `{"avatar":"` + tg.Preset + `","voice":"` + tg.Voice +
			`","text":"Welcome to the toll road.","duration":30}`}))
		if err != nil || out.State != vendor.JobSucceeded || len(out.Units) != 1 || out.Units[0].Count < 1 || out.Units[0].Count > 30 {
			t.Fatalf("%+v %v", out, err)
		}
	})
	t.Run("registration_model_is_no_video_model", func(t *testing.T) {
		req := s.Request(s.Good)
		req.Model = tg.Create
		if plan, err := j.Validate(familytest.Ctx(t), req); err != nil || plan.Error == nil || plan.Error.Status != 400 {
			t.Fatalf("%+v %v", plan, err)
		}
	})
	t.Run("a_registered_avatar", func(t *testing.T) {
		rs := &familytest.Suite{Target: reg, Spec: avatar.Spec(), Operation: avatar.OpRegister, Async: true}
		rs.Channel = tg.Channel
		made, err := familytest.Execute(t, j, rs.Request(familytest.Case{Body: `{"name":"Bo",` + src + `"}`}))
		if err != nil || made.State != vendor.JobSucceeded || made.UpstreamRef == "" {
			t.Fatalf("registration %+v %v", made, err)
		}
		out, err := familytest.Execute(t, j, s.Request(familytest.Case{Body: `{"avatar":"avt_bo",` + audio + `","duration":3}`,
			Refs: []vendor.JobRef{{Field: "avatar", TaskID: "avt_bo", Family: avatar.Family, Model: tg.Create.ID,
				UpstreamRef: made.UpstreamRef, Record: made.Body}}}))
		if err != nil {
			t.Fatal(err)
		}
		videotest.CheckVideo(t, nil, out, vendor.Units{Count: 3})
	})
	t.Run("presets", func(t *testing.T) {
		rd, ok := v.(vendor.JobReader)
		if !ok {
			t.Fatal("an avatar plugin answers its presets (vendor.JobReader)")
		}
		out, err := rd.Read(familytest.Ctx(t), &vendor.JobRequest{Family: avatar.Family, Operation: avatar.OpPresets,
			Channel: tg.Channel, Model: tg.Create, Body: []byte(`{}`)})
		if err != nil || out.Error != nil || familytest.Keys(gjson.GetBytes(out.Body, "avatars.0")) != "id,name" {
			t.Fatalf("presets %+v %v", out, err)
		}
		found := false
		for _, p := range gjson.GetBytes(out.Body, "avatars").Array() {
			found = found || p.Get("id").Str == tg.Preset
		}
		if !found {
			t.Fatalf("the presets %s lack %q", out.Body, tg.Preset)
		}
	})
}
