package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Error is a configuration that failed to load. It lists every problem found,
// one per line, each as "file:line,col-col: where: what".
type Error struct {
	Diagnostics hcl.Diagnostics
	// partial is the file as far as it loaded, when it did not.
	partial *Config
}

// Partial is the config as far as the file loaded despite its problems
// (nil when it is not a load's error): enough to start the plugins it
// names and add the problems only they can see, so that a file's problems
// show at once.
func (e *Error) Partial() *Config {
	return e.partial
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, d := range e.Diagnostics {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeDiag(&b, d)
	}
	return b.String()
}

func writeDiag(b *strings.Builder, d *hcl.Diagnostic) {
	if d.Subject != nil {
		b.WriteString(d.Subject.String())
		b.WriteString(": ")
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString("; ")
		b.WriteString(d.Detail)
	}
}

// at renders a range as file:line for "first defined at" hints.
func at(r hcl.Range) string {
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}

// sortDiags puts problems in file order, as a reader fixes them.
func sortDiags(ds hcl.Diagnostics) {
	slices.SortStableFunc(ds, func(a, b *hcl.Diagnostic) int {
		switch {
		case a.Subject == nil && b.Subject == nil:
			return 0
		case a.Subject == nil:
			return -1
		case b.Subject == nil:
			return 1
		}
		return a.Subject.Start.Byte - b.Subject.Start.Byte
	})
}
