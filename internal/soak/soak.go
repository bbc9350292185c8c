// Package soak is the harness behind `make soak`: the real gateway with
// its real plugin processes on loopback, under a closed-loop mixed load of
// chat (whole, streamed, translated) and media (a synchronous search, an
// asynchronous video) for a long time, sampling its process tree every
// interval. Flat lines are the bar: memory, goroutines, open files and
// latency that keep growing are leaks.
package soak

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/internal/bench"
)

// Options configure a soak.
type Options struct {
	// BinDir holds tollgate, its tollgate-plugin-* and tollgate-upstream.
	BinDir string
	// Duration of the load; Interval between samples (a minute).
	Duration, Interval time.Duration
	// Concurrency is the number of closed-loop clients (64).
	Concurrency int
	// Log receives a line per interval.
	Log io.Writer
}

// Run starts the upstream simulator and the gateway, loads them for
// o.Duration and returns what each interval saw.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "tollgate-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	upKey, adminToken := "soak-upstream-"+randHex(8), randHex(16)
	upAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	up, err := bench.StartChild("upstream", filepath.Join(o.BinDir, "tollgate-upstream"), []string{"--listen", upAddr, "--api-key", upKey}, nil,
		filepath.Join(dir, "upstream.log"), nil, time.Minute)
	if err != nil {
		return nil, err
	}
	defer up.Stop()
	if err := waitTCP(ctx, upAddr, 15*time.Second); err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "soak.hcl")
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(cfg, []byte(Config("http://"+upAddr, upKey, data)), 0o600); err != nil {
		return nil, err
	}
	var base string
	gw, err := bench.StartChild("gateway", filepath.Join(o.BinDir, "tollgate"),
		[]string{"serve", "--config", cfg, "--data-dir", data, "--listen", "127.0.0.1:0", "--log-level", "warn", "--metrics-listen", metricsAddr},
		[]string{"TOLLGATE_ADMIN_TOKEN=" + adminToken}, filepath.Join(dir, "gateway.log"),
		func(line string) bool {
			const p = "Tollgate listening on "
			if i := strings.Index(line, p); i >= 0 {
				base = strings.TrimSpace(line[i+len(p):])
				return true
			}
			return false
		}, time.Minute)
	if err != nil {
		return nil, err
	}
	defer gw.Stop()
	if !strings.HasPrefix(base, "http") {
		base = "http://" + base
	}
	adm := &http.Client{Timeout: 10 * time.Second}
	acct, key, err := account(ctx, adm, base, adminToken)
	if err != nil {
		return nil, err
	}
	mix := Mix(base, key)
	for _, c := range mix {
		if err := once(ctx, adm, c); err != nil {
			return nil, fmt.Errorf("probe %s: %w", c.Name, err)
		}
	}

	rep := &Report{Started: time.Now().UTC().Format(time.RFC3339), Duration: o.Duration.String(), Interval: o.Interval.String(),
		Concurrency: o.Concurrency, Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	for _, c := range mix {
		rep.Mix = append(rep.Mix, fmt.Sprintf("%s ×%d", c.Name, c.Weight))
	}
	var col collector
	// Samples are taken under load: the clients stop after the last one.
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	client := bench.NewClient(o.Concurrency)
	deck := deal(mix)
	for i := range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; loadCtx.Err() == nil; j++ {
				c := deck[j%len(deck)]
				t0 := time.Now()
				err := once(loadCtx, client, c)
				if loadCtx.Err() != nil {
					return // cut by the end of the run, not a failure
				}
				col.add(c.Media, time.Since(t0), err)
			}
		}()
	}
	start := time.Now()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	proc := bench.Proc{Root: "/proc"}
	for n := max(int(o.Duration/o.Interval), 1); n > 0; n-- {
		select {
		case <-tick.C:
		case <-ctx.Done():
			stop()
			wg.Wait()
			return rep, ctx.Err()
		}
		if err := gw.Alive(); err != nil {
			stop()
			wg.Wait()
			return rep, err
		}
		m := col.take()
		m.At = time.Since(start).Round(time.Second).String()
		sample(ctx, proc, gw.PID(), adm, "http://"+metricsAddr, &m)
		rep.Minutes = append(rep.Minutes, m)
		fmt.Fprintf(o.Log, "%s  rss %.0f MB (anonymous %.0f)  goroutines %d  files %d (store %d)  calls %d  errors %d  p99 %.1f ms\n",
			m.At, float64(m.RSSKB)/1024, float64(m.AnonKB)/1024, m.Goroutines, m.OpenFiles, m.StoreFiles, m.Calls, m.Errors, m.P99MS)
	}
	stop()
	wg.Wait()
	rep.Held, err = settled(ctx, adm, base, adminToken, acct, 2*time.Minute)
	if err != nil {
		return rep, err
	}
	rep.Evaluate()
	return rep, nil
}

