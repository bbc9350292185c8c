// Package speechtest is the conformance suite every speech plugin passes.
package speechtest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the speech plugin under test.
type Target struct {
	familytest.Target
	// Voice is a preset voice the upstream speaks with.
	Voice string
}

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	v := `"voice":"` + tg.Voice + `"`
	s := &familytest.Suite{
		Target: tg.Target, Spec: speech.Spec(), Operation: speech.OpSpeech,
		Refusals: []familytest.Case{
			{Desc: "no input", Body: `{` + v + `}`},
			{Desc: "no voice", Body: `{"input":"hello"}`},
			{Desc: "input not a string", Body: `{"input":5,` + v + `}`},
			{Desc: "unknown format", Body: `{"input":"hi",` + v + `,"response_format":"ogg"}`},
			{Desc: "speed out of range", Body: `{"input":"hi",` + v + `,"speed":9}`},
			{Desc: "async not a bool", Body: `{"input":"hi",` + v + `,"async":"soon"}`},
			{Desc: "input too long", Body: `{"input":"` + string(make([]byte, 0)) + longText(speech.MaxInput+1) + `",` + v + `}`},
		},
		Holds: []familytest.Hold{
			{Desc: "characters, not bytes", Body: `{"input":"héllo wörld",` + v + `}`, Want: []vendor.Units{{Count: 11}}},
			{Desc: "one per code point", Body: `{"input":"日本語",` + v + `}`, Want: []vendor.Units{{Count: 3}}},
		},
		Good: familytest.Case{Body: `{"input":"Welcome to the toll road.",` + v + `,"response_format":"wav"}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"input":"Welcome ` + m + `",` + v + `}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			if out.Headers["content-type"] != "audio/wav" || len(out.Body) < 44 || string(out.Body[:4]) != "RIFF" {
				t.Fatalf("audio: %q %d bytes", out.Headers["content-type"], len(out.Body))
			}
			if !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 25}}) {
				t.Fatalf("units %+v", out.Units)
			}
		},
	}
	s.Run(t)
	j := familytest.Jobs(t, tg.New(t))
	t.Run("async_record", func(t *testing.T) {
		req := s.Request(familytest.Case{Body: `{"input":"hi there",` + v + `,"async":true}`})
		plan, err := j.Validate(familytest.Ctx(t), req)
		if err != nil || plan.Error != nil || gjson.GetBytes(plan.Record, "id").Str != req.TaskID {
			t.Fatalf("plan %+v %v", plan, err)
		}
		out, err := familytest.Execute(t, j, req)
		if err != nil || out.State != vendor.JobSucceeded || len(out.Files) != 1 || out.Files[0].Slot != "audio_url" ||
			gjson.GetBytes(out.Body, "id").Str != req.TaskID || out.ExpiresSlot != "expires_at" {
			t.Fatalf("outcome %+v %v", out, err)
		}
	})
}

func longText(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}
