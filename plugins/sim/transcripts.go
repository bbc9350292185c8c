package sim

import (
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/family/transcript"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// simTranscript recognises a script from the link: [sim:nospeech] finds
// none; [sim:seconds=N] is the video's length (default 42).
type simTranscript struct{ checkedJobs }

func (simTranscript) upstreamJob() bool { return false }

// scriptWords are the words of the sim's scripts.
var scriptWords = strings.Fields("today we take a short drive along the coast road and stop at the old toll booth " +
	"where the keeper still waves every car through with a smile")

func (simTranscript) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := transcript.Parse(req, true)
	if k.NoSpeech {
		return transcript.NoSpeech(r.URL)
	}
	secs := 42.0
	if k.Seconds >= 0 {
		secs = k.Seconds
	}
	h := fnv64(fnvOffset, r.URL)
	n := 12 + int(h%12)
	words := make([]string, n)
	for i := range words {
		words[i] = scriptWords[(int(h>>8)+i*7)%len(scriptWords)]
	}
	return transcript.Extracted(strings.Join(words, " ")+".", "en", secs)
}
