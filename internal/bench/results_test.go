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
	px := &Side{Requests: 100, RPS: 2500, Latency: Dist{P50: 280}, CPUPerRequestUS: 100}
	return &Results{
		Machine: Machine{NProc: 2, CPU: "test cpu", GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", Date: time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC),
			LoadBefore: 1.5, LoadAfter: 2.25},
		Window: "3s", Rounds: 2, PeakRSS: 160 << 20, PeakAnonRSS: 60 << 20, PeakAnonGatewayRSS: 48 << 20,
		Cases: []CaseResult{
			{Case: "completions", Concurrency: 1, Direct: Side{Requests: 100, RPS: 5000, Latency: Dist{P50: 180}}, Proxy: px,
				Gateway: Side{Requests: 100, RPS: 2000, Latency: Dist{P50: 300}, CPUPerRequestUS: 150, PluginCPUPerRequestUS: 60}, AddedP50US: 120, ThroughputRatio: 0.4,
				CPURatio: &Ratio{Value: 1.5}, AddedP50Ratio: &Ratio{Value: 1.1, Rounds: []float64{1.0, 1.2}},
				InProcess: &Side{Requests: 100, RPS: 2400}, InProcessAddedP50Ratio: &Ratio{Value: 0.9}},
			{Case: "stream-20", Streaming: true, Concurrency: 1, Direct: Side{TTFB: &ttfb}, Gateway: Side{TTFB: &ttfb}, AddedP50US: 200,
				AddedP50Ratio: &Ratio{Value: 1.5}},
			{Case: "completions", Concurrency: 64, Gateway: Side{CPUPerRequestUS: 95, RoundRPS: []float64{1, 2}}, ThroughputRatio: 0.3,
				CPURatio: &Ratio{Value: 0.9, Rounds: []float64{0.85, 0.95}}, InProcessCPURatio: &Ratio{Value: 0.8}},
			{Case: "stream-20", Streaming: true, Concurrency: 64, Gateway: Side{CPUPerRequestUS: 240}, ThroughputRatio: 0.2,
				CPURatio: &Ratio{Value: 1.05}},
			// A translated stream is judged against the native one only.
			{Case: "messages-stream-translated", Streaming: true, Translated: true, Concurrency: 64, Gateway: Side{CPUPerRequestUS: 260},
				CPURatio: &Ratio{Value: 1.5}},
			// Seeded cases are reported, not judged.
			{Case: "completions", Concurrency: 64, SeededRows: 1000, Gateway: Side{CPUPerRequestUS: 900, Errors: 0}, ThroughputRatio: 0.01,
				CPURatio: &Ratio{Value: 9}},
		},
	}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	r := sampleResults()
	r.Evaluate()
	want := map[string]bool{
		"completions: added p50 at c=1 ÷ the proxy's":                        true,
		"stream-20: added p50 at c=1 ÷ the proxy's":                          false, // 1.5 > 1.2
		"completions: CPU per call at c=64 ÷ the proxy's, worst round":       true,  // 0.95 <= 1.0
		"completions, vendor in process: CPU per call at c=64 ÷ the proxy's": true,
		"stream-20: CPU per call at c=64 ÷ the proxy's":                      true,  // 1.05 <= 1.1, the stream budget
		"translated stream's CPU at c=64 ÷ the native stream's":              false, // 260/240 > 1.05
		"anonymous memory of gateway and plugins under load":                 true,
		"requests that failed":                                               true,
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

	t.Run("a worse round fails the non-streaming line", func(t *testing.T) {
		r := sampleResults()
		r.Cases[2].CPURatio = &Ratio{Value: 0.95, Rounds: []float64{0.9, 1.01}}
		r.Evaluate()
		for _, c := range r.Checks {
			if strings.HasPrefix(c.Name, "completions: CPU per call") && (c.Pass || c.Value != 1.01) {
				t.Fatalf("%+v", c)
			}
		}
	})
	t.Run("errors fail the run", func(t *testing.T) {
		r := sampleResults()
		r.Cases = r.Cases[:1]
		r.Cases[0].Gateway.Errors = 3
		r.Cases[0].Proxy = &Side{Errors: 1}
		r.Evaluate()
		if r.Errors != 4 || r.Passed() {
			t.Fatalf("errors %d, passed %v", r.Errors, r.Passed())
		}
		var b bytes.Buffer
		if err := r.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "WARNING: 4 request(s) failed") {
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
	t.Run("too much anonymous memory fails", func(t *testing.T) {
		r := sampleResults()
		r.Cases = r.Cases[:1]
		r.PeakAnonRSS = 90 << 20
		r.Evaluate()
		if r.Passed() {
			t.Fatalf("%+v", r.Checks)
		}
	})
}

func TestRatio(t *testing.T) {
	t.Parallel()
	var none *Ratio
	if none.String() != "–" || none.Worst() != 0 {
		t.Fatal("nil ratio")
	}
	r := &Ratio{Value: 1.234, Rounds: []float64{1.3, 1.1, 1.2}}
	if r.String() != "1.23× (1.10–1.30)" || r.Worst() != 1.3 {
		t.Fatalf("%s %v", r, r.Worst())
	}
	if s := (&Ratio{Value: 2}).String(); s != "2.00×" {
		t.Fatal(s)
	}
	direct := &Side{Latency: Dist{P50: 100}, RoundP50US: []float64{100, 110}}
	proxy := &Side{Latency: Dist{P50: 300}, RoundP50US: []float64{300, 310}, CPUPerRequestUS: 200, RoundCPUUS: []float64{190, 210}}
	g := &Side{Latency: Dist{P50: 340}, RoundP50US: []float64{320, 370}, CPUPerRequestUS: 220, RoundCPUUS: []float64{190, 250}}
	cpu, added := ratios(direct, proxy, g)
	if cpu.Value != 1.1 || !reflect.DeepEqual(cpu.Rounds, []float64{1, 1.19}) {
		t.Fatalf("cpu %+v", cpu)
	}
	if added.Value != 1.2 || !reflect.DeepEqual(added.Rounds, []float64{1.1, 1.3}) {
		t.Fatalf("added %+v", added)
	}
	if ratio(1, 0) != 0 || ratio(1, -1) != 0 {
		t.Fatal("a ratio to nothing")
	}
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
	r.Profiles = []string{"bench-results/profiles/cpu-completions.pprof"}
	r.Evaluate()
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| completions | 1 | 1.50× | 1.10× (1.00–1.20) | – | 0.90× |",
		"| completions | 64 | 0.90× (0.85–0.95) | – | 0.80× | – |",
		"| completions | 1 | direct | 5000 | 180 / 0 / 0 | – | – | – | 0 |",
		"| completions | 1 | proxy | 2500 | 280 / 0 / 0 | 100 | – | 100 | 0 |",
		"| completions | 1 | gateway | 2000 | 300 / 0 / 0 | 120 | – | 150 (60) | 0 |",
		"| completions | 1 | gateway, vendor in process | 2400 |",
		"| stream-20 | 1 | direct | 0 | 0 / 0 / 0 | – | 900 |",
		"completions (after 1000 log rows)",
		"160.0 MB",
		"60.0 MB (the gateway's process 48.0 MB, its plugins' 12.0 MB)",
		"2 CPU(s) (test cpu)",
		"load average 1.5 at the start, 2.2 at the end",
		"FAIL  stream-20: added p50 at c=1 ÷ the proxy's: 1.50× (budget <= 1.2×)",
		"`bench-results/profiles/cpu-completions.pprof`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "WARNING") {
		t.Errorf("warning without errors:\n%s", md)
	}
}
