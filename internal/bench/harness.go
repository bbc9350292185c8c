package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options configure a run.
type Options struct {
	// BinDir holds tollgate, its tollgate-plugin-* and tollgate-upstream.
	BinDir string
	// Window is the length of one measured window.
	Window time.Duration
	// Rounds is how many rounds each case gets per concurrency (at least
	// 2); a round is one window of every target.
	Rounds int
	// Concurrency levels, 1 and 64 by default.
	Concurrency []int
	// Only, when set, limits the run to these case names.
	Only []string
	// ProfileDir, when set, receives a CPU and an allocation profile of
	// each case and gateway, taken during an extra, unmeasured c=64
	// window.
	ProfileDir string
	// SeedRows, when above 0, adds a c=64 completions case after writing
	// that many log rows straight into the gateway's store.
	SeedRows int
	// LogLevel is the gateway's --log-level.
	LogLevel string
	// NoProxyReference skips the reference proxy (and so every ratio).
	NoProxyReference bool
	// NoInProcess skips the second gateway, whose vendor runs in the
	// gateway's process (transport = "in-process").
	NoInProcess bool
	// NoMetrics runs the gateways without /metrics (on by default, as
	// the budget's default configuration has it).
	NoMetrics bool
	// Log receives progress lines.
	Log io.Writer
	// NoMedia skips the media phase (media.go).
	NoMedia bool
	// OnlyMedia runs the media phase alone: no upstream, proxy or chat
	// gateways (with ProfileDir, it profiles each media job kind).
	OnlyMedia bool
	// MediaJobs is how many jobs of each kind the media phase runs
	// (default 400).
	MediaJobs int
	// Store is the gateway's store: "" or "badger", or "postgres" on the
	// empty database at PostgresURL; PostgresPID, when set, is its
	// server's postmaster, whose CPU (and its backends') is counted beside
	// the gateway's.
	Store       string
	PostgresURL string
	PostgresPID int
}

func (o *Options) defaults() {
	if o.Window <= 0 {
		o.Window = 5 * time.Second
	}
	if o.Rounds < 2 {
		o.Rounds = 2
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 64}
	}
	if o.MediaJobs <= 0 {
		o.MediaJobs = defaultMediaJobs
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Store == StorePostgres {
		o.NoInProcess = true // the in-process comparison is Badger's
	}
}

// The targets of a round, in the order each round runs them.
const (
	tDirect = iota
	tProxy
	tGateway
	tInProcess
	nTargets
)

var targetNames = [nTargets]string{"direct", "proxy", "gateway", "in-process"}

// gateway is one started tollgate serve and the key it is called with.
type gateway struct {
	p         *process
	url       string
	pprofAddr string
	key       benchKey
	inProcess bool
}

// env is a started upstream, reference proxy and gateways.
type env struct {
	o           Options
	dir         string
	upstream    *process
	upstreamURL string
	upstreamKey string
	proxy       *process
	proxyURL    string
	gateway     *gateway // the default configuration
	inProcess   *gateway // nil with NoInProcess
	adminToken  string
	proc        Proc
	// idleCPU is the default gateway tree's CPU during direct windows,
	// idleTime their length.
	idleCPU, idleTime time.Duration
	// peakAnon is the largest anonymous RSS seen after a gateway window.
	peakAnon int64
	// peakAnonSelf is the gateway process's own part of peakAnon.
	peakAnonSelf int64
}

// bcase is a case with its request to every target.
type bcase struct {
	Case
	req [nTargets]Request
}

