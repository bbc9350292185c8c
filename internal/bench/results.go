package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Side is one target of a case at one concurrency (the upstream called
// directly, the reference proxy, or a gateway), all rounds merged.
type Side struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	// RoundRPS is each window's throughput, to show the spread.
	RoundRPS []float64 `json:"round_rps"`
	Latency  Dist      `json:"latency"`
	// RoundP50US is each window's median latency.
	RoundP50US []float64 `json:"round_p50_us,omitempty"`
	// TTFB is the time to the first body byte (streams only).
	TTFB *Dist `json:"ttfb,omitempty"`
	// CPUPerRequestUS is the CPU time of the target's whole process tree
	// per request, read at the edges of each measured window (the proxy's
	// process; a gateway and its plugin processes); RoundCPUUS is each
	// window's. None for the direct side.
	CPUPerRequestUS float64   `json:"cpu_per_request_us,omitempty"`
	RoundCPUUS      []float64 `json:"round_cpu_us,omitempty"`
	// PluginCPUPerRequestUS is the plugin processes' part of it.
	PluginCPUPerRequestUS float64 `json:"plugin_cpu_per_request_us,omitempty"`
	// DatabaseCPUPerRequestUS is the PostgreSQL server's CPU per request
	// (a postgres store), beside the gateway's.
	DatabaseCPUPerRequestUS float64 `json:"database_cpu_per_request_us,omitempty"`
	FirstError              string  `json:"first_error,omitempty"`
}

// Ratio is a figure of a gateway divided by the reference proxy's, over
// all rounds merged (Value) and round by round (Rounds: the gateway's
// window over the proxy's window of the same round).
type Ratio struct {
	Value  float64   `json:"value"`
	Rounds []float64 `json:"rounds"`
}

// Worst is the largest round's ratio (Value when there are no rounds).
func (r *Ratio) Worst() float64 {
	if r == nil {
		return 0
	}
	if len(r.Rounds) == 0 {
		return r.Value
	}
	return slices.Max(r.Rounds)
}

