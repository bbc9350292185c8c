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
	"strings"
	"time"
)

// Options configure a run.
type Options struct {
	// BinDir holds tollgate, its tollgate-plugin-* and tollgate-upstream.
	BinDir string
	// Window is the length of one measured window.
	Window time.Duration
	// Rounds is how many direct/gateway window pairs each case gets per
	// concurrency (at least 2).
	Rounds int
	// Concurrency levels, 1 and 64 by default.
	Concurrency []int
	// Only, when set, limits the run to these case names.
	Only []string
	// CPUProfile and MemProfile, when set, are paths (one file per case,
	// the case name inserted before the extension) for gateway profiles
	// taken during an extra, unmeasured c=64 window.
	CPUProfile, MemProfile string
	// SeedRows, when above 0, adds a c=64 completions case after writing
	// that many log rows straight into the gateway's store.
	SeedRows int
	// LogLevel is the gateway's --log-level.
	LogLevel string
	// NoProxyReference skips measuring a bare reverse proxy for scale.
	NoProxyReference bool
	// Metrics serves /metrics beside the gateway (server.metrics_listen):
	// the run measures the gateway with its Prometheus hooks on.
	Metrics bool
	// Log receives progress lines.
	Log io.Writer
	// NoMedia skips the media phase (media.go).
	NoMedia bool
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
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// env is a started upstream and gateway.
type env struct {
	o           Options
	dir         string
	upstream    *process
	upstreamURL string
	upstreamKey string
	gateway     *process
	gatewayURL  string
	pprofAddr   string
	adminToken  string
	key         benchKey
	proc        Proc
	// idleCPU is the gateway tree's CPU during direct windows, idleTime
	// their length.
	idleCPU, idleTime time.Duration
	// peakAnon is the largest anonymous RSS seen after a gateway window.
	peakAnon int64
}

// Run starts the processes, measures every case and returns the results
// (also when some requests failed: Results.Errors says so).
func Run(ctx context.Context, o Options) (*Results, error) {
	o.defaults()
	dir, err := os.MkdirTemp("", "tollgate-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	e := &env{o: o, dir: dir, upstreamKey: "bench-upstream-" + randHex(8), adminToken: randHex(16), proc: Proc{Root: "/proc"}}
	defer e.close()
	if err := e.startUpstream(ctx); err != nil {
		return nil, err
	}
	if err := e.startGateway(); err != nil {
		return nil, err
	}
	adm := admin{base: e.gatewayURL, token: e.adminToken, c: &http.Client{Timeout: 10 * time.Second}}
	if e.key, err = adm.createKey(ctx, "100000000"); err != nil {
		return nil, err
	}
	cases := selectCases(Cases(e.upstreamURL, e.gatewayURL, e.upstreamKey, e.key.Key), o.Only)
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case matches %v", o.Only)
	}
	res := &Results{Machine: machine(), Window: o.Window.String(), Rounds: o.Rounds, Store: o.Store}
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
		// A/B interleaving: each round runs every case direct then through
		// the gateway, so drift (thermal, other tenants) hits both sides.
		for round := 1; round <= o.Rounds; round++ {
			for i, c := range cases {
				if err := e.window(ctx, c, conc, round, clients[conc], acc[i]); err != nil {
					return nil, err
				}
			}
		}
		rss, err := e.proc.TreePeakRSS(e.gateway.pid())
		if err != nil {
			return nil, err
		}
		for i, c := range cases {
			res.Cases = append(res.Cases, acc[i].result(c, conc, rss))
		}
	}
	if rss, err := e.proc.TreePeakRSS(e.gateway.pid()); err == nil {
		res.PeakRSS = rss
	}
	res.PeakAnonRSS = e.peakAnon
	if !o.NoProxyReference {
		refs, err := e.proxyReference(ctx, cases, clients)
		if err != nil {
			return nil, err
		}
		res.ProxyReference = refs
	}
	if o.CPUProfile != "" || o.MemProfile != "" {
		files, err := e.profile(ctx, cases, clients[64])
		if err != nil {
			return nil, err
		}
		res.Profiles = files
	}
	if o.Metrics {
		res.Notes = append(res.Notes, "Measured with /metrics on (server.metrics_listen): every call counted by the Prometheus hooks.")
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
	res.Evaluate()
	return res, nil
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
	if e.gateway != nil {
		e.gateway.stop()
	}
	if e.upstream != nil {
		e.upstream.stop()
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

func (e *env) startGateway() error {
	cfg := filepath.Join(e.dir, "bench.hcl")
	data := filepath.Join(e.dir, "data")
	text := ConfigFor(e.upstreamURL, e.upstreamKey, data, e.o.Store, e.o.PostgresURL)
	if e.o.Metrics {
		text = strings.Replace(text, "server {\n", "server {\n  metrics_listen = \"127.0.0.1:0\"\n", 1)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return err
	}
	env := []string{"TOLLGATE_ADMIN_TOKEN=" + e.adminToken}
	if e.o.Store == StorePostgres {
		env = append(env, "TOLLGATE_MASTER_KEY="+randHex(32))
	}
	if e.o.CPUProfile != "" || e.o.MemProfile != "" {
		if e.pprofAddr == "" {
			port, err := freePort()
			if err != nil {
				return err
			}
			e.pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		}
		env = append(env, "TOLLGATE_PPROF_ADDR="+e.pprofAddr)
	}
	p, addr, err := e.serve("tollgate", cfg, data, env, filepath.Join(e.dir, fmt.Sprintf("gateway-%d.log", time.Now().UnixNano())))
	if err != nil {
		return err
	}
	e.gateway, e.gatewayURL = p, addr
	tree, err := e.proc.Tree(p.pid())
	if err != nil {
		return err
	}
	if len(tree) < 2 {
		return fmt.Errorf("the gateway (pid %d) runs no plugin process: the bench measures the plugin hop, so tollgate-plugin-openai must be beside tollgate in %s", p.pid(), e.o.BinDir)
	}
	fmt.Fprintf(e.o.Log, "gateway on %s (pid %d, %d process(es) with its plugins)\n", e.gatewayURL, p.pid(), len(tree))
	return nil
}

// probe sends each request once so a broken setup fails with its answer
// instead of a window full of errors.
func (e *env) probe(ctx context.Context, cases []Case) error {
	c := NewClient(1)
	for _, cs := range cases {
		if _, _, err := Probe(ctx, c, cs.Direct); err != nil {
			return fmt.Errorf("case %s, direct: %w", cs.Name, err)
		}
		h, _, err := Probe(ctx, c, cs.Gateway)
		if err != nil {
			return fmt.Errorf("case %s, through the gateway: %w\ngateway log:\n%s", cs.Name, err, tail(e.gateway.logf.Name()))
		}
		if cs.Translation != "" && h.Get("X-Protocol-Translation") != cs.Translation {
			return fmt.Errorf("case %s: X-Protocol-Translation is %q, want %q", cs.Name, h.Get("X-Protocol-Translation"), cs.Translation)
		}
	}
	return nil
}

// warmUp fills a client's connection pool and the gateway's caches;
// nothing counts.
func (e *env) warmUp(ctx context.Context, cases []Case, c *http.Client, conc int) {
	d := min(time.Second, e.o.Window/2)
	if conc < 8 {
		d = min(300*time.Millisecond, d)
	}
	for _, cs := range cases {
		Load(ctx, c, cs.Direct, conc, d)
		Load(ctx, c, cs.Gateway, conc, d)
	}
}

// caseAcc gathers the windows of one case at one concurrency.
type caseAcc struct {
	direct, gateway []Window
	// gatewayCPU is the whole tree's; pluginCPU the plugins' share of it.
	gatewayCPU, pluginCPU time.Duration
	// databaseCPU is the PostgreSQL server's, when measured.
	databaseCPU time.Duration
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

func (e *env) window(ctx context.Context, c Case, conc, round int, client *http.Client, acc *caseAcc) error {
	idle0, err := e.proc.TreeCPU(e.gateway.pid())
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	d := Load(ctx, client, c.Direct, conc, e.o.Window)
	before, err := e.proc.TreeCPU(e.gateway.pid())
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	// The gateway serves nothing during a direct window: its CPU then is
	// background work (store maintenance, timers, plugin keep-alives).
	e.idleCPU += before.Total() - idle0.Total()
	e.idleTime += d.Elapsed
	db0 := e.databaseCPU()
	g := Load(ctx, client, c.Gateway, conc, e.o.Window)
	db := e.databaseCPU() - db0
	after, err := e.proc.TreeCPU(e.gateway.pid())
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if after.Procs != before.Procs {
		return fmt.Errorf("case %s: the gateway had %d processes before the window and %d after: a plugin died or restarted (see %s)",
			c.Name, before.Procs, after.Procs, e.gateway.logf.Name())
	}
	anon, err := e.proc.TreeRssAnon(e.gateway.pid())
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	e.peakAnon = max(e.peakAnon, anon)
	acc.direct = append(acc.direct, d)
	acc.gateway = append(acc.gateway, g)
	acc.gatewayCPU += after.Total() - before.Total()
	acc.pluginCPU += after.Children - before.Children
	acc.databaseCPU += db
	fmt.Fprintf(e.o.Log, "c=%-3d round %d %-20s direct %8.0f req/s  gateway %8.0f req/s  gateway cpu %6.0f µs/req (plugins %3.0f)%s\n",
		conc, round, c.Name, rps(d), rps(g), perReq(after.Total()-before.Total(), g.Requests), perReq(after.Children-before.Children, g.Requests), errNote(d, g))
	return nil
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

func side(ws []Window, streaming bool) Side {
	var s Side
	var lat, ttfb []time.Duration
	var elapsed time.Duration
	for _, w := range ws {
		s.Requests += w.Requests
		s.Errors += w.Errors
		if s.FirstError == "" {
			s.FirstError = w.FirstError
		}
		elapsed += w.Elapsed
		s.RoundRPS = append(s.RoundRPS, round1(rps(w)))
		lat = append(lat, w.Latency...)
		ttfb = append(ttfb, w.TTFB...)
	}
	if elapsed > 0 {
		s.RPS = round1(float64(s.Requests-s.Errors) / elapsed.Seconds())
	}
	s.Latency = Distribution(lat)
	if streaming {
		d := Distribution(ttfb)
		s.TTFB = &d
	}
	return s
}

func (a *caseAcc) result(c Case, conc int, rss int64) CaseResult {
	r := CaseResult{
		Case: c.Name, Title: c.Title, Streaming: c.Streaming, Concurrency: conc, DirectMeans: c.DirectMeans,
		Direct: side(a.direct, c.Streaming), Gateway: side(a.gateway, c.Streaming), PeakRSSBytes: rss,
	}
	r.Gateway.CPUPerRequestUS = round1(perReq(a.gatewayCPU, r.Gateway.Requests))
	r.Gateway.PluginCPUPerRequestUS = round1(perReq(a.pluginCPU, r.Gateway.Requests))
	r.Gateway.DatabaseCPUPerRequestUS = round1(perReq(a.databaseCPU, r.Gateway.Requests))
	r.AddedP50US = round1(r.Gateway.Latency.P50 - r.Direct.Latency.P50)
	if r.Direct.RPS > 0 {
		r.ThroughputRatio = float64(int(r.Gateway.RPS/r.Direct.RPS*1000+0.5)) / 1000
	}
	return r
}

func round1(v float64) float64 {
	if v < 0 {
		return -round1(-v)
	}
	return float64(int64(v*10+0.5)) / 10
}

// proxyReference measures a bare reverse proxy in front of the same
// upstream (tollgate-upstream --proxy-to) for the cases that need no
// translation, at each concurrency, with the rounds of the main run.
func (e *env) proxyReference(ctx context.Context, cases []Case, clients map[int]*http.Client) ([]ProxyRef, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := start("proxy", filepath.Join(e.o.BinDir, "tollgate-upstream"), []string{"--listen", addr, "--proxy-to", e.upstreamURL},
		nil, filepath.Join(e.dir, "proxy.log"), nil, 0)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := waitTCP(ctx, addr, p, 15*time.Second); err != nil {
		return nil, err
	}
	var refs []ProxyRef
	for _, conc := range e.o.Concurrency {
		for _, c := range cases {
			if c.Translation != "" {
				continue
			}
			req := c.Direct
			req.URL = strings.Replace(req.URL, e.upstreamURL, "http://"+addr, 1)
			Load(ctx, clients[conc], req, conc, min(time.Second, e.o.Window/2))
			var ws []Window
			var cpu time.Duration
			for range e.o.Rounds {
				before, err := e.proc.TreeCPU(p.pid())
				if err != nil {
					return nil, err
				}
				w := Load(ctx, clients[conc], req, conc, e.o.Window)
				after, err := e.proc.TreeCPU(p.pid())
				if err != nil {
					return nil, err
				}
				if w.Errors > 0 {
					return nil, fmt.Errorf("bare proxy, case %s: %d errors, first: %s", c.Name, w.Errors, w.FirstError)
				}
				ws = append(ws, w)
				cpu += after.Total() - before.Total()
			}
			sd := side(ws, c.Streaming)
			refs = append(refs, ProxyRef{Case: c.Name, Concurrency: conc, RPS: sd.RPS,
				CPUPerRequestUS: round1(perReq(cpu, sd.Requests)), P50US: sd.Latency.P50})
			fmt.Fprintf(e.o.Log, "c=%-3d bare proxy %-20s %8.0f req/s  cpu %6.0f µs/req\n", conc, c.Name, sd.RPS, perReq(cpu, sd.Requests))
		}
	}
	return refs, nil
}

// profile runs one extra c=64 gateway window per case while the gateway's
// pprof endpoint records; those windows are not part of the figures.
func (e *env) profile(ctx context.Context, cases []Case, client *http.Client) ([]string, error) {
	if e.pprofAddr == "" {
		return nil, errors.New("profiles asked for but the gateway has no pprof address")
	}
	pc := &http.Client{Timeout: e.o.Window + 30*time.Second}
	secs := max(int(e.o.Window/time.Second), 1)
	var files []string
	for _, c := range cases {
		type got struct {
			b   []byte
			err error
		}
		cpu := make(chan got, 1)
		if e.o.CPUProfile != "" {
			go func() {
				b, err := fetch(ctx, pc, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.pprofAddr, secs))
				cpu <- got{b, err}
			}()
		}
		w := Load(ctx, client, c.Gateway, 64, time.Duration(secs)*time.Second+200*time.Millisecond)
		fmt.Fprintf(e.o.Log, "profiled window %-20s gateway %8.0f req/s%s\n", c.Name, rps(w), errNote(w))
		if e.o.CPUProfile != "" {
			g := <-cpu
			if g.err != nil {
				return nil, fmt.Errorf("cpu profile: %w", g.err)
			}
			path := perCase(e.o.CPUProfile, c.Name)
			if err := writeFile(path, g.b); err != nil {
				return nil, err
			}
			files = append(files, path)
		}
		if e.o.MemProfile != "" {
			b, err := fetch(ctx, pc, "http://"+e.pprofAddr+"/debug/pprof/allocs")
			if err != nil {
				return nil, fmt.Errorf("allocs profile: %w", err)
			}
			path := perCase(e.o.MemProfile, c.Name)
			if err := writeFile(path, b); err != nil {
				return nil, err
			}
			files = append(files, path)
		}
	}
	return files, nil
}

// writeFile writes b to path, creating its directory.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// perCase inserts "-name" before path's extension.
func perCase(path, name string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + name + ext
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
	m := Machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Date: time.Now().UTC().Truncate(time.Second)}
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
