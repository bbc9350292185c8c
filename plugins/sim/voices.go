package sim

import (
	"strconv"

	"github.com/tollgate-gw/tollgate/plugins/family/voice"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// simVoice clones voices synchronously: the upstream's voice id is
// simvoice_ and a hash of the sample (its link, or the upload's digest).

// clonedPrefix starts the ids of the voices the sim cloned.
const clonedPrefix = "simvoice_"

type presetVoice = voice.Preset

// VoicePresets are the sim's platform voices (docs/sim.md).
var VoicePresets = []voice.Preset{
	{ID: "alloy", Name: "Alloy"}, {ID: "ash", Name: "Ash"}, {ID: "coral", Name: "Coral"},
	{ID: "echo", Name: "Echo"}, {ID: "nova", Name: "Nova"}, {ID: "shimmer", Name: "Shimmer"},
}

type simVoice struct{}

func (simVoice) plan(req *vendor.JobRequest) *vendor.JobPlan {
	_, plan := voice.Plan(req)
	return plan
}

func (simVoice) upstreamJob() bool { return false }

func (simVoice) finish(req *vendor.JobRequest, _ JobKnobs) *vendor.JobOutcome {
	r, _ := voice.Parse(req)
	sample := r.AudioURL
	if r.File != nil {
		sample = r.File.SHA256 + r.File.Filename
	}
	id := clonedPrefix + strconv.FormatUint(fnv64(fnv64(fnvOffset, r.Name), sample), 16)
	return voice.Cloned(req, r, id)
}
