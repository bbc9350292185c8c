// Package lipsynctest is the conformance suite every lip-sync plugin
// passes: a plugin's test calls Run with its Target. The upstream must
// obey the sim's job markers in the links' query strings
// ([sim:error=CODE], [sim:fail=CODE], [sim:latency=DUR], [sim:hang],
// [sim:seconds=N]).
package lipsynctest

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/lipsync"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the lip-sync plugin under test; Model one of its lip-sync
// models (with max_duration = 10), and Media the base of links its
// upstream can fetch ("https://cdn.example" when empty).
type Target struct {
	familytest.Target
	Media string
}

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	if tg.Media == "" {
		tg.Media = "https://cdn.example"
	}
	body := func(video, audio, duration string) string {
		return `{"source_video_url":"` + tg.Media + video + `","audio_url":"` + tg.Media + audio + `"` + duration + `}`
	}
	s := &familytest.Suite{
		Target: tg.Target, Spec: lipsync.Spec(), Operation: video.OpGenerations, Async: true,
		Refusals: []familytest.Case{
			{Desc: "no source video", Body: `{"audio_url":"` + tg.Media + `/a.wav","duration":5}`},
			{Desc: "no audio", Body: `{"source_video_url":"` + tg.Media + `/v.mp4","duration":5}`},
			{Desc: "no duration", Body: body("/v.mp4", "/a.wav", "")},
			{Desc: "duration zero", Body: body("/v.mp4", "/a.wav", `,"duration":0`)},
			{Desc: "duration above the model's maximum", Body: body("/v.mp4", "/a.wav", `,"duration":11`)},
			{Desc: "audio not http(s)", Body: `{"source_video_url":"` + tg.Media + `/v.mp4","audio_url":"ftp://h/a.wav","duration":5}`},
			{Desc: "video not a string", Body: `{"source_video_url":5,"audio_url":"` + tg.Media + `/a.wav","duration":5}`},
			{Desc: "body not an object", Body: `[]`},
		},
		Holds: []familytest.Hold{{Desc: "duration asked", Body: body("/v.mp4", "/a.wav", `,"duration":4`), Want: []vendor.Units{{Count: 4}}}},
		Good:  familytest.Case{Body: body("/v.mp4", "/a.wav", `,"duration":5`)},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: body("/v.mp4?m="+m, "/a.wav", `,"duration":5`)}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			videotest.CheckVideo(t, req, out, vendor.Units{Count: 5})
		},
	}
	s.Run(t)
	j := familytest.Jobs(t, tg.New(t))
	t.Run("upstream_seconds_settle_never_above_the_hold", func(t *testing.T) {
		out, err := familytest.Execute(t, j, s.Request(familytest.Case{Body: body("/v.mp4?m=[sim:seconds=2.2]", "/a.wav", `,"duration":5`)}))
		if err != nil {
			t.Fatal(err)
		}
		videotest.CheckVideo(t, nil, out, vendor.Units{Count: 3})
		out, err = familytest.Execute(t, j, s.Request(familytest.Case{Body: body("/v.mp4?m=[sim:seconds=9]", "/a.wav", `,"duration":5`)}))
		if err != nil {
			t.Fatal(err)
		}
		videotest.CheckVideo(t, nil, out, vendor.Units{Count: 5})
	})
}
