// Package motiontest is the conformance suite every motion-transfer
// plugin passes. The upstream must obey the sim's job markers in the
// links' query strings.
package motiontest

import (
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/motion"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the motion plugin under test (Model priced by resolution).
type Target = familytest.Target

func portraits(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = `{"type":"image_url","image_url":{"url":"https://media.example/p` + string(rune('a'+i)) + `.jpg"}}`
	}
	return `[` + strings.Join(ps, ",") + `]`
}

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	src := `"source_video_url":"https://media.example/dance.mp4`
	body := func(extra string) string { return `{` + src + `","content":` + portraits(2) + extra + `}` }
	s := &familytest.Suite{
		Target: tg, Spec: motion.Spec(), Operation: video.OpGenerations, Async: true,
		Refusals: []familytest.Case{
			{Desc: "no source video", Body: `{"content":` + portraits(1) + `,"duration":5}`},
			{Desc: "no portraits", Body: `{` + src + `","duration":5}`},
			{Desc: "eight portraits", Body: `{` + src + `","content":` + portraits(8) + `,"duration":5}`},
			{Desc: "face_count other than the portraits", Body: body(`,"face_count":3,"duration":5`)},
			{Desc: "face_count zero", Body: body(`,"face_count":0,"duration":5`)},
			{Desc: "unknown resolution", Body: body(`,"resolution":"ultra","duration":5`)},
			{Desc: "a text part", Body: `{` + src + `","content":[{"type":"text","text":"x"}],"duration":5}`},
			{Desc: "no duration", Body: body(``)},
		},
		Holds: []familytest.Hold{
			{Desc: "standard by default", Body: body(`,"duration":4`), Want: []vendor.Units{{Tier: motion.Standard, Count: 4}}},
			{Desc: "fast", Body: body(`,"resolution":"fast","face_count":2,"duration":4`), Want: []vendor.Units{{Tier: motion.Fast, Count: 4}}},
			{Desc: "max", Body: body(`,"resolution":"max","duration":7`), Want: []vendor.Units{{Tier: motion.Max, Count: 7}}},
		},
		Good: familytest.Case{Body: body(`,"resolution":"fast","face_count":2,"duration":5`)},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{` + src + `?m=` + m + `","content":` + portraits(2) + `,"resolution":"fast","duration":5}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			videotest.CheckVideo(t, req, out, vendor.Units{Tier: motion.Fast, Count: 5})
		},
	}
	s.Run(t)
}
