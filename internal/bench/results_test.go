package bench

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleResults() *Results {
	ttfb := Dist{P50: 900, P90: 1200, P99: 2000}
	return &Results{
		Machine: Machine{NProc: 2, CPU: "test cpu", GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", Date: time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)},
		Window:  "3s", Rounds: 2, PeakRSS: 60 << 20,
		Cases: []CaseResult{
			{Case: "completions", Concurrency: 1, Direct: Side{Requests: 100, RPS: 5000, Latency: Dist{P50: 180}}, Gateway: Side{Requests: 100, RPS: 2000, Latency: Dist{P50: 300}}, AddedP50US: 120, ThroughputRatio: 0.4},
			{Case: "stream-20", Streaming: true, Concurrency: 1, Direct: Side{TTFB: &ttfb}, Gateway: Side{TTFB: &ttfb}, AddedP50US: 200},
			{Case: "completions", Concurrency: 64, Gateway: Side{CPUPerRequestUS: 95, RoundRPS: []float64{1, 2}}, ThroughputRatio: 0.3},
			{Case: "stream-20", Streaming: true, Concurrency: 64, Gateway: Side{CPUPerRequestUS: 240}, ThroughputRatio: 0.2},
			// Seeded cases are reported, not judged.
			{Case: "completions", Concurrency: 64, SeededRows: 1000, Gateway: Side{CPUPerRequestUS: 900, Errors: 0}, ThroughputRatio: 0.01},
		},
	}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	r := sampleResults()
	r.Evaluate()
	want := map[string]bool{
		"completions: added p50 latency at c=1":        true,
		"stream-20: added p50 latency at c=1":          false, // 200 > 150
		"completions: gateway CPU per request at c=64": true,
		"completions: throughput vs direct at c=64":    true,
		"stream-20: gateway CPU per request at c=64":   true, // 240 <= 250, the stream budget
		"stream-20: throughput vs direct at c=64":      false,
		"peak RSS of gateway and plugins":              true,
		"requests that failed":                         true,
	}
	if len(r.Checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(r.Checks), len(want), r.Checks)
	}
	for _, c := range r.Checks {
		t.Run(c.Name, func(t *testing.T) {
			pass, ok := want[c.Name]
			if !ok {
				t.Fatalf("unexpected check %q", c.Name)
			}
			if c.Pass != pass {
				t.Fatalf("pass = %v, want %v (%+v)", c.Pass, pass, c)
			}
		})
	}
	if r.Passed() {
		t.Fatal("Passed with failing checks")
	}

	t.Run("errors fail the run", func(t *testing.T) {
		r := sampleResults()
		r.Cases = r.Cases[:1]
		r.Cases[0].Gateway.Errors = 3
		r.Evaluate()
		if r.Errors != 3 || r.Passed() {
			t.Fatalf("errors %d, passed %v", r.Errors, r.Passed())
		}
		var b bytes.Buffer
		if err := r.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "WARNING: 3 request(s) failed") {
			t.Fatalf("markdown does not warn:\n%s", b.String())
		}
	})
	t.Run("everything within budget passes", func(t *testing.T) {
		r := sampleResults()
		r.Cases = r.Cases[:1]
		r.Evaluate()
		if !r.Passed() {
			t.Fatalf("%+v", r.Checks)
		}
		var b bytes.Buffer
		if err := r.WriteChecks(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), "budget: PASS\n") || strings.Contains(b.String(), "FAIL") {
			t.Fatalf("checks:\n%s", b.String())
		}
	})
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	r := sampleResults()
	r.Evaluate()
	r.Notes = []string{"a note"}
	path := filepath.Join(t.TempDir(), "latest.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed the results:\n got %+v\nwant %+v", got, r)
	}
	if _, err := ReadJSON(filepath.Join(t.TempDir(), "absent.json")); err == nil {
		t.Fatal("reading an absent file succeeded")
	}
}

func TestWriteMarkdown(t *testing.T) {
	t.Parallel()
	r := sampleResults()
	r.Evaluate()
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| completions | 1 | 5000 | 2000 | 40% | 180 / 0 / 0 | 300 / 0 / 0 | 120 | – | 0 (0) | 0 |",
		"| stream-20 | 1 |",
		"900 / 900",
		"completions (after 1000 log rows)",
		"60.0 MB",
		"2 CPU(s) (test cpu)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "WARNING") {
		t.Errorf("warning without errors:\n%s", md)
	}
}
