package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The command's exit code: 0 when every required kind passed and none
// skipped, 1 when one did not, 2 when the record cannot be read.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ev := func(test, action, out string) string {
		if action == "output" {
			return `{"Action":"output","Package":"p","Test":"` + test + `","Output":"    x_test.go:1: tollgate-test-kind: ` + out + `\n"}` + "\n"
		}
		return `{"Action":"` + action + `","Package":"p","Test":"` + test + `"}` + "\n"
	}
	good := write("good.json", ev("TestA", "output", "postgres")+ev("TestA", "pass", "")+ev("TestB", "output", "sigkill")+ev("TestB", "pass", ""))
	skipped := write("skipped.json", ev("TestA", "output", "postgres")+ev("TestA", "pass", "")+ev("TestC", "output", "postgres")+ev("TestC", "skip", "")+ev("TestB", "output", "sigkill")+ev("TestB", "pass", ""))
	for _, c := range []struct {
		path, require string
		want          int
	}{
		{good, "postgres,sigkill", 0},
		{good, "postgres,sigkill,plugins", 1},
		{skipped, "postgres,sigkill", 1},
		{write("bad.json", "{"), "postgres", 2},
		{filepath.Join(dir, "missing.json"), "postgres", 2},
	} {
		if got := run(c.path, c.require); got != c.want {
			t.Errorf("run(%s, %s) = %d, want %d", filepath.Base(c.path), c.require, got, c.want)
		}
	}
}
