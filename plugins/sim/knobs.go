package sim

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"
)

// Knobs are the behaviour switches of one call. Channel settings set the
// defaults; markers in the conversation override them.
type Knobs struct {
	ErrorStatus int           // error=CODE: answer with that status and the vendor's error body
	Cutting     bool          // cut=N given
	Cut         int           // cut=N: stream N events, then break
	Hang        bool          // hang: never answer
	Latency     time.Duration // latency=DUR: wait before answering
	Slow        time.Duration // slow=DUR: wait between stream events
	Chunks      int           // chunks=N: reply text in N content chunks (0: one per word)
	Words       int           // words=N: reply length in words (0: DefaultWords)
	Cached      int64         // cached=N: cached input tokens reported
	Written     int64         // written=N: input tokens reported as cache writes (Anthropic)
	Reasoning   int64         // reasoning=N: reasoning tokens reported (counted in output)
}

// DefaultWords is the reply length without a words marker.
const DefaultWords = 20

// maxWords bounds a words marker, so one prompt cannot ask for gigabytes.
const maxWords = 100000

const markerOpen = "[sim:"

// ParseSpec parses a fault setting: the marker syntax without brackets,
// several items separated by commas or spaces ("error=500", "cut=3,slow=10ms").
func ParseSpec(spec string, k *Knobs) error {
	for item := range specItems(spec) {
		if err := k.set(item); err != nil {
			return err
		}
	}
	return nil
}

// specItems are the items of a spec, separated by commas, spaces or
// semicolons.
func specItems(spec string) iter.Seq[string] {
	return strings.FieldsFuncSeq(spec, func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
}

// scanMarkers applies every well-formed [sim:...] marker in text to k.
// Malformed markers are ignored: they are prompt text like any other.
func scanMarkers(text string, k *Knobs) {
	for spec := range markers(text) {
		_ = ParseSpec(spec, k)
	}
}

// markers are the specs of the well-formed [sim:...] markers in text.
func markers(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for {
			i := strings.Index(text, markerOpen)
			if i < 0 {
				return
			}
			text = text[i+len(markerOpen):]
			j := strings.IndexByte(text, ']')
			if j < 0 || !yield(text[:j]) {
				return
			}
			text = text[j+1:]
		}
	}
}

// stripMarkers removes [sim:...] markers from text, so a colon inside one
// does not count as prompt punctuation.
func stripMarkers(text string) string {
	if !strings.Contains(text, markerOpen) {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, markerOpen)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		j := strings.IndexByte(text[i:], ']')
		if j < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		text = text[i+j+1:]
	}
}

func (k *Knobs) set(item string) error {
	name, val, hasVal := strings.Cut(item, "=")
	if name == "hang" && !hasVal {
		k.Hang = true
		return nil
	}
	if !hasVal {
		return fmt.Errorf("sim: %q needs a value (name=value)", item)
	}
	switch name {
	case "error":
		n, err := strconv.Atoi(val)
		if err != nil || n < 400 || n > 599 {
			return fmt.Errorf("sim: error=%s: want an HTTP status 400..599", val)
		}
		k.ErrorStatus = n
	case "cut", "chunks", "words":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || (name != "cut" && n == 0) || n > maxWords {
			return fmt.Errorf("sim: %s=%s: want a whole number 1..%d", name, val, maxWords)
		}
		switch name {
		case "cut":
			k.Cut, k.Cutting = n, true
		case "chunks":
			k.Chunks = n
		default:
			k.Words = n
		}
	case "cached", "written", "reasoning":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return fmt.Errorf("sim: %s=%s: want a whole number of tokens", name, val)
		}
		switch name {
		case "cached":
			k.Cached = n
		case "written":
			k.Written = n
		default:
			k.Reasoning = n
		}
	case "latency", "slow":
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return fmt.Errorf("sim: %s=%s: want a duration like 50ms", name, val)
		}
		if name == "latency" {
			k.Latency = d
		} else {
			k.Slow = d
		}
	default:
		return fmt.Errorf("sim: unknown knob %q (error, cut, hang, latency, slow, chunks, words, cached, written, reasoning)", name)
	}
	return nil
}