// Call is one kind of request of the mix.
type Call struct {
	Name   string
	Weight int
	Media  bool
	URL    string
	Header http.Header
	Body   []byte
	// Expect must be in a good answer.
	Expect []byte
}

// Mix is the soak's load: mostly chat (whole, streamed, translated from
// messages), a fifth media (a search answered in the call, a video job
// submitted and polled by the task engine).
func Mix(base, key string) []Call {
	bearer := http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	anthropic := http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	return []Call{
		{Name: "chat", Weight: 4, URL: base + "/v1/chat/completions", Header: bearer, Expect: []byte(`"chat.completion"`),
			Body: []byte(`{"model":"soak-chat","max_tokens":64,"messages":[{"role":"user","content":"Reply in a few words. [sim:words=16]"}]}`)},
		{Name: "chat stream", Weight: 2, URL: base + "/v1/chat/completions", Header: bearer, Expect: []byte("[DONE]"),
			Body: []byte(`{"model":"soak-chat","max_tokens":256,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count. [sim:chunks=20]"}]}`)},
		{Name: "messages stream (translated)", Weight: 2, URL: base + "/v1/messages", Header: anthropic, Expect: []byte("message_stop"),
			Body: []byte(`{"model":"soak-chat","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Count. [sim:chunks=20]"}]}`)},
		{Name: "search", Weight: 1, Media: true, URL: base + "/v1/search", Header: bearer, Expect: []byte(`"results"`),
			Body: []byte(`{"model":"soak-search","query":"toll roads","max_results":3}`)},
		{Name: "video (async)", Weight: 1, Media: true, URL: base + "/v1/videos/generations", Header: bearer, Expect: []byte(`"id"`),
			Body: []byte(`{"model":"soak-video","prompt":"waves","duration":1}`)},
	}
}

// deal spreads the mix by weight over a deck the clients walk.
func deal(mix []Call) []Call {
	var deck []Call
	for round := 0; ; round++ {
		added := false
		for _, c := range mix {
			if round < c.Weight {
				deck = append(deck, c)
				added = true
			}
		}
		if !added {
			return deck
		}
	}
}

// Config is the soak gateway: an openai channel to the upstream
// simulator for chat, the sim plugin for search and video.
func Config(upstream, upstreamKey, dataDir string) string {
	q := strconv.Quote
	return `# Written by tollgate-soak for one run.
server {
  listen = "127.0.0.1:0"
}
store "badger" {
  dir = ` + q(dataDir) + `
}
channel "up" {
  vendor    = "openai"
  base_url  = ` + q(upstream) + `
  api_key   = ` + q(upstreamKey) + `
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["soak-chat"]
}
model "soak-chat" {
  translate_from = ["anthropic_messages"]
  price {
    input  = "1"
    output = "2"
  }
}
channel "sim" {
  vendor   = "sim"
  base_url = "sim://soak"
  families = ["search", "video"]
  models   = ["soak-search", "soak-video"]
}
model "soak-search" {
  family = "search"
  price {
    per_call = "0.001"
  }
}
model "soak-video" {
  family       = "video"
  max_duration = 5
  price {
    per_second = "0.001"
  }
}
`
}

// collector gathers the calls of the current interval.
type collector struct {
	mu          sync.Mutex
	chat, media []time.Duration
	errors      int
	firstErr    string
}

