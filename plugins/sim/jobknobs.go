package sim

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// JobKnobs are the switches of one job of any family: a channel's
// settings, then the job markers of its request (PRODUCT §7, media and
// tasks): the one parser of them every family of the sim, and the HTTP
// simulators, read.
type JobKnobs struct {
	Latency  time.Duration // latency=DUR: how long the job runs
	Fail     int           // fail=CODE: the job fails at its end with that status
	Error    int           // error=CODE: the submit is refused with that status
	Images   int           // images=N: images actually returned; -1 = as asked
	Seconds  float64       // seconds=N: seconds the upstream reports; -1 = as asked
	NoSpeech bool          // nospeech: no speech is recognised
	Hang     bool          // hang: the call never answers
	Cut      bool          // cut or cut=N: the call breaks without an answer
}

// MaxSimImages bounds an images marker.
const MaxSimImages = 40

// jobKnobs are a channel's knobs as a job's defaults.
func jobKnobs(k Knobs) JobKnobs {
	return JobKnobs{Latency: k.Latency, Error: k.ErrorStatus, Images: -1, Seconds: -1, Hang: k.Hang, Cut: k.Cutting}
}

// ScanJobMarkers applies the [sim:...] markers in texts to k: each text
// is read raw and, when it has a %, percent-decoded, so a marker in a
// URL's query string counts. An item without a value is a flag
// ([sim:nospeech]). Unknown or malformed items are text like any other.
func ScanJobMarkers(k *JobKnobs, texts ...string) {
	for _, t := range texts {
		k.scan(t)
		if strings.Contains(t, "%") {
			if d, err := url.QueryUnescape(t); err == nil && d != t {
				k.scan(d)
			} else if d, err := url.PathUnescape(t); err == nil && d != t {
				k.scan(d)
			}
		}
	}
}

func (k *JobKnobs) scan(text string) {
	for spec := range markers(text) {
		for item := range specItems(spec) {
			k.set(item)
		}
	}
}

func (k *JobKnobs) set(item string) {
	name, val, hasVal := strings.Cut(item, "=")
	switch name {
	case "hang":
		k.Hang = k.Hang || !hasVal
	case "cut":
		k.Cut = true
	case "latency":
		if d, err := time.ParseDuration(val); err == nil && d >= 0 {
			k.Latency = d
		}
	case "fail", "error":
		if n, err := strconv.Atoi(val); err == nil && n >= 400 && n <= 599 {
			if name == "fail" {
				k.Fail = n
			} else {
				k.Error = n
			}
		}
	case "images":
		if n, err := strconv.Atoi(val); err == nil && n >= 0 && n <= MaxSimImages {
			k.Images = n
		}
	case "seconds":
		if f, err := strconv.ParseFloat(val, 64); err == nil && f >= 0 && f <= 1e6 {
			k.Seconds = f
		}
	case "nospeech":
		k.NoSpeech = k.NoSpeech || !hasVal
	}
}

// SimulatedError is the message of an error a marker asked for.
func SimulatedError(status int, marker string) string {
	return "Simulated upstream error " + itoa(status) + " requested by [sim:" + marker + "=" + itoa(status) + "]."
}
