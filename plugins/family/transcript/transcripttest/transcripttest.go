// Package transcripttest is the conformance suite every transcript
// plugin passes.
package transcripttest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/transcript"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the transcript plugin under test.
type Target = familytest.Target

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	s := &familytest.Suite{
		Target: tg, Spec: transcript.Spec(), Operation: transcript.OpExtract,
		Refusals: []familytest.Case{
			{Desc: "no url", Body: `{}`},
			{Desc: "url not a string", Body: `{"url":5}`},
			{Desc: "no link in the text", Body: `{"url":"watch my video!"}`},
			{Desc: "not http(s)", Body: `{"url":"ftp://h/v.mp4"}`},
		},
		Holds: []familytest.Hold{{Desc: "one call", Body: `{"url":"https://v.example/a"}`, Want: []vendor.Units{{Count: 1}}}},
		Good:  familytest.Case{Body: `{"url":"Look at this! https://v.example/share/abc123?x=1 copy the link"}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"url":"https://v.example/a?m=` + m + `"}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			b := gjson.ParseBytes(out.Body)
			if b.Get("text").Str == "" || b.Get("language").Str == "" || !b.Get("duration").Exists() ||
				!reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
				t.Fatalf("%s %+v", out.Body, out.Units)
			}
		},
	}
	s.Run(t)
	t.Run("no_speech_is_the_clients_400", func(t *testing.T) {
		out, err := familytest.Execute(t, familytest.Jobs(t, tg.New(t)), s.Request(familytest.Case{Body: `{"url":"https://v.example/quiet [sim:nospeech]"}`}))
		if err != nil || out.State != vendor.JobFailed || out.Error == nil || out.Error.Status != 400 || out.Error.Code != "invalid_request" || len(out.Units) != 0 {
			t.Fatalf("%+v %v", out, err)
		}
	})
}