func (c *collector) add(media bool, d time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.errors++
		if c.firstErr == "" {
			c.firstErr = err.Error()
		}
	case media:
		c.media = append(c.media, d)
	default:
		c.chat = append(c.chat, d)
	}
}

// take empties the collector into an interval's call figures.
func (c *collector) take() Minute {
	c.mu.Lock()
	chat, media, errs, first := c.chat, c.media, c.errors, c.firstErr
	c.chat, c.media, c.errors, c.firstErr = nil, nil, 0, ""
	c.mu.Unlock()
	all := append(slices.Clone(chat), media...)
	return Minute{
		Calls: len(all) + errs, Errors: errs, FirstError: first,
		P50MS: pct(all, 50), P99MS: pct(all, 99), ChatP99: pct(chat, 99), MediaP99: pct(media, 99),
	}
}

func pct(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(bench.Percentile(d, p).Microseconds()) / 1000
}

// sample reads the gateway tree's memory, descriptors and goroutines.
func sample(ctx context.Context, proc bench.Proc, pid int, c *http.Client, metricsURL string, m *Minute) {
	tree, err := proc.Tree(pid)
	if err == nil {
		m.Procs = len(tree)
		for i, s := range tree {
			kb := statusKB(s.PID, "VmRSS:")
			m.RSSKB += kb
			m.AnonKB += statusKB(s.PID, "RssAnon:")
			if i == 0 {
				m.GatewayRSSKB = kb
			}
			fdDir := "/proc/" + strconv.Itoa(s.PID) + "/fd"
			if fds, err := os.ReadDir(fdDir); err == nil {
				m.OpenFiles += len(fds)
				for _, fd := range fds {
					if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && storeFile(target) {
						m.StoreFiles++
					}
				}
			}
		}
	}
	m.Goroutines = goroutines(ctx, c, metricsURL)
}

// storeFile reports whether a descriptor's target is one of Badger's
// table, value-log or memtable files.
func storeFile(target string) bool {
	switch filepath.Ext(target) {
	case ".sst", ".vlog", ".mem":
		return true
	}
	return false
}

func statusKB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// goroutines is go_goroutines from the gateway's /metrics, -1 when it
// cannot be read.
func goroutines(ctx context.Context, c *http.Client, base string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := c.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(f)
			}
		}
	}
	return -1
}

// once sends c and reads its whole answer.
func once(ctx context.Context, client *http.Client, c Call) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return err
	}
	req.Header = c.Header
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, c.Expect) {
		return fmt.Errorf("%s: %d %.200s", c.Name, resp.StatusCode, b)
	}
	return nil
}

// account creates the soak's account, credited far beyond the run, and
// its key.
func account(ctx context.Context, c *http.Client, base, token string) (acct, key string, err error) {
	var a struct{ ID string }
	if err := adminDo(ctx, c, base, token, "POST", "/accounts", `{"name":"soak","initial_credit":"100000000"}`, &a); err != nil {
		return "", "", err
	}
	var k struct{ Key string }
	if err := adminDo(ctx, c, base, token, "POST", "/accounts/"+a.ID+"/keys", `{"name":"soak"}`, &k); err != nil {
		return "", "", err
	}
	if a.ID == "" || k.Key == "" {
		return "", "", errors.New("admin: no account id or raw key in the answers")
	}
	return a.ID, k.Key, nil
}

// settled waits until the account holds nothing (its video jobs done) or
// limit passes, and returns what it holds.
func settled(ctx context.Context, c *http.Client, base, token, acct string, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		var a struct{ Held string }
		if err := adminDo(ctx, c, base, token, "GET", "/accounts/"+acct, "", &a); err != nil {
			return "", err
		}
		if a.Held == "0" || time.Now().After(deadline) {
			return a.Held, nil
		}
		select {
		case <-ctx.Done():
			return a.Held, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func adminDo(ctx context.Context, c *http.Client, base, token, method, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, base+"/admin/v1"+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s /admin/v1%s: %d %.300s", method, path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitTCP(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s", addr, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