// Run starts the processes, measures every case and returns the results
// (also when some requests failed: Results.Errors says so).
func Run(ctx context.Context, o Options) (*Results, error) {
	o.defaults()
	dir, err := os.MkdirTemp("", "tollgate-bench-")
	if err != nil {
		return nil, err
	}
	if os.Getenv("TOLLGATE_BENCH_KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(o.Log, "keeping %s\n", dir)
	}
	e := &env{o: o, dir: dir, upstreamKey: "bench-upstream-" + randHex(8), adminToken: randHex(16), proc: Proc{Root: "/proc"}}
	defer e.close()
	res := &Results{Machine: machine(), Window: o.Window.String(), Rounds: o.Rounds, Store: o.Store}
	if o.OnlyMedia {
		if o.Store == StorePostgres {
			return nil, errors.New("the media phase runs on badger only")
		}
		if err := e.media(ctx, res); err != nil {
			return nil, err
		}
		res.Machine.LoadAfter = loadAverage()
		return res, nil
	}
	if err := e.startUpstream(ctx); err != nil {
		return nil, err
	}
	if !o.NoProxyReference {
		if err := e.startProxy(ctx); err != nil {
			return nil, err
		}
	}
	if e.gateway, err = e.startGateway(ctx, false); err != nil {
		return nil, err
	}
	if !o.NoInProcess {
		if e.inProcess, err = e.startGateway(ctx, true); err != nil {
			return nil, err
		}
	}
	cases := e.cases(o.Only)
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case matches %v", o.Only)
	}
	if err := e.probe(ctx, cases); err != nil {
		return nil, err
	}
	clients := map[int]*http.Client{}
	for _, c := range o.Concurrency {
		clients[c] = NewClient(c)
	}
	for _, conc := range o.Concurrency {
		e.warmUp(ctx, cases, clients[conc], conc)
	}
	for _, conc := range o.Concurrency {
		acc := make([]*caseAcc, len(cases))
		for i := range cases {
			acc[i] = &caseAcc{}
		}
		// Interleaving: each round runs every case on every target in
		// turn, so drift (thermal, other tenants) hits all of them.
		for round := 1; round <= o.Rounds; round++ {
			for i, c := range cases {
				if err := e.round(ctx, c, conc, round, clients[conc], acc[i]); err != nil {
					return nil, err
				}
			}
		}
		rss, err := e.proc.TreePeakRSS(e.gateway.p.pid())
		if err != nil {
			return nil, err
		}
		for i, c := range cases {
			res.Cases = append(res.Cases, acc[i].result(c.Case, conc, rss))
		}
	}
	if rss, err := e.proc.TreePeakRSS(e.gateway.p.pid()); err == nil {
		res.PeakRSS = rss
	}
	res.PeakAnonRSS, res.PeakAnonGatewayRSS = e.peakAnon, e.peakAnonSelf
	if o.ProfileDir != "" {
		files, err := e.profile(ctx, cases, clients[64])
		if err != nil {
			return nil, err
		}
		res.Profiles = files
	}
	if !o.NoMetrics {
		res.Notes = append(res.Notes, "The gateways ran with /metrics on (server.metrics_listen): every call counted by the Prometheus hooks.")
	}
	if !o.NoMedia && o.Store != StorePostgres {
		if err := e.media(ctx, res); err != nil {
			return nil, err
		}
	}
	if o.SeedRows > 0 {
		if err := e.seeded(ctx, res); err != nil {
			return nil, err
		}
	} else {
		res.Notes = append(res.Notes, "Large-ledger check not run this time: pass --seed-rows N to measure c=64 after N log rows are in the store.")
	}
	if e.idleTime > 0 {
		res.IdleCPUPercent = round1(100 * e.idleCPU.Seconds() / e.idleTime.Seconds())
	}
	res.Machine.LoadAfter = loadAverage()
	res.Evaluate()
	return res, nil
}

