// Package voicetest is the conformance suite every voice plugin passes.
package voicetest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/voice"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the voice plugin under test.
type Target struct {
	familytest.Target
	// SampleURL is a voice sample the upstream can fetch.
	SampleURL string
}

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	if tg.Channel == "" {
		tg.Channel = "main"
	}
	u := `"audio_url":"` + tg.SampleURL + `"`
	s := &familytest.Suite{
		Target: tg.Target, Spec: voice.Spec(), Operation: voice.OpClone,
		Refusals: []familytest.Case{
			{Desc: "no name", Body: `{` + u + `}`},
			{Desc: "no sample", Body: `{"name":"Ada"}`},
			{Desc: "sample not http(s)", Body: `{"name":"Ada","audio_url":"ftp://h/a.wav"}`},
			{Desc: "both a link and a file", Body: `{"name":"Ada",` + u + `}`,
				Files: []vendor.JobFile{{Field: "file", Filename: "a.wav", Data: []byte("RIFF")}}},
			{Desc: "empty file", Body: `{"name":"Ada"}`, Files: []vendor.JobFile{{Field: "file", Filename: "a.wav"}}},
			{Desc: "unknown file field", Body: `{"name":"Ada"}`, Files: []vendor.JobFile{{Field: "photo", Filename: "a.wav", Data: []byte("x")}}},
		},
		Holds: []familytest.Hold{{Desc: "one call", Body: `{"name":"Ada",` + u + `}`, Want: []vendor.Units{{Count: 1}}}},
		Good:  familytest.Case{Body: `{"name":"Ada",` + u + `}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"name":"Ada ` + m + `",` + u + `}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			b := gjson.ParseBytes(out.Body)
			if b.Get("id").Str != req.TaskID || b.Get("name").Str != "Ada" || out.UpstreamRef == "" ||
				!reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
				t.Fatalf("clone %+v %s", out, out.Body)
			}
		},
	}
	s.Run(t)
	v := tg.New(t)
	t.Run("multipart_sample", func(t *testing.T) {
		req := s.Request(familytest.Case{Body: `{"name":"Bo"}`, Files: []vendor.JobFile{{Field: "file", Filename: "bo.wav",
			ContentType: "audio/wav", Data: []byte("RIFF....WAVE")}}})
		out, err := familytest.Execute(t, familytest.Jobs(t, v), req)
		if err != nil || out.State != vendor.JobSucceeded || out.UpstreamRef == "" {
			t.Fatalf("%+v %v", out, err)
		}
	})
	t.Run("presets", func(t *testing.T) {
		rd, ok := v.(vendor.JobReader)
		if !ok {
			t.Fatal("a voice plugin answers its presets (vendor.JobReader)")
		}
		out, err := rd.Read(familytest.Ctx(t), &vendor.JobRequest{Family: voice.Family, Operation: voice.OpPresets,
			Channel: tg.Channel, Body: []byte(`{}`)})
		if err != nil || out.Error != nil || len(gjson.GetBytes(out.Body, "presets").Array()) == 0 ||
			gjson.GetBytes(out.Body, "presets.0.id").Str == "" {
			t.Fatalf("presets %+v %v", out, err)
		}
	})
}
