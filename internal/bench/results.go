package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Side is one target (direct or through the gateway) of a case at one
// concurrency, all rounds merged.
type Side struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	// RoundRPS is each window's throughput, to show the spread.
	RoundRPS []float64 `json:"round_rps"`
	Latency  Dist      `json:"latency"`
	// TTFB is the time to the first body byte (streams only).
	TTFB *Dist `json:"ttfb,omitempty"`
	// CPUPerRequestUS is the CPU time of the gateway and its plugin
	// processes per request (gateway side only).
	CPUPerRequestUS float64 `json:"cpu_per_request_us,omitempty"`
	// PluginCPUPerRequestUS is the plugin processes' part of it.
	PluginCPUPerRequestUS float64 `json:"plugin_cpu_per_request_us,omitempty"`
	// DatabaseCPUPerRequestUS is the PostgreSQL server's CPU per request
	// (a postgres store), beside the gateway's.
	DatabaseCPUPerRequestUS float64 `json:"database_cpu_per_request_us,omitempty"`
	FirstError              string  `json:"first_error,omitempty"`
}

// CaseResult compares the gateway with the direct call for one case at
// one concurrency.
type CaseResult struct {
	Case        string `json:"case"`
	Title       string `json:"title"`
	Streaming   bool   `json:"streaming"`
	Concurrency int    `json:"concurrency"`
	// DirectMeans says what the baseline call is for this case.
	DirectMeans string `json:"direct_means"`
	// SeededRows is how many log rows the store held beforehand (the
	// large-ledger check), 0 for the main cases.
	SeededRows int  `json:"seeded_rows,omitempty"`
	Direct     Side `json:"direct"`
	Gateway    Side `json:"gateway"`
	// AddedP50US is gateway p50 minus direct p50.
	AddedP50US float64 `json:"added_p50_us"`
	// ThroughputRatio is gateway rps over direct rps.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// PeakRSSBytes is the summed VmHWM of the gateway and its plugins
	// after this case's windows.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// Machine describes where the run happened.
type Machine struct {
	NProc     int       `json:"nproc"`
	CPU       string    `json:"cpu,omitempty"`
	GoVersion string    `json:"go_version"`
	OS        string    `json:"os"`
	Arch      string    `json:"arch"`
	Date      time.Time `json:"date"`
	Commit    string    `json:"commit,omitempty"`
}

// Check is one budget line of --check.
type Check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	// Op is "<=", "<" or ">=": Value Op Limit passes.
	Op   string `json:"op"`
	Unit string `json:"unit"`
	Pass bool   `json:"pass"`
}

// Results is the whole run, as bench-results/latest.json holds it.
type Results struct {
	// Store is the gateway's store: "" (Badger) or "postgres".
	Store   string       `json:"store,omitempty"`
	Machine Machine      `json:"machine"`
	Window  string       `json:"window"` // duration of one window
	Rounds  int          `json:"rounds"`
	Cases   []CaseResult `json:"cases"`
	Errors  int          `json:"errors"`
	PeakRSS int64        `json:"peak_rss_bytes"`
	// PeakAnonRSS is the largest summed RssAnon sampled after a gateway
	// window: the part of PeakRSS that is not mapped files.
	PeakAnonRSS int64 `json:"peak_anon_rss_bytes"`
	// IdleCPUPercent is the gateway and plugins' CPU while only the direct
	// side ran, in percent of one core: background cost, not per request.
	IdleCPUPercent float64 `json:"idle_cpu_percent"`
	Checks         []Check `json:"checks"`
	// ProxyReference is a bare Go reverse proxy in front of the same
	// upstream in the same run: what any proxy costs here, a floor to read
	// the gateway's figures against.
	ProxyReference []ProxyRef `json:"proxy_reference,omitempty"`
	Notes          []string   `json:"notes,omitempty"`
	Profiles       []string   `json:"profiles,omitempty"`
	// Media are the media jobs' figures (media.go).
	Media []MediaResult `json:"media,omitempty"`
}