// cases are the workloads with their requests to each target: the proxy
// gets the direct call with its URL, each gateway the gateway call with
// its URL and key.
func (e *env) cases(only []string) []bcase {
	all := Cases(e.upstreamURL, e.gateway.url, e.upstreamKey, e.gateway.key.Key)
	var in []Case
	if e.inProcess != nil {
		in = Cases(e.upstreamURL, e.inProcess.url, e.upstreamKey, e.inProcess.key.Key)
	}
	var out []bcase
	for i, c := range selectCases(all, nil) {
		if len(only) > 0 && !slices.Contains(only, c.Name) {
			continue
		}
		bc := bcase{Case: c}
		bc.req[tDirect], bc.req[tGateway] = c.Direct, c.Gateway
		if e.proxy != nil {
			bc.req[tProxy] = c.Direct
			bc.req[tProxy].URL = strings.Replace(c.Direct.URL, e.upstreamURL, e.proxyURL, 1)
		}
		if in != nil {
			bc.req[tInProcess] = in[i].Gateway
		}
		out = append(out, bc)
	}
	return out
}

// has reports whether the run measures target t.
func (e *env) has(t int) bool {
	switch t {
	case tProxy:
		return e.proxy != nil
	case tInProcess:
		return e.inProcess != nil
	}
	return true
}

// root is the process whose tree's CPU counts for target t (0: none).
func (e *env) root(t int) int {
	switch t {
	case tProxy:
		return e.proxy.pid()
	case tGateway:
		return e.gateway.p.pid()
	case tInProcess:
		return e.inProcess.p.pid()
	}
	return 0
}

func selectCases(all []Case, only []string) []Case {
	if len(only) == 0 {
		return all
	}
	var out []Case
	for _, c := range all {
		for _, n := range only {
			if c.Name == n {
				out = append(out, c)
			}
		}
	}
	return out
}

func (e *env) close() {
	for _, g := range []*gateway{e.gateway, e.inProcess} {
		if g != nil && g.p != nil {
			g.p.stop()
		}
	}
	for _, p := range []*process{e.proxy, e.upstream} {
		if p != nil {
			p.stop()
		}
	}
}

func (e *env) startUpstream(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	bin := filepath.Join(e.o.BinDir, "tollgate-upstream")
	e.upstream, err = start("tollgate-upstream", bin, []string{"--listen", addr, "--api-key", e.upstreamKey}, nil,
		filepath.Join(e.dir, "upstream.log"), nil, 0)
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, addr, e.upstream, 15*time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, tail(filepath.Join(e.dir, "upstream.log")))
	}
	e.upstreamURL = "http://" + addr
	fmt.Fprintf(e.o.Log, "upstream simulator on %s (pid %d)\n", e.upstreamURL, e.upstream.pid())
	return nil
}

// serve starts tollgate serve on cfg and data and returns it with the
// base URL it listens on.
func (e *env) serve(name, cfg, data string, env []string, logPath string) (*process, string, error) {
	var addr string
	p, err := start(name, filepath.Join(e.o.BinDir, "tollgate"),
		[]string{"serve", "--config", cfg, "--data-dir", data, "--listen", "127.0.0.1:0", "--log-level", e.o.LogLevel},
		env, logPath,
		func(line string) bool {
			a, ok := listenLine(line)
			if ok {
				addr = a
			}
			return ok
		}, 60*time.Second)
	if err != nil {
		return nil, "", err
	}
	if !strings.HasPrefix(addr, "http") {
		addr = "http://" + addr
	}
	return p, addr, nil
}

// startProxy starts the reference proxy in front of the upstream.
func (e *env) startProxy(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	conns := slices.Max(e.o.Concurrency)
	e.proxy, err = start("proxy", filepath.Join(e.o.BinDir, "tollgate-upstream"),
		[]string{"--listen", addr, "--proxy-to", e.upstreamURL, "--proxy-conns", fmt.Sprint(max(conns, 64))},
		nil, filepath.Join(e.dir, "proxy.log"), nil, 0)
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, addr, e.proxy, 15*time.Second); err != nil {
		return err
	}
	e.proxyURL = "http://" + addr
	fmt.Fprintf(e.o.Log, "reference proxy on %s (pid %d)\n", e.proxyURL, e.proxy.pid())
	return nil
}

