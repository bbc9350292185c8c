package images

import (
	"math"
	"strconv"
	"strings"
)

// Aspects are the ratios a fixed-grid model takes (rule 3).
var Aspects = [...]string{"1:1", "16:9", "9:16", "4:3", "3:4"}

// aspectTolerance is how far (as a ratio of ratios) a requested frame may
// be from its nearest aspect and still snap to it. 1.2 covers every gap
// between the five (the widest, 4:3 to 16:9, is 1.33x, so its midpoint is
// 1.155x from each) and lets 2:1 snap to 16:9, while 21:9 (1.31x past
// 16:9) or 1:3 get the model's default frame (docs/decisions.md).
const aspectTolerance = 1.2

// Shaped is what a vendor sends upstream after the family's shaping.
type Shaped struct {
	Prompt string
	// N is the n to send: 1 for a fixed-grid model (rule 2).
	N int
	// Size is the size to send, unmodified (rule 4), or "" to send none: a
	// size-ignoring model (rule 6) or a fixed-grid model, whose frame is
	// Aspect instead.
	Size string
	// Aspect is a fixed-grid model's frame: the nearest of Aspects to the
	// requested size, or "" for the model's default frame (rule 3).
	Aspect string
}

// Shape applies the rules that change what goes upstream.
func (m Model) Shape(r *Request) Shaped {
	s := Shaped{Prompt: r.Prompt, N: r.N, Size: r.Size}
	if m.IgnoreSize {
		s.Size = ""
	}
	if m.Grid > 0 {
		s.N, s.Size = 1, ""
		if !m.IgnoreSize {
			s.Aspect = Aspect(r.Size)
		}
		s.Prompt = WithTierFlag(r.Prompt, TierFlag(r.Quality))
	}
	return s
}

// Aspect is the nearest of Aspects to a size (WxH, or W:H), or "" when the
// size is omitted, of another form, or far from all of them.
func Aspect(size string) string {
	w, h := ParseSize(size)
	if w == 0 {
		ws, hs, ok := strings.Cut(strings.TrimSpace(size), ":")
		if !ok {
			return ""
		}
		var err1, err2 error
		w, err1 = strconv.Atoi(ws)
		h, err2 = strconv.Atoi(hs)
		if err1 != nil || err2 != nil || w <= 0 || h <= 0 {
			return ""
		}
	}
	want := math.Log(float64(w) / float64(h))
	best, dist := "", math.Inf(1)
	for _, a := range Aspects {
		aw, ah, _ := strings.Cut(a, ":")
		x, _ := strconv.Atoi(aw)
		y, _ := strconv.Atoi(ah)
		if d := math.Abs(want - math.Log(float64(x)/float64(y))); d < dist {
			best, dist = a, d
		}
	}
	if dist > math.Log(aspectTolerance) {
		return ""
	}
	return best
}

// Tier flags a fixed-grid model's prompt carries (rule 3).
const (
	FlagSD = "--sd"
	FlagHD = "--hd"
)

// TierFlag is the output tier flag for a request's quality: --hd for
// "hd" or "high", --sd for anything else or none (docs/decisions.md).
func TierFlag(quality string) string {
	switch strings.ToLower(strings.TrimSpace(quality)) {
	case "hd", "high":
		return FlagHD
	}
	return FlagSD
}

// WithTierFlag appends flag to the prompt, unless the prompt already
// carries a tier flag of its own (the client chose).
func WithTierFlag(prompt, flag string) string {
	for _, f := range strings.Fields(prompt) {
		if f == FlagSD || f == FlagHD {
			return prompt
		}
	}
	return strings.TrimRight(prompt, " \t\r\n") + " " + flag
}
