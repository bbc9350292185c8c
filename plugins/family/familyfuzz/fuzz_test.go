package familyfuzz

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/family/music"
	"github.com/tollgate-gw/tollgate/plugins/family/search"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/transcript"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/family/voice"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// family is one family's spec and its Validate rules.
type family struct {
	spec vendor.FamilySpec
	plan func(*vendor.JobRequest) *vendor.JobPlan
}

func planOf[R any](p func(*vendor.JobRequest) (R, *vendor.JobPlan)) func(*vendor.JobRequest) *vendor.JobPlan {
	return func(r *vendor.JobRequest) *vendor.JobPlan { _, plan := p(r); return plan }
}

// families are every family on main. Digital-human families join here.
var families = []family{
	{images.Spec(), func(r *vendor.JobRequest) *vendor.JobPlan { _, _, p := images.Plan(r); return p }},
	{music.Spec(), planOf(music.Plan)},
	{search.Spec(), planOf(search.Plan)},
	{speech.Spec(), planOf(speech.Plan)},
	{transcript.Spec(), func(r *vendor.JobRequest) *vendor.JobPlan { _, p := transcript.Plan(r, false); return p }},
	{video.Spec(), planOf(video.Plan)},
	{voice.Spec(), planOf(voice.Plan)},
}

// seeds are bodies that reach deep into the rules: valid shapes of each
// family, wrong types, huge numbers, odd URLs.
var seeds = []string{
	`{"prompt":"a cat","n":2,"size":"1024x1024"}`,
	`{"model":"m","prompt":"waves","duration":5,"resolution":"720p","image":"https://h/x.png"}`,
	`{"model":"m","input":"hello","voice":"alloy","response_format":"mp3","speed":1.5}`,
	`{"model":"m","query":"toll roads","max_results":3,"include_domains":["a.b"]}`,
	`{"model":"m","url":"https://www.youtube.com/watch?v=x","lang":"en"}`,
	`{"model":"m","prompt":"song","lyrics":"la","instrumental":true,"duration":30}`,
	`{"model":"m","name":"v","files":["https://h/a.mp3"],"description":"d"}`,
	`{"model":"m","prompt":"p","duration":1e400,"n":-1,"seed":"x"}`,
	`{"model":7}`, `[]`, `{"prompt":`, `{"url":"javascript:alert(1)"}`, `{"url":"http://[::1]:80/"}`,
	`{"prompt":"p","image":["data:image/png;base64,iVBORw0KGgo="],"async":"true"}`,
}

// FuzzFamilyPlan: no body panics any family's rules on any of its create
// routes; a refusal is a 400 (the operator's setting a 500), never a 2xx
// or a 5xx the client caused; an accepted request holds whole units.
func FuzzFamilyPlan(f *testing.F) {
	for i := range seeds {
		f.Add(seeds[i], uint8(i), uint8(i))
	}
	f.Fuzz(func(t *testing.T, body string, fam, route uint8) {
		fm := families[int(fam)%len(families)]
		var ops []string
		for _, r := range fm.spec.Routes {
			if r.Kind == vendor.RouteCreate || r.Kind == vendor.RouteRead {
				ops = append(ops, r.Operation)
			}
		}
		if len(ops) == 0 {
			ops = []string{""}
		}
		req := &vendor.JobRequest{Family: fm.spec.Name, Operation: ops[int(route)%len(ops)], Body: []byte(body),
			Model: vendor.JobModel{ID: "m", Upstream: "m"}}
		plan := fm.plan(req)
		if plan == nil {
			t.Fatalf("%s: no plan for %q", fm.spec.Name, body)
		}
		if e := plan.Error; e != nil {
			if e.Status != 400 && e.Status != 500 && e.Status != 413 && e.Status != 404 {
				t.Fatalf("%s: refusal %+v for %q", fm.spec.Name, e, body)
			}
			return
		}
		for _, h := range plan.Hold {
			if h.Count < 0 {
				t.Fatalf("%s: holds %+v for %q", fm.spec.Name, plan.Hold, body)
			}
		}
	})
}
