package main

import (
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

// selfOf is how the person runs this binary again from where they stand,
// from the program name they started it with: the path they typed
// ("bin/tollgate" after make run), or "tollgate" when the shell found it
// on the PATH. The commands the CLI and the banner print start with it,
// so they run as printed.
func selfOf(arg0 string) string {
	if !strings.ContainsRune(arg0, filepath.Separator) {
		return "tollgate"
	}
	p := filepath.Clean(arg0)
	if !filepath.IsAbs(p) && !strings.ContainsRune(p, filepath.Separator) {
		p = "." + string(filepath.Separator) + p // a bare name would be looked up on the PATH
	}
	return p
}

// self is selfOf the running command line.
func self(c *cli.Context) string {
	if s, _ := c.App.Metadata[metaSelf].(string); s != "" {
		return s
	}
	return "tollgate"
}

const metaSelf = "self"
