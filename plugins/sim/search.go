package sim

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/family/search"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// simSearch answers max_results deterministic results about the query,
// each a page of example.com.
type simSearch struct{}

func (simSearch) plan(req *vendor.JobRequest) *vendor.JobPlan {
	_, plan := search.Plan(req)
	return plan
}

func (simSearch) upstreamJob() bool { return false }

func (simSearch) finish(req *vendor.JobRequest, _ JobKnobs) *vendor.JobOutcome {
	r, _ := search.Parse(req)
	q := strings.TrimSpace(stripMarkers(r.Query))
	out := make([]search.Result, r.MaxResults)
	for i := range out {
		n := strconv.Itoa(i + 1)
		out[i] = search.Result{
			Title:   q + " — result " + n,
			URL:     "https://example.com/search/" + url.PathEscape(q) + "/" + n,
			Snippet: "Tollgate sim search result " + n + " for \"" + q + "\".",
		}
	}
	return search.Found(r, out)
}
