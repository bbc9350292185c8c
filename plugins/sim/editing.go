package sim

import (
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/family/clip"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Social-style editing as the sim serves it, each call an upstream job:
// a recognition finds 3 to 6 lines of a fixed script chosen by the link's
// hash, spread over the source's length ([sim:seconds=N] on the link,
// else 42 seconds; over 300 is the client's 400), or none with
// [sim:nospeech]; [sim:latency=DUR] makes it slow (past the model's
// synchronous wait: 504). A compose accepts the templates the rules list
// (the model's file, or the built-in set) and answers a small MP4.

type simSubtitle struct{ checkedJobs }

func (simSubtitle) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := subtitle.Parse(req, true)
	secs := 42.0
	if k.Seconds >= 0 {
		secs = k.Seconds
	}
	if k.NoSpeech {
		return subtitle.NoSpeech(r.VideoURL)
	}
	return subtitle.Recognised(req, r, simLines(r.VideoURL, secs), secs)
}

// simLines are the lines the sim hears in the video at link, secs long.
func simLines(link string, secs float64) []subtitle.Line {
	h := fnv64(fnvOffset, link)
	n := 3 + int(h%4)
	span := int64(secs*1000) / int64(n)
	lines := make([]subtitle.Line, n)
	at := int(h>>16) % len(scriptWords)
	for i := range lines {
		words := make([]string, 4+int((h>>(8+i))%5))
		for w := range words {
			words[w] = scriptWords[at%len(scriptWords)]
			at++
		}
		lines[i] = subtitle.Line{Start: int64(i) * span, End: int64(i+1)*span - 1, Content: strings.Join(words, " ")}
	}
	return lines
}

type simClip struct{ checkedJobs }

func (simClip) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := clip.Parse(req, true)
	secs := 42.0
	if n := len(r.Lines); n > 0 {
		secs = float64(r.Lines[n-1].End+1) / 1000
	}
	return clip.Composed(req, r, simVideoResult(req, k, secs))
}
