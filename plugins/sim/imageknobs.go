package sim

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ImageKnobs are the switches of one image job: a channel's settings,
// then the markers of its prompt and reference URLs (PRODUCT §7, media
// and tasks).
type ImageKnobs struct {
	Latency time.Duration // latency=DUR: how long the job runs
	Fail    int           // fail=CODE: the job fails at its end with that status
	Error   int           // error=CODE: the submit is refused with that status
	Images  int           // images=N: images actually returned; -1 = as asked
	Hang    bool          // hang: the call never answers
	Cut     bool          // cut or cut=N: the call breaks without an answer
}

// MaxSimImages bounds an images marker.
const MaxSimImages = 40

// imageKnobs are a channel's knobs as an image job's defaults.
func imageKnobs(k Knobs) ImageKnobs {
	return ImageKnobs{Latency: k.Latency, Error: k.ErrorStatus, Images: -1, Hang: k.Hang, Cut: k.Cutting}
}

// ScanImageMarkers applies the [sim:...] markers in texts to k: each text
// is read raw and, when it has a %, percent-decoded, so a marker in a
// reference URL's query string counts. Unknown or malformed items are
// prompt text like any other.
func ScanImageMarkers(k *ImageKnobs, texts ...string) {
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

func (k *ImageKnobs) scan(text string) {
	for spec := range markers(text) {
		for item := range specItems(spec) {
			k.set(item)
		}
	}
}

func (k *ImageKnobs) set(item string) {
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
	}
}

// SimulatedError is the message of an error a marker asked for.
func SimulatedError(status int, marker string) string {
	return "Simulated upstream error " + itoa(status) + " requested by [sim:" + marker + "=" + itoa(status) + "]."
}