// startGateway starts a gateway on a fresh data directory (its vendor
// in the gateway's process when inProcess) and makes its bench key.
func (e *env) startGateway(ctx context.Context, inProcess bool) (*gateway, error) {
	name := "gateway"
	if inProcess {
		name = "gateway-in-process"
	}
	data := filepath.Join(e.dir, name)
	g := &gateway{inProcess: inProcess}
	if err := e.launch(g, name, data); err != nil {
		return nil, err
	}
	adm := admin{base: g.url, token: e.adminToken, c: &http.Client{Timeout: 10 * time.Second}}
	var err error
	if g.key, err = adm.createKey(ctx, "100000000"); err != nil {
		g.p.stop()
		return nil, err
	}
	return g, nil
}

// launch starts (or starts again, on the same data) g's tollgate serve.
func (e *env) launch(g *gateway, name, data string) error {
	cfg := filepath.Join(e.dir, name+".hcl")
	text := ConfigFor(e.upstreamURL, e.upstreamKey, data, e.o.Store, e.o.PostgresURL)
	if g.inProcess {
		text = strings.Replace(text, "  vendor    = \"openai\"\n", "  vendor    = \"openai\"\n  transport = \"in-process\"\n", 1)
	}
	if !e.o.NoMetrics {
		text = strings.Replace(text, "server {\n", "server {\n  metrics_listen = \"127.0.0.1:0\"\n", 1)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return err
	}
	env := []string{"TOLLGATE_ADMIN_TOKEN=" + e.adminToken}
	if e.o.Store == StorePostgres {
		env = append(env, "TOLLGATE_MASTER_KEY="+randHex(32))
	}
	if e.o.ProfileDir != "" {
		if g.pprofAddr == "" {
			port, err := freePort()
			if err != nil {
				return err
			}
			g.pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		}
		env = append(env, "TOLLGATE_PPROF_ADDR="+g.pprofAddr)
	}
	p, addr, err := e.serve(name, cfg, data, env, filepath.Join(e.dir, fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano())))
	if err != nil {
		return err
	}
	g.p, g.url = p, addr
	tree, err := e.proc.Tree(p.pid())
	if err != nil {
		return err
	}
	switch {
	case !g.inProcess && len(tree) < 2:
		return fmt.Errorf("the gateway (pid %d) runs no plugin process: the bench measures the plugin hop, so tollgate-plugin-openai must be beside tollgate in %s", p.pid(), e.o.BinDir)
	case g.inProcess && len(tree) > 1:
		return fmt.Errorf("the in-process gateway (pid %d) runs %d plugin process(es): its channel's vendor should run in the gateway's process", p.pid(), len(tree)-1)
	}
	fmt.Fprintf(e.o.Log, "%s on %s (pid %d, %d process(es) with its plugins)\n", name, g.url, p.pid(), len(tree))
	return nil
}

// probe sends each request once so a broken setup fails with its answer
// instead of a window full of errors.
func (e *env) probe(ctx context.Context, cases []bcase) error {
	c := NewClient(1)
	for _, cs := range cases {
		for t := range nTargets {
			if !e.has(t) {
				continue
			}
			h, _, err := Probe(ctx, c, cs.req[t])
			if err != nil {
				msg := fmt.Errorf("case %s, %s: %w", cs.Name, targetNames[t], err)
				if g := e.gatewayOf(t); g != nil {
					msg = fmt.Errorf("%w\ngateway log:\n%s", msg, tail(g.p.logf.Name()))
				}
				return msg
			}
			if (t == tGateway || t == tInProcess) && cs.Translation != "" && h.Get("X-Protocol-Translation") != cs.Translation {
				return fmt.Errorf("case %s, %s: X-Protocol-Translation is %q, want %q", cs.Name, targetNames[t], h.Get("X-Protocol-Translation"), cs.Translation)
			}
		}
	}
	return nil
}

