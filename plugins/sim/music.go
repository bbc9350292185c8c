package sim

import (
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/family/music"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// simMusic serves the music family as an upstream job: two songs a
// generation, each [sim:seconds=N] long (default 120), titled after the
// request's title or the prompt's first words.
type simMusic struct{}

func (simMusic) plan(req *vendor.JobRequest) *vendor.JobPlan {
	_, plan := music.Plan(req)
	return plan
}

func (simMusic) upstreamJob() bool { return true }

func (simMusic) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := music.Parse(req)
	secs := 120.0
	if k.Seconds >= 0 {
		secs = k.Seconds
	}
	title := r.Title
	if title == "" {
		words := strings.Fields(stripMarkers(r.Prompt))
		title = strings.Join(words[:min(len(words), 4)], " ")
	}
	seed := fnv64(fnvOffset, unsafeString(req.Body))
	songs := make([]music.Song, music.SongsPerGeneration)
	for i := range songs {
		songs[i] = music.Song{Data: AudioMP3(2048, seed+uint64(i)), ContentType: "audio/mpeg",
			Title: title + " (take " + strconv.Itoa(i+1) + ")", Duration: secs}
	}
	return music.Succeeded(req, r, songs)
}
