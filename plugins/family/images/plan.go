package images

import (
	"net/http"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Plan is a plugin's Validate in one call: the request read and checked,
// the model's settings, and the plan with the units to hold, or its
// refusal. The plugin sets UpstreamJob. A malformed model setting is the
// operator's error: 500 internal_error, naming it.
func Plan(req *vendor.JobRequest) (*Request, Model, *vendor.JobPlan) {
	if req.Family != "" && req.Family != Family {
		return nil, Model{}, &vendor.JobPlan{Error: Invalid("not an images request (family " + req.Family + ").")}
	}
	m, err := ModelOf(req.Model)
	if err != nil {
		return nil, m, &vendor.JobPlan{Error: &vendor.JobError{Status: http.StatusInternalServerError,
			Code: "internal_error", Message: err.Error()}}
	}
	r, jerr := Parse(req)
	if jerr != nil {
		return nil, m, &vendor.JobPlan{Error: jerr}
	}
	return r, m, &vendor.JobPlan{Hold: m.Hold(r)}
}

// Refused is the outcome of a request that Run, Submit or Poll finds
// invalid: the plan's refusal as a failed job.
func Refused(e *vendor.JobError) *vendor.JobOutcome { return rules.Refused(e) }
