package sim

import (
	"net/http"
	"slices"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// simSpeech serves the speech family synchronously, as OpenAI's speech
// API does (a task with async: true runs in the gateway's background):
// wav is real silence, 60 ms a character; the other formats are shaped
// bytes. A voice is a preset (VoicePresets) or one the sim cloned; any
// other is the upstream's 400.
type simSpeech struct{}

func (simSpeech) plan(req *vendor.JobRequest) *vendor.JobPlan {
	_, plan := speech.Plan(req)
	return plan
}

func (simSpeech) upstreamJob() bool { return false }

func (simSpeech) finish(req *vendor.JobRequest, _ JobKnobs) *vendor.JobOutcome {
	r, _ := speech.Parse(req)
	if !knownVoice(r.Upstream) {
		return imageError(http.StatusBadRequest, "Voice '"+r.Upstream+"' not found.")
	}
	chars := int(min(int64(len([]rune(r.Input))), speech.MaxInput))
	var audio []byte
	if r.Format == "wav" {
		audio = AudioWAV(60 * chars)
	} else {
		audio = AudioMP3(64*chars, fnv64(fnvOffset, unsafeString(req.Body)))
	}
	return speech.Succeeded(req, r, audio, "")
}

// knownVoice reports whether the sim speaks with voice: a preset, or a
// voice it cloned.
func knownVoice(v string) bool {
	return strings.HasPrefix(v, clonedPrefix) || slices.ContainsFunc(VoicePresets, func(p presetVoice) bool { return p.ID == v })
}