func (e *env) gatewayOf(t int) *gateway {
	switch t {
	case tGateway:
		return e.gateway
	case tInProcess:
		return e.inProcess
	}
	return nil
}

// warmUp fills a client's connection pool and the targets' caches and
// pools; nothing counts.
func (e *env) warmUp(ctx context.Context, cases []bcase, c *http.Client, conc int) {
	d := min(time.Second, e.o.Window/2)
	if conc < 8 {
		d = min(300*time.Millisecond, d)
	}
	for _, cs := range cases {
		for t := range nTargets {
			if e.has(t) {
				Load(ctx, c, cs.req[t], conc, d)
			}
		}
	}
}

// caseAcc gathers the windows of one case at one concurrency.
type caseAcc struct {
	w [nTargets][]Window
	// cpu is each window's CPU of the target's process tree, plugin the
	// plugins' share of it; database the PostgreSQL server's, when
	// measured.
	cpu, plugin [nTargets][]time.Duration
	database    time.Duration
}

// databaseCPU is the PostgreSQL server's CPU so far (0 unmeasured).
func (e *env) databaseCPU() time.Duration {
	if e.o.PostgresPID <= 0 {
		return 0
	}
	s, err := e.proc.TreeCPU(e.o.PostgresPID)
	if err != nil {
		return 0
	}
	return s.Total()
}

// round runs one window of case c on every target (but those of skip),
// in turn.
func (e *env) round(ctx context.Context, c bcase, conc, round int, client *http.Client, acc *caseAcc, skip ...int) error {
	line := fmt.Sprintf("c=%-3d round %d %-27s", conc, round, c.Name)
	for t := range nTargets {
		if !e.has(t) || slices.Contains(skip, t) {
			continue
		}
		w, s, err := e.window(ctx, c, t, conc, client)
		if err != nil {
			return err
		}
		acc.w[t] = append(acc.w[t], w)
		acc.cpu[t] = append(acc.cpu[t], s.cpu)
		acc.plugin[t] = append(acc.plugin[t], s.plugin)
		acc.database += s.database
		line += fmt.Sprintf("  %s %6.0f/s", targetNames[t], rps(w))
		if t != tDirect {
			line += fmt.Sprintf(" %4.0fµs", perReq(s.cpu, w.Requests))
		}
		line += errNote(w)
	}
	fmt.Fprintln(e.o.Log, line)
	return nil
}

// sample is the CPU one window cost a target's process tree: all of it,
// its plugin processes' share, and the database's (measured apart).
type sample struct {
	cpu, plugin, database time.Duration
}

// window measures one target: the load, and the CPU of its process tree
// read right before and right after it. During a direct window the
// default gateway's CPU is its idle cost.
func (e *env) window(ctx context.Context, c bcase, t, conc int, client *http.Client) (Window, sample, error) {
	root := e.root(t)
	if t == tDirect {
		root = e.gateway.p.pid()
	}
	before, err := e.proc.TreeCPU(root)
	if err != nil {
		return Window{}, sample{}, fmt.Errorf("%s: %w", targetNames[t], err)
	}
	db0 := e.databaseCPU()
	w := Load(ctx, client, c.req[t], conc, e.o.Window)
	db := e.databaseCPU() - db0
	after, err := e.proc.TreeCPU(root)
	if err != nil {
		return w, sample{}, fmt.Errorf("%s: %w", targetNames[t], err)
	}
	if err := ctx.Err(); err != nil {
		return w, sample{}, err
	}
	if t == tDirect {
		e.idleCPU += after.Total() - before.Total()
		e.idleTime += w.Elapsed
		return w, sample{}, nil
	}
	if after.Procs != before.Procs {
		return w, sample{}, fmt.Errorf("case %s, %s: %d processes before the window and %d after: a plugin died or restarted",
			c.Name, targetNames[t], before.Procs, after.Procs)
	}
	s := sample{cpu: after.Total() - before.Total(), plugin: after.Children - before.Children}
	if t == tGateway {
		s.database = db
		self, plugins, err := e.proc.TreeRssAnonSplit(root)
		if err != nil {
			return w, s, fmt.Errorf("gateway: %w", err)
		}
		if self+plugins > e.peakAnon {
			e.peakAnon, e.peakAnonSelf = self+plugins, self
		}
	}
	return w, s, nil
}

