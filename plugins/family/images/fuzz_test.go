package images

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// FuzzPlan: no body panics the rules, a refusal is always a 400 (or the
// operator's 500), and an accepted request holds 1..10 images and renders.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"a cat","n":3,"size":"1024x1024"}`, `{"prompt":"p","image":["data:image/png;base64,iVBORw0KGgo="]}`,
		`{"prompt":"p","image_urls":"https://h/x","async":"true","n":"10"}`, `{"prompt":"p","n":1e400}`, `[]`, `{"prompt":`,
		`{"prompt":"p","size":"99999999999x1"}`, `{"prompt":"p","image":"data:image/png;base64,"}`,
	} {
		f.Add(s, "generations", "4")
	}
	f.Fuzz(func(t *testing.T, body, op, grid string) {
		req := &vendor.JobRequest{Operation: op, Body: []byte(body), Model: vendor.JobModel{ID: "m",
			Settings: map[string]string{SettingGrid: grid, SettingAreaThreshold: "2.61"}, Tiers: []string{TierHD}}}
		r, m, plan := Plan(req)
		if plan.Error != nil {
			if plan.Error.Status != 400 && plan.Error.Status != 500 {
				t.Fatalf("refusal %+v", plan.Error)
			}
			return
		}
		if len(plan.Hold) != 1 || plan.Hold[0].Count < 1 || plan.Hold[0].Count > MaxN {
			t.Fatalf("hold %+v", plan.Hold)
		}
		m.Shape(r)
		Render(m, r, Result{Images: []Image{{Data: []byte(body)}, {URL: "https://h/x"}}})
	})
}
