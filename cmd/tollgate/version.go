package main

import (
	"fmt"
	"runtime/debug"
)

// Set at build time by the Makefile:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=abc1234 -X main.date=2025-01-02T03:04:05Z"
//
// A plain `go build` leaves them empty; the module's VCS stamp fills in.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// versionLine is "VERSION (commit C, built D)", from the link flags or,
// failing them, the VCS information `go build` records.
func versionLine() string {
	c, d, dirty := commit, date, false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" && len(s.Value) >= 7 {
					c = s.Value[:7]
				}
			case "vcs.time":
				if d == "" {
					d = s.Value
				}
			case "vcs.modified":
				dirty = commit == "" && s.Value == "true"
			}
		}
	}
	if c == "" {
		c = "unknown"
	} else if dirty {
		c += "-dirty"
	}
	if d == "" {
		d = "unknown"
	}
	return fmt.Sprintf("%s (commit %s, built %s)", version, c, d)
}