func errNote(ws ...Window) string {
	n, first := 0, ""
	for _, w := range ws {
		n += w.Errors
		if first == "" {
			first = w.FirstError
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("  !! %d ERRORS, first: %s", n, first)
}

func rps(w Window) float64 {
	if w.Elapsed <= 0 {
		return 0
	}
	return float64(w.Requests-w.Errors) / w.Elapsed.Seconds()
}

func perReq(cpu time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(cpu.Nanoseconds()) / 1e3 / float64(n)
}

// side merges a target's windows: latency percentiles over every
// sample, throughput and CPU over the summed windows, and each window's
// own figures for the spread.
func side(ws []Window, cpu, plugin []time.Duration, streaming bool) Side {
	var s Side
	var lat, ttfb []time.Duration
	var elapsed, cpuSum, pluginSum time.Duration
	for i, w := range ws {
		s.Requests += w.Requests
		s.Errors += w.Errors
		if s.FirstError == "" {
			s.FirstError = w.FirstError
		}
		elapsed += w.Elapsed
		s.RoundRPS = append(s.RoundRPS, round1(rps(w)))
		s.RoundP50US = append(s.RoundP50US, round1(windowP50(w)))
		if i < len(cpu) && cpu[i] > 0 {
			s.RoundCPUUS = append(s.RoundCPUUS, round1(perReq(cpu[i], w.Requests)))
			cpuSum += cpu[i]
			pluginSum += plugin[i]
		}
		lat = append(lat, w.Latency...)
		ttfb = append(ttfb, w.TTFB...)
	}
	if elapsed > 0 {
		s.RPS = round1(float64(s.Requests-s.Errors) / elapsed.Seconds())
	}
	s.CPUPerRequestUS = round1(perReq(cpuSum, s.Requests))
	s.PluginCPUPerRequestUS = round1(perReq(pluginSum, s.Requests))
	s.Latency = Distribution(lat)
	if streaming {
		d := Distribution(ttfb)
		s.TTFB = &d
	}
	return s
}

// windowP50 is one window's median latency in µs.
func windowP50(w Window) float64 {
	lat := slices.Clone(w.Latency)
	slices.Sort(lat)
	return micros(Percentile(lat, 50))
}

func (a *caseAcc) result(c Case, conc int, rss int64) CaseResult {
	r := CaseResult{
		Case: c.Name, Title: c.Title, Streaming: c.Streaming, Concurrency: conc, DirectMeans: c.DirectMeans,
		Translated: c.Translation != "", PeakRSSBytes: rss,
		Direct:  side(a.w[tDirect], nil, nil, c.Streaming),
		Gateway: side(a.w[tGateway], a.cpu[tGateway], a.plugin[tGateway], c.Streaming),
	}
	r.Gateway.DatabaseCPUPerRequestUS = round1(perReq(a.database, r.Gateway.Requests))
	r.AddedP50US = round1(r.Gateway.Latency.P50 - r.Direct.Latency.P50)
	if r.Direct.RPS > 0 {
		r.ThroughputRatio = round3(r.Gateway.RPS / r.Direct.RPS)
	}
	if len(a.w[tInProcess]) > 0 {
		in := side(a.w[tInProcess], a.cpu[tInProcess], a.plugin[tInProcess], c.Streaming)
		r.InProcess = &in
	}
	if len(a.w[tProxy]) == 0 {
		return r
	}
	px := side(a.w[tProxy], a.cpu[tProxy], a.plugin[tProxy], c.Streaming)
	r.Proxy = &px
	r.CPURatio, r.AddedP50Ratio = ratios(&r.Direct, &px, &r.Gateway)
	if r.InProcess != nil {
		r.InProcessCPURatio, r.InProcessAddedP50Ratio = ratios(&r.Direct, &px, r.InProcess)
	}
	return r
}

// ratios divides g's CPU per request and added p50 by the proxy's, over
// the merged windows and round by round.
func ratios(direct, proxy, g *Side) (cpu, added *Ratio) {
	cpu = &Ratio{Value: ratio(g.CPUPerRequestUS, proxy.CPUPerRequestUS)}
	added = &Ratio{Value: ratio(g.Latency.P50-direct.Latency.P50, proxy.Latency.P50-direct.Latency.P50)}
	for i := range min(len(g.RoundCPUUS), len(proxy.RoundCPUUS)) {
		cpu.Rounds = append(cpu.Rounds, ratio(g.RoundCPUUS[i], proxy.RoundCPUUS[i]))
	}
	for i := range min(len(direct.RoundP50US), len(proxy.RoundP50US), len(g.RoundP50US)) {
		added.Rounds = append(added.Rounds, ratio(g.RoundP50US[i]-direct.RoundP50US[i], proxy.RoundP50US[i]-direct.RoundP50US[i]))
	}
	return cpu, added
}

// ratio is a/b to three decimals; 0 when b is not above 0.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return round3(a / b)
}

func round1(v float64) float64 {
	if v < 0 {
		return -round1(-v)
	}
	return float64(int64(v*10+0.5)) / 10
}

// profile runs one extra c=64 window per case and gateway while the
// gateway's pprof endpoint records a CPU profile and the allocations of
// that window (a delta profile); those windows are not part of the
// figures. The files go to ProfileDir, named by kind, case and gateway.
func (e *env) profile(ctx context.Context, cases []bcase, client *http.Client) ([]string, error) {
	pc := &http.Client{Timeout: e.o.Window + 30*time.Second}
	secs := max(int(e.o.Window/time.Second), 1)
	var files []string
	for _, c := range cases {
		for _, t := range []int{tGateway, tInProcess} {
			g := e.gatewayOf(t)
			if g == nil {
				continue
			}
			if g.pprofAddr == "" {
				return nil, errors.New("profiles asked for but the gateway has no pprof address")
			}
			type got struct {
				kind string
				b    []byte
				err  error
			}
			out := make(chan got, 2)
			for _, kind := range []string{"profile", "allocs"} {
				go func() {
					b, err := fetch(ctx, pc, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", g.pprofAddr, kind, secs))
					out <- got{kind, b, err}
				}()
			}
			w := Load(ctx, client, c.req[t], 64, time.Duration(secs)*time.Second+300*time.Millisecond)
			fmt.Fprintf(e.o.Log, "profiled window %-27s %-10s %8.0f req/s%s\n", c.Name, targetNames[t], rps(w), errNote(w))
			for range 2 {
				g := <-out
				if g.err != nil {
					return nil, fmt.Errorf("%s profile: %w", g.kind, g.err)
				}
				name := "cpu"
				if g.kind == "allocs" {
					name = "allocs"
				}
				name += "-" + c.Name
				if t == tInProcess {
					name += "-in-process"
				}
				path := filepath.Join(e.o.ProfileDir, name+".pprof")
				if err := writeFile(path, g.b); err != nil {
					return nil, err
				}
				files = append(files, path)
			}
		}
	}
	slices.Sort(files)
	return files, nil
}

// writeFile writes b to path, creating its directory.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func fetch(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, truncate(b))
	}
	return b, nil
}

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Date: time.Now().UTC().Truncate(time.Second),
		LoadBefore: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = CPUModel(b)
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

// CPUModel is the first "model name" of a /proc/cpuinfo.
func CPUModel(cpuinfo []byte) string {
	for line := range strings.SplitSeq(string(cpuinfo), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// loadAverage is the 1-minute load average (0 when unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
