// Package searchtest is the conformance suite every search plugin passes.
package searchtest

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/search"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the search plugin under test.
type Target = familytest.Target

// Run runs the suite.
func Run(t *testing.T, tg Target) {
	s := &familytest.Suite{
		Target: tg, Spec: search.Spec(), Operation: search.OpSearch,
		Refusals: []familytest.Case{
			{Desc: "no query", Body: `{}`},
			{Desc: "empty query", Body: `{"query":"  "}`},
			{Desc: "max_results zero", Body: `{"query":"q","max_results":0}`},
			{Desc: "max_results above 20", Body: `{"query":"q","max_results":21}`},
			{Desc: "max_results a word", Body: `{"query":"q","max_results":"many"}`},
		},
		Holds: []familytest.Hold{{Desc: "one call", Body: `{"query":"q","max_results":20}`, Want: []vendor.Units{{Count: 1}}}},
		Good:  familytest.Case{Body: `{"query":"toll roads of europe","max_results":3}`},
		Marked: func(m string) familytest.Case {
			return familytest.Case{Body: `{"query":"toll roads ` + m + `"}`}
		},
		Check: func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome) {
			b := gjson.ParseBytes(out.Body)
			rs := b.Get("results").Array()
			if b.Get("object").Str != "search.results" || b.Get("query").Str != "toll roads of europe" || len(rs) != 3 ||
				rs[0].Get("title").Str == "" || rs[0].Get("url").Str == "" || !rs[0].Get("snippet").Exists() ||
				!reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
				t.Fatalf("%s %+v", out.Body, out.Units)
			}
		},
	}
	s.Run(t)
	t.Run("default_five", func(t *testing.T) {
		out, err := familytest.Execute(t, familytest.Jobs(t, tg.New(t)), s.Request(familytest.Case{Body: `{"query":"q"}`}))
		if err != nil || len(gjson.GetBytes(out.Body, "results").Array()) != search.DefaultResults {
			t.Fatalf("%+v %v", out, err)
		}
	})
}
