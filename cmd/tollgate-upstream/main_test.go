package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// --help prints the usage and is not a failure.
func TestHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var log bytes.Buffer
		if code := exitCode(run([]string{arg}, &log), &log); code != 0 || !strings.Contains(log.String(), "-listen") {
			t.Errorf("%s: exit %d, output %q", arg, code, log.String())
		}
	}
	var log bytes.Buffer
	if code := exitCode(run([]string{"--nope"}, &log), &log); code != 1 || !strings.Contains(log.String(), "error: flag provided but not defined") {
		t.Errorf("bad flag: exit %d, output %q", code, log.String())
	}
	if exitCode(errors.New("x"), &log) != 1 {
		t.Error("an error is exit 1")
	}
}
