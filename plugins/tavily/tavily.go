// Package tavily is the vendor plugin for Tavily's search API: the search
// family on POST /search {query, max_results, ...}, whose results (title,
// url, content) become the family's (title, url, snippet). A model whose
// upstream id is basic or advanced is that search_depth (Tavily bills
// them differently, so the model's price holds whatever the client sends).
// The key goes in Authorization: Bearer, or, for servers that copy
// Tavily's older form, in the body's api_key (channel setting
// key_in_body).
package tavily

import (
	"context"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/search"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// SettingKeyInBody sends the key as the body's api_key instead of a
// header ("true").
const SettingKeyInBody = "key_in_body"

const pathSearch = "/search"

// Vendor is the tavily vendor: the search family through vendor.Jobs.
type Vendor struct {
	*httpvendor.Vendor
	httpvendor.Synchronous
}

// New returns the tavily vendor with no channels yet.
func New() *Vendor {
	return &Vendor{Vendor: httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "tavily", Families: []string{search.Family}, Version: httpvendor.Version,
			Specs: []vendor.FamilySpec{search.Spec()}},
		Prepare: prepare,
	})}
}

type route struct {
	*httpvendor.JobRoute
	bodyKey string // the key, when it goes in the body
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	jr, err := httpvendor.JobChannel(ch, httpvendor.Bearer, false, SettingKeyInBody)
	if err != nil {
		return nil, err
	}
	rt := &route{JobRoute: jr}
	if v, ok := ch.Settings[SettingKeyInBody]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, vendor.ChannelError(ch.Name, "settings", "%s = %q: want true or false", SettingKeyInBody, v)
		}
		if b {
			key, _ := httpvendor.APIKey(ch, true)
			rt.bodyKey, rt.Header = key, nil
		}
	}
	return rt, nil
}

// Validate checks a search by the family's rules; it is synchronous.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	_, plan := search.Plan(req)
	return plan, nil
}

// Run searches.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, plan := search.Plan(req)
	if plan.Error != nil {
		return rules.Refused(plan.Error), nil
	}
	body := rules.NewRecord().Str("query", r.Query).Int("max_results", int64(r.MaxResults))
	depth := req.Model.Upstream == "basic" || req.Model.Upstream == "advanced"
	if depth {
		body.Str("search_depth", req.Model.Upstream)
	}
	for _, f := range r.Extra {
		if f.Name != "api_key" && !(depth && f.Name == "search_depth") {
			body.Raw(f.Name, f.Raw)
		}
	}
	if rt, ok := v.Route(req.Channel); ok && rt.(*route).bodyKey != "" {
		body.Str("api_key", rt.(*route).bodyKey)
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: pathSearch, ContentType: "application/json",
		Body: body.Bytes(), Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return rules.Failed(resp.Status, resp.Body), nil
	}
	b := gjson.ParseBytes(resp.Body)
	if !b.Get("results").IsArray() {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "tavily: the answer holds no results"}
	}
	var out []search.Result
	b.Get("results").ForEach(func(_, it gjson.Result) bool {
		out = append(out, search.Result{Title: it.Get("title").Str, URL: it.Get("url").Str, Snippet: it.Get("content").Str})
		return true
	})
	return search.Found(r, out), nil
}

var _ vendor.Jobs = (*Vendor)(nil)
