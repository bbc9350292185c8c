// Package subtitletest is the conformance suite every subtitle plugin
// passes. The upstream must obey the sim's job markers in the link's
// query string, [sim:nospeech] and [sim:seconds=N] (the source's length)
// included.
package subtitletest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the subtitle plugin under test.
type Target = familytest.Target

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	link := `https://media.example/talk.mp4`
	s := &familytest.Suite{
		Target: tg, Spec: subtitle.Spec(), Operation: subtitle.OpRecognize,
		Refusals: []familytest.Case{
			{Desc: "no link", Body: `{}`},
			{Desc: "link not http(s)", Body: `{"video_url":"ftp://h/v.mp4"}`},
			{Desc: "link not a string", Body: `{"video_url":5}`},
			{Desc: "async not a bool", Body: `{"video_url":"` + link + `","async":"maybe"}`},
		},
		Holds: []familytest.Hold{{Desc: "one call", Body: `{"video_url":"` + link + `"}`, Want: []vendor.Units{{Count: 1}}}},
		Good:  familytest.Case{Body: `{"video_url":"` + link + `"}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"video_url":"` + link + `?m=` + m + `"}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			b := gjson.ParseBytes(out.Body)
			segs := b.Get("segments").Array()
			if b.Get("asr_id").Str != req.TaskID || b.Get("api_version").Str == "" || b.Get("video_url").Str != link ||
				len(segs) == 0 || b.Get("segments").Raw != b.Get("sentences").Raw || !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
				t.Fatalf("%s %+v", out.Body, out.Units)
			}
			for _, l := range segs {
				r := l.Get("showRange").Array()
				if len(r) != 2 || r[1].Int() <= r[0].Int() || l.Get("content").Str == "" {
					t.Fatalf("line %s", l.Raw)
				}
			}
		},
	}
	s.Run(t)
	j := familytest.Jobs(t, tg.New(t))
	refused := func(t *testing.T, marker string) {
		t.Helper()
		out, err := familytest.Execute(t, j, s.Request(familytest.Case{Body: `{"video_url":"` + link + `?m=` + marker + `"}`}))
		if err != nil || out.State != vendor.JobFailed || out.Error == nil || out.Error.Status != 400 || out.Error.Code != "invalid_request" || len(out.Units) != 0 {
			t.Fatalf("%+v %v", out, err)
		}
	}
	t.Run("no_speech_is_the_clients_400", func(t *testing.T) { refused(t, "[sim:nospeech]") })
	t.Run("a_source_over_5_minutes_is_the_clients_400", func(t *testing.T) { refused(t, "[sim:seconds=301]") })
	t.Run("a_source_of_5_minutes", func(t *testing.T) {
		out, err := familytest.Execute(t, j, s.Request(familytest.Case{Body: `{"video_url":"` + link + `?m=[sim:seconds=300]"}`}))
		if err != nil || out.State != vendor.JobSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
	})
}
