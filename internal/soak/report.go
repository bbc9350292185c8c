package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Minute is what one sampling interval of a soak saw: the gateway's
// process tree at its end, and the calls that finished within it.
type Minute struct {
	// At is the interval's end, from the start of the run.
	At string `json:"at"`
	// RSSKB is the resident memory of the gateway and its plugins.
	RSSKB int64 `json:"rss_kb"`
	// GatewayRSSKB is the gateway process's own.
	GatewayRSSKB int64 `json:"gateway_rss_kb"`
	// AnonKB is the anonymous part of RSSKB (heaps and stacks): the
	// rest maps the store's files and grows with the ledger by design.
	AnonKB int64 `json:"anon_kb"`
	// Goroutines is the gateway's go_goroutines.
	Goroutines int `json:"goroutines"`
	// OpenFiles is the open descriptors of the gateway and its plugins.
	OpenFiles int `json:"open_files"`
	// StoreFiles is how many of them are the store's table, value-log
	// and memtable files, whose count grows with the ledger by design.
	StoreFiles int `json:"store_files"`
	// Procs is how many processes the tree holds (the gateway and its
	// plugins): a plugin that died and came back shows as a dip.
	Procs    int     `json:"procs"`
	Calls    int     `json:"calls"`
	Errors   int     `json:"errors"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	ChatP99  float64 `json:"chat_p99_ms"`
	MediaP99 float64 `json:"media_p99_ms"`
	// FirstError is one of the interval's failures, for a reader.
	FirstError string `json:"first_error,omitempty"`
}

// Report is a soak run.
type Report struct {
	Started     string   `json:"started"`
	Duration    string   `json:"duration"`
	Interval    string   `json:"interval"`
	Concurrency int      `json:"concurrency"`
	Mix         []string `json:"mix"`
	Machine     string   `json:"machine"`
	Minutes     []Minute `json:"minutes"`
	// Held is what the soak's account still held once the load stopped
	// and its async jobs had settled: "0" when no hold leaked.
	Held string `json:"held"`
	// Verdict lines: each trend measured against the bar.
	Checks []Check `json:"checks"`
}

// Check is one flat-line test of a run.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// Growth bars: after the first interval (warm-up: pools, caches and the
// store's memtables fill), a flat line moves less than these between the
// early and the late part of the run.
const (
	MaxAnonGrowth       = 0.25 // a quarter more memory
	MaxGoroutineGrowth  = 0.25
	MaxOpenFilesGrowth  = 0.25
	MaxP99Growth        = 1.0 // twice the latency
	MaxErrorRatePercent = 0.1
)

// Evaluate fills r.Checks from its minutes: anonymous memory,
// goroutines, open files (the store's own aside) and p99 flat (the late third's mean against the early third's,
// warm-up excluded), errors rare, no hold left.
func (r *Report) Evaluate() {
	r.Checks = nil
	ms := r.Minutes
	if len(ms) > 1 {
		ms = ms[1:] // the first interval is warm-up
	}
	if len(ms) == 0 {
		r.Checks = append(r.Checks, Check{Name: "samples", Detail: "no interval was sampled"})
		return
	}
	flat := func(name string, limit float64, v func(Minute) float64, unit string) {
		early, late := thirds(ms, v)
		growth := 0.0
		if early > 0 {
			growth = (late - early) / early
		}
		r.Checks = append(r.Checks, Check{
			Name:   name + " flat",
			Passed: growth <= limit,
			Detail: fmt.Sprintf("early %.1f%s, late %.1f%s: %+.0f%% (bar %+.0f%%)", early, unit, late, unit, 100*growth, 100*limit),
		})
	}
	flat("anonymous memory", MaxAnonGrowth, func(m Minute) float64 { return float64(m.AnonKB) / 1024 }, " MB")
	flat("goroutines", MaxGoroutineGrowth, func(m Minute) float64 { return float64(m.Goroutines) }, "")
	flat("open files", MaxOpenFilesGrowth, func(m Minute) float64 { return float64(m.OpenFiles - m.StoreFiles) }, "")
	flat("p99", MaxP99Growth, func(m Minute) float64 { return m.P99MS }, " ms")
	calls, errs := 0, 0
	for _, m := range r.Minutes {
		calls += m.Calls
		errs += m.Errors
	}
	rate := 0.0
	if calls > 0 {
		rate = 100 * float64(errs) / float64(calls)
	}
	r.Checks = append(r.Checks, Check{
		Name: "errors", Passed: calls > 0 && rate <= MaxErrorRatePercent,
		Detail: fmt.Sprintf("%d of %d calls failed (%.3f%%, bar %.1f%%)", errs, calls, rate, MaxErrorRatePercent),
	})
	r.Checks = append(r.Checks, Check{
		Name: "holds", Passed: r.Held == "0",
		Detail: fmt.Sprintf("the account held %q after the load stopped and its jobs settled", r.Held),
	})
}

// thirds is the mean of v over the first and the last third of ms (one
// interval each at least).
func thirds(ms []Minute, v func(Minute) float64) (early, late float64) {
	n := max(len(ms)/3, 1)
	for _, m := range ms[:n] {
		early += v(m)
	}
	for _, m := range ms[len(ms)-n:] {
		late += v(m)
	}
	return early / float64(n), late / float64(n)
}

// Passed reports whether every check passed.
func (r *Report) Passed() bool {
	for _, c := range r.Checks {
		if !c.Passed {
			return false
		}
	}
	return len(r.Checks) > 0
}

// WriteMarkdown writes the per-interval table and the checks.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: %s at c=%d\n\n", r.Duration, r.Concurrency)
	fmt.Fprintf(&b, "Started %s on %s; one row per %s. Load: %s. The gateway and its plugins are real processes on loopback (`make soak`).\n\n",
		r.Started, r.Machine, r.Interval, strings.Join(r.Mix, ", "))
	b.WriteString("Memory is judged by its anonymous part and descriptors without the store's own files: the rest of RSS maps the store's files, and their count, both growing with the ledger by design.\n\n")
	b.WriteString("| at | RSS (MB, gateway + plugins) | anonymous (MB) | gateway RSS (MB) | goroutines | open files | store files | procs | calls | errors | p50 (ms) | p99 (ms) | chat p99 | media p99 |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range r.Minutes {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %d | %d | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f |\n",
			m.At, float64(m.RSSKB)/1024, float64(m.AnonKB)/1024, float64(m.GatewayRSSKB)/1024, m.Goroutines, m.OpenFiles, m.StoreFiles, m.Procs,
			m.Calls, m.Errors, m.P50MS, m.P99MS, m.ChatP99, m.MediaP99)
	}
	b.WriteString("\n## Checks\n\n")
	for _, c := range r.Checks {
		mark := "PASS"
		if !c.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "- %s %s: %s\n", mark, c.Name, c.Detail)
	}
	for _, m := range r.Minutes {
		if m.FirstError != "" {
			fmt.Fprintf(&b, "\nFirst error at %s: `%s`\n", m.At, m.FirstError)
			break
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes r to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads a report WriteJSON wrote.
func ReadJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
