// Package search holds the search family's rules: POST /v1/search, web
// search per call, {query, max_results} (1 to 20, default 5) to {object:
// "search.results", query, results: [{title, url, snippet}]}. searchtest
// is the suite every search plugin passes.
package search

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "search"

// OpSearch is the create route's operation.
const OpSearch = "search"

// Bounds of a search.
const (
	DefaultResults = 5
	MaxResults     = 20
	MaxQuery       = 1000
)

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "search", PriceUnit: "per_call", TaskPrefix: "srch_",
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: "/v1/search", Kind: vendor.RouteCreate, Operation: OpSearch, MaxBody: 64 << 10},
		},
		AttemptTimeout: 30 * time.Second, CallTimeout: 60 * time.Second, ModelOptional: true,
		Examples: []vendor.Example{{Method: http.MethodPost, Path: "/v1/search",
			Body: `"query": "toll roads of europe", "max_results": 3`}},
	}
}

// Request is a search.
type Request struct {
	Query      string
	MaxResults int
	Extra      []Field
}

// Field is one JSON member: its name and raw value.
type Field struct{ Name, Raw string }

// Parse reads and validates a search.
func Parse(req *vendor.JobRequest) (*Request, *vendor.JobError) {
	r := &Request{MaxResults: DefaultResults}
	if bad := rules.Fields(req.Body, func(name string, v gjson.Result) *vendor.JobError {
		switch name {
		case "query":
			if v.Type != gjson.String {
				return rules.Invalid("query must be a string.")
			}
			r.Query = v.Str
		case "max_results":
			n, ok := rules.WholeNumber(v)
			if !ok || n < 1 || n > MaxResults {
				return rules.Invalid("max_results must be a whole number from 1 to " + strconv.Itoa(MaxResults) + "; got " + v.Raw + ".")
			}
			r.MaxResults = n
		default:
			r.Extra = append(r.Extra, Field{name, v.Raw})
		}
		return nil
	}); bad != nil {
		return nil, bad
	}
	switch q := strings.TrimSpace(r.Query); {
	case q == "":
		return nil, rules.Invalid("query is required: what to search the web for.")
	case rules.Chars(q) > MaxQuery:
		return nil, rules.Invalid("query is longer than " + strconv.Itoa(MaxQuery) + " characters.")
	}
	return r, nil
}

// Plan validates a search and holds one call.
func Plan(req *vendor.JobRequest) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, Parse, func(r *Request) *vendor.JobPlan {
		return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}}
	})
}

// Result is one search result.
type Result struct{ Title, URL, Snippet string }

// Found is the outcome of a search: at most max_results results, one call
// settled.
func Found(r *Request, results []Result) *vendor.JobOutcome {
	if len(results) > r.MaxResults {
		results = results[:r.MaxResults]
	}
	list := rules.List(len(results), func(i int) *rules.Record {
		return rules.NewRecord().Str("title", results[i].Title).Str("url", results[i].URL).Str("snippet", results[i].Snippet)
	})
	return rules.Answer(rules.NewRecord().Str("object", "search.results").Str("query", r.Query).Raw("results", list).Bytes(),
		vendor.Units{Count: 1})
}
