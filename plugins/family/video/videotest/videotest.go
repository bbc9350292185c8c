// Package videotest is the conformance suite every video plugin passes:
// a plugin's test calls Run with its Target. The upstream must obey the
// sim's job markers in the prompt ([sim:error=CODE], [sim:fail=CODE],
// [sim:latency=DUR], [sim:hang], [sim:seconds=N]).
package videotest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the video plugin under test.
type Target struct {
	familytest.Target
	// Tiered, if set, is a model priced per second by resolution (480p,
	// 720p); Model a flat per-second one with max_duration = 10.
	Tiered vendor.JobModel
}

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	s := &familytest.Suite{
		Target: tg.Target, Spec: video.Spec(), Operation: video.OpGenerations,
		Async: true,
		Refusals: []familytest.Case{
			{Desc: "no prompt", Body: `{"model":"m"}`},
			{Desc: "prompt not a string", Body: `{"prompt":5}`},
			{Desc: "duration zero", Body: `{"prompt":"p","duration":0}`},
			{Desc: "duration a fraction", Body: `{"prompt":"p","duration":2.5}`},
			{Desc: "duration above the model's maximum", Body: `{"prompt":"p","duration":11}`},
			{Desc: "content not an array", Body: `{"content":"p"}`},
			{Desc: "content part of unknown type", Body: `{"content":[{"type":"gif"}]}`},
			{Desc: "image part without a URL", Body: `{"content":[{"type":"image_url","image_url":{}}]}`},
			{Desc: "image part not http(s)", Body: `{"content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}`},
			{Desc: "resolution not a string", Body: `{"prompt":"p","resolution":720}`},
			{Desc: "body not an object", Body: `[]`},
		},
		Holds: []familytest.Hold{
			{Desc: "duration asked", Body: `{"prompt":"p","duration":4}`, Want: []vendor.Units{{Count: 4}}},
			{Desc: "no duration: the model's maximum", Body: `{"prompt":"p"}`, Want: []vendor.Units{{Count: 10}}},
			{Desc: "content only", Body: `{"content":[{"type":"text","text":"p"}],"duration":3}`, Want: []vendor.Units{{Count: 3}}},
		},
		Good: familytest.Case{Body: `{"prompt":"a lighthouse at dusk","duration":5}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"prompt":"a lighthouse ` + m + `","duration":5}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			CheckVideo(t, req, out, vendor.Units{Count: 5})
		},
	}
	s.Run(t)
	j := familytest.Jobs(t, tg.New(t))
	req := func(body string) *vendor.JobRequest {
		return s.Request(familytest.Case{Body: body})
	}
	t.Run("upstream_seconds_settle_never_above_the_hold", func(t *testing.T) {
		out, err := familytest.Execute(t, j, req(`{"prompt":"short [sim:seconds=2.2]","duration":5}`))
		if err != nil {
			t.Fatal(err)
		}
		CheckVideo(t, nil, out, vendor.Units{Count: 3})
		if d := gjson.GetBytes(out.Body, "duration").Int(); d != 3 {
			t.Fatalf("duration %d, want the 3 seconds delivered", d)
		}
		out, err = familytest.Execute(t, j, req(`{"prompt":"long [sim:seconds=9]","duration":5}`))
		if err != nil {
			t.Fatal(err)
		}
		CheckVideo(t, nil, out, vendor.Units{Count: 5})
	})
	t.Run("tiers", func(t *testing.T) {
		if tg.Tiered.ID == "" {
			t.Skip("the target has no model priced by resolution")
		}
		r := req(`{"prompt":"p","duration":3,"resolution":"720p"}`)
		r.Model = tg.Tiered
		plan, err := j.Validate(familytest.Ctx(t), r)
		if err != nil || plan.Error != nil || !reflect.DeepEqual(plan.Hold, []vendor.Units{{Tier: "720p", Count: 3}}) {
			t.Fatalf("plan %+v %v", plan, err)
		}
		r = req(`{"prompt":"p","duration":3,"resolution":"1080p"}`)
		r.Model = tg.Tiered
		if plan, _ := j.Validate(familytest.Ctx(t), r); plan.Error == nil || plan.Error.Status != 400 {
			t.Fatalf("a resolution the model does not offer: %+v", plan)
		}
	})
}

// CheckVideo checks a finished video of any family on the route: its
// record (of req, when given) with a video_url slot for the hosted file,
// and the units that settle (seconds at a tier, or one task).
func CheckVideo(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome, want vendor.Units) {
	t.Helper()
	if out.State != vendor.JobSucceeded {
		t.Fatalf("outcome %+v", out)
	}
	b := gjson.ParseBytes(out.Body)
	if req != nil && (b.Get("id").Str != req.TaskID || b.Get("model").Str != req.Model.ID || b.Get("created_at").Int() != req.Submitted.Unix()) {
		t.Fatalf("record %s", out.Body)
	}
	if len(out.Files) != 1 || out.Files[0].Slot != "video_url" || len(out.Files[0].Data) == 0 && out.Files[0].URL == "" || out.ExpiresSlot != "expires_at" {
		t.Fatalf("files %+v, expires %q", out.Files, out.ExpiresSlot)
	}
	if !reflect.DeepEqual(out.Units, []vendor.Units{want}) {
		t.Fatalf("units %+v, want %+v", out.Units, want)
	}
}
