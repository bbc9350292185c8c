// Package musictest is the conformance suite every music plugin passes.
package musictest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/music"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the music plugin under test.
type Target = familytest.Target

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	s := &familytest.Suite{
		Target: tg, Spec: music.Spec(), Operation: music.OpGenerations, Async: true,
		Refusals: []familytest.Case{
			{Desc: "no prompt", Body: `{"title":"t"}`},
			{Desc: "empty prompt", Body: `{"prompt":" "}`},
			{Desc: "prompt not a string", Body: `{"prompt":["a"]}`},
			{Desc: "instrumental not a bool", Body: `{"prompt":"p","instrumental":"maybe"}`},
			{Desc: "title too long", Body: `{"prompt":"p","title":"` + string(make([]byte, 81)) + `"}`},
			{Desc: "body not an object", Body: `"p"`},
		},
		Holds: []familytest.Hold{{Desc: "one generation", Body: `{"prompt":"a sea shanty","instrumental":true}`, Want: []vendor.Units{{Count: 1}}}},
		Good:  familytest.Case{Body: `{"prompt":"a sea shanty about toll roads","title":"Toll Road"}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"prompt":"a sea shanty ` + m + `"}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			b := gjson.ParseBytes(out.Body)
			songs := b.Get("songs").Array()
			if b.Get("id").Str != req.TaskID || len(songs) != music.SongsPerGeneration || out.ExpiresSlot != "expires_at" {
				t.Fatalf("record %s", out.Body)
			}
			for i, s := range songs {
				if s.Get("id").Str == "" || !s.Get("title").Exists() || !s.Get("duration").Exists() || s.Get("audio_url").Str != "" {
					t.Fatalf("song %d: %s", i, s.Raw)
				}
			}
			if len(out.Files) != 2 || out.Files[1].Slot != "songs.1.audio_url" || !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
				t.Fatalf("files %+v units %+v", out.Files, out.Units)
			}
		},
	}
	s.Run(t)
}