// ProxyRef is the bare proxy's figure for one case.
type ProxyRef struct {
	Case            string  `json:"case"`
	Concurrency     int     `json:"concurrency"`
	RPS             float64 `json:"rps"`
	CPUPerRequestUS float64 `json:"cpu_per_request_us"`
	P50US           float64 `json:"p50_us"`
}

// Budget of PRODUCT.md §6.
const (
	BudgetCPUUS       = 100.0 // per non-streaming request at c=64
	BudgetStreamCPUUS = 250.0 // per 20-chunk stream at c=64
	BudgetAddedP50US  = 150.0 // at c=1
	BudgetThroughput  = 0.25  // of direct, at c=64
	BudgetRSSBytes    = 100 << 20
)

// Evaluate fills r.Checks from the main cases (seeded ones are reported,
// not judged) and r.Errors.
func (r *Results) Evaluate() {
	r.Checks = r.Checks[:0]
	r.Errors = 0
	for _, c := range r.Cases {
		r.Errors += c.Direct.Errors + c.Gateway.Errors
		if c.SeededRows > 0 {
			continue
		}
		switch c.Concurrency {
		case 1:
			r.Checks = append(r.Checks, newCheck(fmt.Sprintf("%s: added p50 latency at c=1", c.Case), c.AddedP50US, "<=", BudgetAddedP50US, "µs"))
		case 64:
			limit := BudgetCPUUS
			if c.Streaming {
				limit = BudgetStreamCPUUS
			}
			r.Checks = append(r.Checks,
				newCheck(fmt.Sprintf("%s: gateway CPU per request at c=64", c.Case), c.Gateway.CPUPerRequestUS, "<=", limit, "µs"),
				newCheck(fmt.Sprintf("%s: throughput vs direct at c=64", c.Case), c.ThroughputRatio*100, ">=", BudgetThroughput*100, "%"))
		}
	}
	for _, m := range r.Media {
		r.Errors += m.Errors
		r.Checks = append(r.Checks, newCheck(fmt.Sprintf("media %s job (%s): gateway CPU from submit to settled row", m.Kind, m.Route),
			m.CPUPerJobUS, "<", BudgetMediaJobCPUUS, "µs"))
	}
	r.Checks = append(r.Checks,
		newCheck("peak RSS of gateway and plugins", float64(r.PeakRSS)/(1<<20), "<", BudgetRSSBytes/(1<<20), "MB"),
		newCheck("requests that failed", float64(r.Errors), "<=", 0, ""))
}

func newCheck(name string, v float64, op string, limit float64, unit string) Check {
	var pass bool
	switch op {
	case "<=":
		pass = v <= limit
	case "<":
		pass = v < limit
	case ">=":
		pass = v >= limit
	}
	return Check{Name: name, Value: v, Limit: limit, Op: op, Unit: unit, Pass: pass}
}

// Passed reports whether every check passed.
func (r *Results) Passed() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return len(r.Checks) > 0
}