// String is "1.23× (1.10–1.40)": the merged ratio and the spread of the
// rounds.
func (r *Ratio) String() string {
	if r == nil {
		return "–"
	}
	if len(r.Rounds) < 2 {
		return fmt.Sprintf("%.2f×", r.Value)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", r.Value, slices.Min(r.Rounds), slices.Max(r.Rounds))
}

// CaseResult compares the gateway with the direct call and the reference
// proxy for one case at one concurrency.
type CaseResult struct {
	Case        string `json:"case"`
	Title       string `json:"title"`
	Streaming   bool   `json:"streaming"`
	Concurrency int    `json:"concurrency"`
	// Translated cases reach a completions upstream from another
	// protocol: their direct and proxy calls are the completions calls.
	Translated bool `json:"translated,omitempty"`
	// DirectMeans says what the baseline call is for this case.
	DirectMeans string `json:"direct_means"`
	// SeededRows is how many log rows the store held beforehand (the
	// large-ledger check), 0 for the main cases.
	SeededRows int   `json:"seeded_rows,omitempty"`
	Direct     Side  `json:"direct"`
	Proxy      *Side `json:"proxy,omitempty"`
	// Gateway is the default configuration: vendors out of process.
	Gateway Side `json:"gateway"`
	// InProcess is the same gateway with its channel's vendor in the
	// gateway's process (transport = "in-process").
	InProcess *Side `json:"in_process,omitempty"`
	// AddedP50US is gateway p50 minus direct p50.
	AddedP50US float64 `json:"added_p50_us"`
	// ThroughputRatio is gateway rps over direct rps.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// CPURatio and AddedP50Ratio are the gateway's CPU per request and
	// added p50 over the proxy's; InProcess... the same of the in-process
	// gateway. Nil when the run had no proxy (or no in-process gateway).
	CPURatio               *Ratio `json:"cpu_ratio,omitempty"`
	AddedP50Ratio          *Ratio `json:"added_p50_ratio,omitempty"`
	InProcessCPURatio      *Ratio `json:"in_process_cpu_ratio,omitempty"`
	InProcessAddedP50Ratio *Ratio `json:"in_process_added_p50_ratio,omitempty"`
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
	// LoadBefore and LoadAfter are the 1-minute load average when the run
	// started and ended: other work on the machine reads as noise.
	LoadBefore float64 `json:"load_before,omitempty"`
	LoadAfter  float64 `json:"load_after,omitempty"`
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
	// PeakAnonGatewayRSS is the gateway process's own RssAnon in that
	// sample (the rest is its plugin processes').
	PeakAnonGatewayRSS int64 `json:"peak_anon_gateway_rss_bytes,omitempty"`
	// IdleCPUPercent is the gateway and plugins' CPU while only the direct
	// side ran, in percent of one core: background cost, not per request.
	IdleCPUPercent float64  `json:"idle_cpu_percent"`
	Checks         []Check  `json:"checks"`
	Notes          []string `json:"notes,omitempty"`
	Profiles       []string `json:"profiles,omitempty"`
	// Media are the media jobs' figures (media.go).
	Media []MediaResult `json:"media,omitempty"`
}

// The budget of PRODUCT.md §6, as ratios to the reference proxy measured
// in the same run (the default configuration: vendors out of process).
const (
	// BudgetCPURatio bounds CPU per non-streaming call at c=64, in every
	// round; BudgetStreamCPURatio per 20-chunk stream.
	BudgetCPURatio       = 1.0
	BudgetStreamCPURatio = 1.1
	// BudgetAddedP50Ratio bounds the added median latency at c=1.
	BudgetAddedP50Ratio = 1.2
	// BudgetInProcessCPURatio bounds CPU per call at c=64 with the vendor
	// in process (transport = "in-process").
	BudgetInProcessCPURatio = 1.1
	// BudgetTranslatedStream bounds a translated stream's CPU over the
	// native one's, at c=64.
	BudgetTranslatedStream = 1.05
	// BudgetAnonRSSBytes bounds the anonymous memory of the gateway and
	// its plugins under load.
	BudgetAnonRSSBytes = 80 << 20
)

// Evaluate fills r.Checks from the main cases (seeded ones are reported,
// not judged) and r.Errors.
func (r *Results) Evaluate() {
	r.Checks = r.Checks[:0]
	r.Errors = 0
	var stream, translatedStream float64
	for _, c := range r.Cases {
		r.Errors += c.Direct.Errors + c.Gateway.Errors
		if c.Proxy != nil {
			r.Errors += c.Proxy.Errors
		}
		if c.InProcess != nil {
			r.Errors += c.InProcess.Errors
		}
		if c.SeededRows > 0 {
			continue
		}
		if c.Concurrency == 64 && c.Streaming {
			if c.Translated {
				translatedStream = c.Gateway.CPUPerRequestUS
			} else {
				stream = c.Gateway.CPUPerRequestUS
			}
		}
		if c.Translated {
			continue // reported; the translated stream is judged below
		}
		switch c.Concurrency {
		case 1:
			if c.AddedP50Ratio != nil {
				r.Checks = append(r.Checks, newCheck(fmt.Sprintf("%s: added p50 at c=1 ÷ the proxy's", c.Case), c.AddedP50Ratio.Value, "<=", BudgetAddedP50Ratio, "×"))
			}
		case 64:
			if c.CPURatio != nil {
				if c.Streaming {
					r.Checks = append(r.Checks, newCheck(fmt.Sprintf("%s: CPU per call at c=64 ÷ the proxy's", c.Case), c.CPURatio.Value, "<=", BudgetStreamCPURatio, "×"))
				} else {
					r.Checks = append(r.Checks, newCheck(fmt.Sprintf("%s: CPU per call at c=64 ÷ the proxy's, worst round", c.Case), c.CPURatio.Worst(), "<=", BudgetCPURatio, "×"))
				}
			}
			if c.InProcessCPURatio != nil {
				r.Checks = append(r.Checks, newCheck(fmt.Sprintf("%s, vendor in process: CPU per call at c=64 ÷ the proxy's", c.Case), c.InProcessCPURatio.Value, "<=", BudgetInProcessCPURatio, "×"))
			}
		}
	}
	if stream > 0 && translatedStream > 0 {
		r.Checks = append(r.Checks, newCheck("translated stream's CPU at c=64 ÷ the native stream's", round3(translatedStream/stream), "<=", BudgetTranslatedStream, "×"))
	}
	for _, m := range r.Media {
		r.Errors += m.Errors
		r.Checks = append(r.Checks, newCheck(fmt.Sprintf("media %s job (%s): gateway CPU from submit to settled row", m.Kind, m.Route),
			m.CPUPerJobUS, "<", BudgetMediaJobCPUUS, "µs"))
	}
	r.Checks = append(r.Checks,
		newCheck("anonymous memory of gateway and plugins under load", round1(float64(r.PeakAnonRSS)/(1<<20)), "<", BudgetAnonRSSBytes/(1<<20), "MB"),
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

// WriteMarkdown writes the results tables (GitHub Markdown, readable as
// plain text too).
func (r *Results) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Run of %s on %d CPU(s)", m.Date.UTC().Format("2006-01-02 15:04 UTC"), m.NProc)
	if m.CPU != "" {
		fmt.Fprintf(&b, " (%s)", m.CPU)
	}
	fmt.Fprintf(&b, ", %s %s/%s", m.GoVersion, m.OS, m.Arch)
	if m.Commit != "" {
		fmt.Fprintf(&b, ", commit %s", m.Commit)
	}
	fmt.Fprintf(&b, "; %d round(s) of %s windows per target, interleaved", r.Rounds, r.Window)
	if m.LoadBefore > 0 || m.LoadAfter > 0 {
		fmt.Fprintf(&b, "; load average %.1f at the start, %.1f at the end", m.LoadBefore, m.LoadAfter)
	}
	b.WriteString(".")
	if r.Store == StorePostgres {
		b.WriteString(" Store: PostgreSQL (a local server), the account limits counted in it (set never to refuse); the database's CPU per request is shown beside the gateway's, not in it.")
	}
	b.WriteString("\n\n")
	r.writeRatios(&b)
	r.writeDetail(&b)
	split := ""
	if r.PeakAnonGatewayRSS > 0 {
		split = fmt.Sprintf(" (the gateway's process %.1f MB, its plugins' %.1f MB)",
			float64(r.PeakAnonGatewayRSS)/(1<<20), float64(r.PeakAnonRSS-r.PeakAnonGatewayRSS)/(1<<20))
	}
	fmt.Fprintf(&b, "\nPeak RSS of the gateway and its plugin processes (summed VmHWM, mapped files included): %.1f MB; largest anonymous RSS sampled after a window: %.1f MB%s. Their CPU while idle (during the direct windows): %.1f%% of a core.\n",
		float64(r.PeakRSS)/(1<<20), float64(r.PeakAnonRSS)/(1<<20), split, r.IdleCPUPercent)
	if r.Errors > 0 {
		fmt.Fprintf(&b, "\n**WARNING: %d request(s) failed; the figures above are not trustworthy.**\n", r.Errors)
	}
	if len(r.Media) > 0 {
		fmt.Fprintf(&b, "\nMedia jobs, submit to settled row (a gateway of their own on the sim plugin, 8 clients; a sync job is answered in its call, an async one is a task the engine polls, hosts and settles):\n\n| job | route | jobs | gateway CPU µs/job | plugin CPU µs/job | errors |\n|---|---|---:|---:|---:|---:|\n")
		for _, m := range r.Media {
			fmt.Fprintf(&b, "| %s | `%s` | %d | %.0f | %.0f | %d |\n", m.Kind, m.Route, m.Jobs, m.CPUPerJobUS, m.PluginCPUPerJobUS, m.Errors)
		}
	}
	if len(r.Checks) > 0 {
		b.WriteString("\nBudget (PRODUCT.md §6):\n\n")
		for _, c := range r.Checks {
			b.WriteString("- " + c.line() + "\n")
		}
	}
	if len(r.Profiles) > 0 {
		b.WriteString("\nProfiles of each case (an extra c=64 window, not part of the figures; `go tool pprof -top bin/tollgate FILE`): ")
		for i, p := range r.Profiles {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("`" + p + "`")
		}
		b.WriteString(".\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRatios is the table the budget reads: every figure over the
// reference proxy's in the same rounds, with the spread of the rounds.
func (r *Results) writeRatios(b *strings.Builder) {
	any := false
	for _, c := range r.Cases {
		any = any || c.CPURatio != nil
	}
	if !any {
		return
	}
	b.WriteString("Against the reference proxy (`httputil.NewSingleHostReverseProxy`, FlushInterval −1, a keep-alive pool as large as the load) in the same rounds: merged ratio, then the lowest and highest round.\n\n")
	b.WriteString("| case | c | CPU per call ÷ proxy | added p50 ÷ proxy's | in process: CPU ÷ proxy | in process: added p50 ÷ proxy's |\n|---|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Cases {
		if c.SeededRows > 0 || c.CPURatio == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s |\n", c.Case, c.Concurrency,
			c.CPURatio, c.AddedP50Ratio, c.InProcessCPURatio, c.InProcessAddedP50Ratio)
	}
	b.WriteString("\n")
}

// writeDetail is every target's own figures.
func (r *Results) writeDetail(b *strings.Builder) {
	b.WriteString("| case | c | target | req/s | p50 / p90 / p99 µs | added p50 µs | TTFB p50 µs | CPU µs/call (plugins) | errors |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Cases {
		name := c.Case
		if c.SeededRows > 0 {
			name = fmt.Sprintf("%s (after %d log rows)", c.Case, c.SeededRows)
		}
		row := func(target string, s *Side, added bool) {
			ttfb := "–"
			if s.TTFB != nil {
				ttfb = fmt.Sprintf("%.0f", s.TTFB.P50)
			}
			addedP50 := "–"
			if added {
				addedP50 = fmt.Sprintf("%.0f", s.Latency.P50-c.Direct.Latency.P50)
			}
			cpu := "–"
			if s.CPUPerRequestUS > 0 {
				cpu = fmt.Sprintf("%.0f", s.CPUPerRequestUS)
				if s.PluginCPUPerRequestUS > 0 {
					cpu += fmt.Sprintf(" (%.0f)", s.PluginCPUPerRequestUS)
				}
				if r.Store == StorePostgres && s.DatabaseCPUPerRequestUS > 0 {
					cpu += fmt.Sprintf(" + database %.0f", s.DatabaseCPUPerRequestUS)
				}
			}
			errs := fmt.Sprintf("%d", s.Errors)
			if s.Errors > 0 {
				errs = "**" + errs + "**"
			}
			fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.0f / %.0f / %.0f | %s | %s | %s | %s |\n",
				name, c.Concurrency, target, s.RPS, s.Latency.P50, s.Latency.P90, s.Latency.P99, addedP50, ttfb, cpu, errs)
		}
		row("direct", &c.Direct, false)
		if c.Proxy != nil {
			row("proxy", c.Proxy, true)
		}
		row("gateway", &c.Gateway, true)
		if c.InProcess != nil {
			row("gateway, vendor in process", c.InProcess, true)
		}
	}
}

func (c Check) line() string {
	verdict := "PASS"
	if !c.Pass {
		verdict = "FAIL"
	}
	format := "%s  %s: %.1f%s (budget %s %g%s)"
	if c.Unit == "×" {
		format = "%s  %s: %.2f%s (budget %s %g%s)"
	}
	unit := c.Unit
	if unit != "" && unit != "×" {
		unit = " " + unit
	}
	return fmt.Sprintf(format, verdict, c.Name, c.Value, unit, c.Op, c.Limit, unit)
}

// WriteChecks writes one PASS/FAIL line per check and a verdict.
func (r *Results) WriteChecks(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Checks {
		b.WriteString(c.line() + "\n")
	}
	if r.Passed() {
		b.WriteString("budget: PASS\n")
	} else {
		b.WriteString("budget: FAIL\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
