package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Ref names a place in the config: a block (Kind and, for labelled blocks,
// Name) and optionally one of its attributes. Problems found after loading
// (a plugin refusing a channel, an unknown pipeline stage) are reported
// there, by file:line, like the loader's own.
type Ref struct {
	Kind string // "server", "channel", "plugin", "model", "pipeline", "stage", ...
	Name string // the block's label; "" for unlabelled blocks
	Attr string // "" for the block itself
}

// String is the Ref as problems print it: `channel "openai-main"`.
func (r Ref) String() string {
	if r.Name == "" {
		return r.Kind
	}
	return fmt.Sprintf("%s %q", r.Kind, r.Name)
}

// Refuse returns the problem msg at ref as a *Error: at the attribute when
// it was written, else at its block, else (the embedded default, or a block
// left out) without a position.
func (c *Config) Refuse(ref Ref, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if ref.Attr != "" && !strings.HasPrefix(msg, ref.Attr) {
		msg = ref.Attr + ": " + msg
	}
	if ref.Kind != "" {
		msg = ref.String() + ": " + msg
	}
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: msg}
	if r, ok := c.ranges[ref]; ok {
		d.Subject = r.Ptr()
	} else if r, ok := c.ranges[Ref{Kind: ref.Kind, Name: ref.Name}]; ok {
		d.Subject = r.Ptr()
	} else if c.Source == "" {
		d.Summary = "embedded default: " + msg
	} else {
		d.Summary = c.Source + ": " + msg
	}
	return &Error{Diagnostics: hcl.Diagnostics{d}}
}

// Has reports whether the file wrote the block or attribute ref.
func (c *Config) Has(ref Ref) bool {
	_, ok := c.ranges[ref]
	return ok
}

// Warnings are what loaded but probably is not what the operator meant (a
// model no channel serves, a plugin block no channel uses), one per line
// as "file:line,col-col: where: what". The gateway logs them at start and
// `tollgate config check` prints them.
func (c *Config) Warnings() []string {
	out := make([]string, 0, len(c.warnings))
	for _, d := range c.warnings {
		var b strings.Builder
		writeDiag(&b, d)
		out = append(out, b.String())
	}
	return out
}

// Suggest returns the option closest to name when it is close enough to
// be a typo of it (at most a third of its letters differ), else "".
func Suggest(name string, options []string) string {
	if near := Nearest(name, options, 1); len(near) > 0 {
		return near[0]
	}
	return ""
}

// maxSuggestName bounds the names Nearest compares: a typo is short, and
// the comparison costs the product of the lengths (a client may send a
// model id of megabytes).
const maxSuggestName = 256

// Nearest returns up to n options close enough to be typos of name, the
// closest first (ties in the options' order).
func Nearest(name string, options []string, n int) []string {
	if len(name) > maxSuggestName {
		return nil
	}
	type cand struct {
		o string
		d int
	}
	var near []cand
	limit := len(name)/3 + 1
	lower := strings.ToLower(name)
	for _, o := range options {
		if o == name || len(o) > maxSuggestName {
			continue
		}
		if d := distance(lower, strings.ToLower(o)); d < limit {
			near = append(near, cand{o, d})
		}
	}
	slices.SortStableFunc(near, func(a, b cand) int { return a.d - b.d })
	out := make([]string, 0, min(n, len(near)))
	for _, c := range near {
		if len(out) == n {
			break
		}
		if !slices.Contains(out, c.o) {
			out = append(out, c.o)
		}
	}
	return out
}

// didYouMean is Suggest as a clause for a message: ` (did you mean "x"?)`.
func didYouMean(name string, options []string) string {
	if s := Suggest(name, options); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// distance is the edit distance counting a swap of two neighbours as one
// edit (optimal string alignment): "nmae" is one edit from "name".
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
