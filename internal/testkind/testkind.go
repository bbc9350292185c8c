// Package testkind marks the tests of each kind CI must see run
// (PostgreSQL, real plugin processes, SIGKILL, the store as an
// unprivileged user) and counts them in the record of a `go test -json`
// run (gotestsum --jsonfile): a suite whose exit code is 0 because every
// test of a kind skipped, or none was found, does not pass CI.
package testkind

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
)

// Kind is a kind of test CI requires.
type Kind string

// The kinds CI requires at least one passed test of.
const (
	Postgres     Kind = "postgres"     // a PostgreSQL server the test started
	Plugins      Kind = "plugins"      // the real gateway with real plugin processes
	SIGKILL      Kind = "sigkill"      // a process SIGKILLed mid-work
	Unprivileged Kind = "unprivileged" // the store's self-recovery as a non-root user
)

// Required are the kinds .ci/run requires.
var Required = []Kind{Postgres, Plugins, SIGKILL, Unprivileged}

// marker starts the line Mark logs; Count finds it in a test's output.
const marker = "tollgate-test-kind: "

// Mark records in t's output that t is of kind k. Call it before anything
// that may skip t, so a skip is counted as one of its kind.
func Mark(t testing.TB, k Kind) {
	t.Helper()
	t.Log(marker + string(k))
}

// InCI reports whether the tests run in CI, where a test that cannot run
// fails instead of skipping.
func InCI() bool { return os.Getenv("CI") == "true" }

// Result is what one test of a kind ended with.
type Result struct {
	Test   string // package path and test name
	Action string // pass, fail or skip
}

// Report is a run's tests per kind.
type Report struct {
	Kinds map[Kind][]Result
}

// Passed is how many tests of k passed.
func (r *Report) Passed(k Kind) int {
	n := 0
	for _, res := range r.Kinds[k] {
		if res.Action == "pass" {
			n++
		}
	}
	return n
}

// Problems are what make the run fail CI: a required kind with no test
// passed, and every test of a kind that skipped.
func (r *Report) Problems(required []Kind) []string {
	var out []string
	for _, k := range required {
		if r.Passed(k) == 0 {
			out = append(out, fmt.Sprintf("no %s test passed (%d ran)", k, len(r.Kinds[k])))
		}
	}
	for _, k := range r.sortedKinds() {
		for _, res := range r.Kinds[k] {
			if res.Action == "skip" {
				out = append(out, fmt.Sprintf("%s test %s skipped", k, res.Test))
			}
		}
	}
	return out
}

// Summary is one line per kind: how many passed, failed, skipped.
func (r *Report) Summary() string {
	var b strings.Builder
	for _, k := range r.sortedKinds() {
		counts := map[string]int{}
		for _, res := range r.Kinds[k] {
			counts[res.Action]++
		}
		fmt.Fprintf(&b, "%s: %d passed, %d failed, %d skipped\n", k, counts["pass"], counts["fail"], counts["skip"])
	}
	return b.String()
}

func (r *Report) sortedKinds() []Kind {
	ks := make([]Kind, 0, len(r.Kinds))
	for k := range r.Kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// event is a line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// Count reads a `go test -json` record and returns its marked tests with
// how each ended. A marked test with no end (its package timed out or
// panicked) counts as failed.
func Count(r io.Reader) (*Report, error) {
	type key struct{ pkg, test string }
	kinds := map[key]map[Kind]bool{}
	ended := map[key]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if len(raw) == 0 || raw[0] != '{' {
			continue // gotestsum writes only events; go test may write build output
		}
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.Test == "" {
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			if _, after, ok := strings.Cut(e.Output, marker); ok {
				if kinds[k] == nil {
					kinds[k] = map[Kind]bool{}
				}
				kinds[k][Kind(strings.TrimSpace(after))] = true
			}
		case "pass", "fail", "skip":
			ended[k] = e.Action
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	rep := &Report{Kinds: map[Kind][]Result{}}
	for k, ks := range kinds {
		action := ended[k]
		if action == "" {
			action = "fail"
		}
		for kind := range ks {
			rep.Kinds[kind] = append(rep.Kinds[kind], Result{Test: k.pkg + " " + k.test, Action: action})
		}
	}
	for _, rs := range rep.Kinds {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Test < rs[j].Test })
	}
	return rep, nil
}

// Short skips t under `go test -short`, outside CI. In CI a test that
// does not run fails instead: CI never asks for short runs.
func Short(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if InCI() {
		t.Fatalf("CI runs every test, and -short would skip this one: %s", why)
	}
	t.Skip(why)
}
