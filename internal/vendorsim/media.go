package vendorsim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// The media APIs beside chat and images, each on its vendor's paths with
// its auth, error bodies and state vocabulary: OpenAI's speech and videos
// (openai_media.go), a Suno-style music task API (suno.go), ElevenLabs'
// voice cloning, voices and text to speech (elevenlabs.go) and Tavily's
// search (tavily.go). Every one obeys the sim's job markers in the field
// its family's suites put them in: error=CODE refuses the call (or the
// submit) with the vendor's error for that status, fail=CODE fails the
// job at its end, latency=DUR is how long it runs, seconds=N the seconds
// it reports, hang never answers, cut drops the connection.

// serveMedia answers a media API's path; false when the path is none.
func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request) bool {
	switch p := r.URL.Path; {
	case p == "/v1/audio/speech":
		s.openaiSpeech(w, r)
	case p == "/v1/videos" || strings.HasPrefix(p, "/v1/videos/"):
		s.openaiVideos(w, r)
	case strings.HasPrefix(p, "/api/v1/"):
		s.suno(w, r)
	case p == "/v1/voices" || p == "/v1/voices/add" || strings.HasPrefix(p, "/v1/text-to-speech/"):
		s.elevenLabs(w, r)
	case p == "/search":
		s.tavily(w, r)
	case strings.HasPrefix(p, "/sim-media/"):
		s.serveMediaFile(w, r)
	default:
		return false
	}
	return true
}

// maxMediaBody bounds a media request (a voice sample, a reference image).
const maxMediaBody = 64 << 20

// readMedia reads a media request's body and hands it to the Record hook;
// false when the client went away or the body is too large (answered by
// tooLarge).
func (s *Server) readMedia(w http.ResponseWriter, r *http.Request, tooLarge func()) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMediaBody+1))
	if err != nil {
		return nil, false
	}
	if s.opts.Record != nil {
		s.opts.Record(Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: bytes.Clone(body)})
	}
	if len(body) > maxMediaBody {
		tooLarge()
		return nil, false
	}
	return body, true
}

// jobKnobs are the server's knobs as a job's defaults, then the markers
// in texts.
func (s *Server) jobKnobs(texts ...string) sim.JobKnobs {
	k := sim.JobKnobs{Latency: s.opts.Knobs.Latency, Error: s.opts.Knobs.ErrorStatus, Images: -1, Seconds: -1,
		Hang: s.opts.Knobs.Hang, Cut: s.opts.Knobs.Cutting}
	sim.ScanJobMarkers(&k, texts...)
	return k
}

// answerSync plays a synchronous call's knobs: a hang or a cut (nothing
// answered), the submit's error, the latency, then the failure at its
// end. fail writes the vendor's error for a status; false means the call
// is answered (or dropped) and must not go on.
func answerSync(w http.ResponseWriter, r *http.Request, k sim.JobKnobs, fail func(status int, msg string)) bool {
	switch {
	case k.Hang:
		<-r.Context().Done()
		return false
	case k.Cut:
		panic(http.ErrAbortHandler)
	case k.Error != 0:
		fail(k.Error, sim.SimulatedError(k.Error, "error"))
		return false
	}
	if !sleep(r, k.Latency) {
		return false
	}
	if k.Fail != 0 {
		fail(k.Fail, sim.SimulatedError(k.Fail, "fail"))
		return false
	}
	return true
}

// sleep waits d, or until the client goes away (false).
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// jsonReply writes a JSON answer.
func jsonReply(w http.ResponseWriter, status int, body []byte) {
	for k, v := range sim.ErrorHeaders(status) {
		w.Header()[http.CanonicalHeaderKey(k)] = []string{v}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// simJob is an upstream job of a task API (a video, a generation): it
// runs its knobs' latency from its start, then ends as they say.
type simJob struct {
	id      string
	started time.Time
	k       sim.JobKnobs
	// what the job was asked, as its API records it
	model, prompt, title, style, size string
	seconds                           float64
	param                             []byte
	host                              string // where its files are served
}

// progress is how far the job is, 0 to 100, and whether it ended.
func (j *simJob) progress(now time.Time) (int, bool) {
	el := now.Sub(j.started)
	if el >= j.k.Latency {
		return 100, true
	}
	return int(100 * el / j.k.Latency), false
}

// jobTable holds the jobs of every task API of a server.
type jobTable struct {
	mu   sync.Mutex
	jobs map[string]*simJob
}

func (t *jobTable) add(j *simJob) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jobs == nil {
		t.jobs = map[string]*simJob{}
	}
	t.jobs[j.id] = j
}

func (t *jobTable) get(id string) (*simJob, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j, ok := t.jobs[id]
	return j, ok
}

func (t *jobTable) remove(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.jobs[id]
	delete(t.jobs, id)
	return ok
}

// newID is prefix and n random bytes in hex.
func newID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
