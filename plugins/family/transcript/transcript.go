// Package transcript holds the transcript family's rules: POST
// /v1/transcripts/extract turns a short video's link into its spoken
// script, synchronously, per call. The body is {url}; a share text with a
// link inside is accepted (the link is found in it). The answer is {text,
// language, duration}; a video without recognisable speech is a 400
// invalid_request and is not charged. transcripttest is the suite every
// transcript plugin passes.
package transcript

import (
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Family is the family's id.
const Family = "transcript"

// OpExtract is the create route's operation.
const OpExtract = "extract"

// Spec is the family's contract with the gateway.
func Spec() vendor.FamilySpec {
	return vendor.FamilySpec{
		Name: Family, UnitType: "transcript", PriceUnit: "per_call", TaskPrefix: "trn_",
		Routes: []vendor.FamilyRoute{
			{Method: http.MethodPost, Path: "/v1/transcripts/extract", Kind: vendor.RouteCreate, Operation: OpExtract, MaxBody: 64 << 10},
		},
		AttemptTimeout: 240 * time.Second, CallTimeout: 280 * time.Second, ModelOptional: true,
		Examples: []vendor.Example{{Method: http.MethodPost, Path: "/v1/transcripts/extract",
			Body: `"url": "https://example.com/v/123"`}},
	}
}

// Request is an extract: the link found in the body's url.
type Request struct {
	URL string
}

// Parse reads and validates an extract. The link is one a client hands
// over for an upstream to fetch, so it passes the private-address policy
// (rules.PublicURL) unless allowPrivate.
func Parse(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobError) {
	body, bad := rules.Object(req.Body)
	if bad != nil {
		return nil, bad
	}
	if m := body.Get("model"); m.Exists() && m.Type != gjson.String && m.Type != gjson.Null {
		return nil, rules.Invalid("model must be a string.")
	}
	u := body.Get("url")
	switch {
	case !u.Exists() || u.Type == gjson.Null || u.Type == gjson.String && strings.TrimSpace(u.Str) == "":
		return nil, rules.Invalid("url is required: the short video's link, or a share text with the link inside.")
	case u.Type != gjson.String:
		return nil, rules.Invalid("url must be a string.")
	}
	link := rules.FindURL(u.Str)
	if link == "" {
		return nil, rules.Invalid("url holds no http(s) link; paste the video's link or its share text.")
	}
	if bad := rules.PublicURL("url", link, allowPrivate); bad != nil {
		return nil, bad
	}
	return &Request{URL: link}, nil
}

// Plan validates an extract and holds one call.
func Plan(req *vendor.JobRequest, allowPrivate bool) (*Request, *vendor.JobPlan) {
	return rules.Plan(req, Family, rules.WithPolicy(Parse, allowPrivate), func(r *Request) *vendor.JobPlan {
		return &vendor.JobPlan{Hold: []vendor.Units{{Count: 1}}}
	})
}

// Extracted is the outcome of a script the upstream recognised: {text,
// language, duration}, one call settled.
func Extracted(text, language string, duration float64) *vendor.JobOutcome {
	return rules.Answer(rules.NewRecord().Str("text", text).Str("language", language).Float("duration", duration).Bytes(),
		vendor.Units{Count: 1})
}

// NoSpeech is the outcome of a video without recognisable speech: the
// client's 400, not charged.
func NoSpeech(link string) *vendor.JobOutcome {
	return rules.Refused(rules.Invalid("no speech was recognised in the video at " + link + "; nothing was charged."))
}