// WriteJSON writes r as indented JSON to path.
func (r *Results) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads results written by WriteJSON.
func ReadJSON(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteMarkdown writes the results table (GitHub Markdown, readable as
// plain text too).
func (r *Results) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Run of %s on %d CPU(s)", m.Date.UTC().Format("2006-01-02 15:04 UTC"), m.NProc)
	if m.CPU != "" {
		fmt.Fprintf(&b, " (%s)", m.CPU)
	}
	fmt.Fprintf(&b, ", %s %s/%s; %d round(s) of %s windows per side, interleaved.", m.GoVersion, m.OS, m.Arch, r.Rounds, r.Window)
	if r.Store == StorePostgres {
		b.WriteString(" Store: PostgreSQL (a local server), the account limits counted in it (set never to refuse); the database's CPU per request is shown beside the gateway's, not in it.")
	}
	b.WriteString("\n\n")
	b.WriteString("| case | c | direct req/s | gateway req/s | ratio | direct p50 / p90 / p99 µs | gateway p50 / p90 / p99 µs | added p50 µs | TTFB p50 direct / gateway µs | gateway CPU µs/req (plugins) | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Cases {
		name := c.Case
		if c.SeededRows > 0 {
			name = fmt.Sprintf("%s (after %d log rows)", c.Case, c.SeededRows)
		}
		ttfb := "–"
		if c.Direct.TTFB != nil && c.Gateway.TTFB != nil {
			ttfb = fmt.Sprintf("%.0f / %.0f", c.Direct.TTFB.P50, c.Gateway.TTFB.P50)
		}
		errs := fmt.Sprintf("%d", c.Direct.Errors+c.Gateway.Errors)
		if c.Direct.Errors+c.Gateway.Errors > 0 {
			errs = "**" + errs + "**"
		}
		cpu := fmt.Sprintf("%.0f (%.0f)", c.Gateway.CPUPerRequestUS, c.Gateway.PluginCPUPerRequestUS)
		if r.Store == StorePostgres {
			cpu += fmt.Sprintf(" + database %.0f", c.Gateway.DatabaseCPUPerRequestUS)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f%% | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f | %.0f | %s | %s | %s |\n",
			name, c.Concurrency, c.Direct.RPS, c.Gateway.RPS, c.ThroughputRatio*100,
			c.Direct.Latency.P50, c.Direct.Latency.P90, c.Direct.Latency.P99,
			c.Gateway.Latency.P50, c.Gateway.Latency.P90, c.Gateway.Latency.P99,
			c.AddedP50US, ttfb, cpu, errs)
	}
	fmt.Fprintf(&b, "\nPeak RSS of the gateway and its plugin processes (summed VmHWM, mapped files included): %.1f MB; largest anonymous RSS sampled after a window: %.1f MB. Their CPU while idle (during the direct windows): %.1f%% of a core.\n",
		float64(r.PeakRSS)/(1<<20), float64(r.PeakAnonRSS)/(1<<20), r.IdleCPUPercent)
	if r.Errors > 0 {
		fmt.Fprintf(&b, "\n**WARNING: %d request(s) failed; the figures above are not trustworthy.**\n", r.Errors)
	}
	if len(r.ProxyReference) > 0 {
		fmt.Fprintf(&b, "\nFor scale, a bare Go reverse proxy (net/http server and client, each read relayed and flushed; no auth, money, logs or plugin: `tollgate-upstream --proxy-to`) in front of the same upstream, in this run:\n\n| case | c | req/s | p50 µs | CPU µs/req |\n|---|---:|---:|---:|---:|\n")
		for _, p := range r.ProxyReference {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f |\n", p.Case, p.Concurrency, p.RPS, p.P50US, p.CPUPerRequestUS)
		}
	}
	if len(r.Media) > 0 {
		fmt.Fprintf(&b, "\nMedia jobs, submit to settled row (a gateway of their own on the sim plugin, 8 clients; a sync job is answered in its call, an async one is a task the engine polls, hosts and settles):\n\n| job | route | jobs | gateway CPU µs/job | plugin CPU µs/job | errors |\n|---|---|---:|---:|---:|---:|\n")
		for _, m := range r.Media {
			fmt.Fprintf(&b, "| %s | `%s` | %d | %.0f | %.0f | %d |\n", m.Kind, m.Route, m.Jobs, m.CPUPerJobUS, m.PluginCPUPerJobUS, m.Errors)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteChecks writes one PASS/FAIL line per check and a verdict.
func (r *Results) WriteChecks(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Checks {
		verdict := "PASS"
		if !c.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "%s  %-55s %10.1f %s (budget %s %g %s)\n", verdict, c.Name, c.Value, c.Unit, c.Op, c.Limit, c.Unit)
	}
	if r.Passed() {
		b.WriteString("budget: PASS\n")
	} else {
		b.WriteString("budget: FAIL\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
