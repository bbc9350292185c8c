package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The media phase measures what one media job costs the gateway, from
// its submit to its settled row: a synchronous job (a web search, answered
// in the call) and an async one (a video: the task written, submitted
// upstream, polled by the task engine, its result hosted, its hold settled
// and its row written). It runs a gateway of its own on the sim plugin
// after the chat windows, so the chat figures are untouched, and reads the
// CPU of the gateway process and of its plugin process apart.

// MediaResult is one media job kind's figure.
type MediaResult struct {
	Kind string `json:"kind"` // sync or async
	// Route is what the job posts to.
	Route string `json:"route"`
	Jobs  int    `json:"jobs"`
	// CPUPerJobUS is the gateway process's CPU per job, submit to
	// settled row; PluginCPUPerJobUS the sim plugin's (the upstream's
	// work included).
	CPUPerJobUS       float64 `json:"cpu_per_job_us"`
	PluginCPUPerJobUS float64 `json:"plugin_cpu_per_job_us"`
	Errors            int     `json:"errors"`
}

// BudgetMediaJobCPUUS is PRODUCT.md §6's budget of a media job's gateway
// CPU, submit to settled row.
const BudgetMediaJobCPUUS = 1000.0

// defaultMediaJobs is how many jobs each kind runs by default.
const defaultMediaJobs = 400

// mediaConfig is the media phase's gateway: the sim plugin serving a
// search and a video model.
func mediaConfig(dataDir string) string {
	return `# Written by tollgate-bench for its media phase.
server {
  listen = "127.0.0.1:0"
}
store "badger" {
  dir = ` + quote(dataDir) + `
}
channel "sim" {
  vendor   = "sim"
  base_url = "sim://bench"
  families = ["search", "video"]
  models   = ["bench-search", "bench-video"]
}
model "bench-search" {
  family = "search"
  price {
    per_call = "0.001"
  }
}
model "bench-video" {
  family       = "video"
  max_duration = 5
  price {
    per_second = "0.001"
  }
}
`
}

// media runs the media phase and adds its figures to res.
func (e *env) media(ctx context.Context, res *Results) error {
	dir := filepath.Join(e.dir, "media")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "media.hcl")
	if err := os.WriteFile(cfg, []byte(mediaConfig(filepath.Join(dir, "data"))), 0o600); err != nil {
		return err
	}
	env := []string{"TOLLGATE_ADMIN_TOKEN=" + e.adminToken}
	var pprofAddr string
	if e.o.OnlyMedia && e.o.ProfileDir != "" {
		port, err := freePort()
		if err != nil {
			return err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		env = append(env, "TOLLGATE_PPROF_ADDR="+pprofAddr)
	}
	p, base, err := e.serve("tollgate (media)", cfg, filepath.Join(dir, "data"), env,
		filepath.Join(dir, "gateway.log"))
	if err != nil {
		return err
	}
	defer p.stop()
	adm := admin{base: base, token: e.adminToken, c: &http.Client{Timeout: 10 * time.Second}}
	key, err := adm.createKey(ctx, "100000000")
	if err != nil {
		return err
	}
	m := &mediaRun{base: base, key: key.Key, adm: adm, acct: key.AccountID, c: NewClient(8)}
	for _, k := range []struct {
		kind, route, body string
		async             bool
	}{
		{"sync", "/v1/search", `{"model":"bench-search","query":"toll roads","max_results":3}`, false},
		{"async", "/v1/videos/generations", `{"model":"bench-video","prompt":"waves","duration":1}`, true},
	} {
		// One unmeasured job warms the path (plugin, store, file host).
		if err := m.submit(ctx, k.route, k.body); err != nil {
			return fmt.Errorf("media %s warm-up: %w", k.kind, err)
		}
		if err := m.settled(ctx); err != nil {
			return err
		}
		before, err := e.proc.TreeCPU(p.pid())
		if err != nil {
			return err
		}
		jobs := e.o.MediaJobs
		errs := m.run(ctx, k.route, k.body, jobs)
		if err := m.settled(ctx); err != nil {
			return err
		}
		after, err := e.proc.TreeCPU(p.pid())
		if err != nil {
			return err
		}
		r := MediaResult{Kind: k.kind, Route: k.route, Jobs: jobs, Errors: errs,
			CPUPerJobUS:       float64((after.Self - before.Self).Microseconds()) / float64(jobs),
			PluginCPUPerJobUS: float64((after.Children - before.Children).Microseconds()) / float64(jobs)}
		res.Media = append(res.Media, r)
		fmt.Fprintf(e.o.Log, "media %s (%s): %d jobs, gateway CPU %.0f µs/job, plugin %.0f µs/job, %d errors\n",
			r.Kind, r.Route, r.Jobs, r.CPUPerJobUS, r.PluginCPUPerJobUS, r.Errors)
		if pprofAddr != "" {
			path, err := m.profile(ctx, pprofAddr, k.route, k.body, max(int(e.o.Window/time.Second), 1),
				filepath.Join(e.o.ProfileDir, "cpu-media-"+k.kind+".pprof"))
			if err != nil {
				return err
			}
			res.Profiles = append(res.Profiles, path)
		}
	}
	return nil
}

// profile records a CPU profile of the gateway over secs seconds of
// unmeasured jobs, 8 at a time, and waits until they have settled.
func (m *mediaRun) profile(ctx context.Context, pprofAddr, route, body string, secs int, path string) (string, error) {
	pc := &http.Client{Timeout: time.Duration(secs)*time.Second + 30*time.Second}
	type got struct {
		b   []byte
		err error
	}
	out := make(chan got, 1)
	go func() {
		b, err := fetch(ctx, pc, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, secs))
		out <- got{b, err}
	}()
	stop := time.Now().Add(time.Duration(secs) * time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				_ = m.submit(ctx, route, body)
			}
		}()
	}
	wg.Wait()
	g := <-out
	if g.err != nil {
		return "", fmt.Errorf("media profile: %w", g.err)
	}
	if err := m.settled(ctx); err != nil {
		return "", err
	}
	return path, writeFile(path, g.b)
}

// mediaRun is the client side of the media phase.
type mediaRun struct {
	base, key, acct string
	adm             admin
	c               *http.Client
}

// run submits n jobs, 8 at a time, and returns how many failed.
func (m *mediaRun) run(ctx context.Context, route, body string, n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if err := m.submit(ctx, route, body); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return failed
}

func (m *mediaRun) submit(ctx context.Context, route, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+route, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", route, resp.StatusCode, truncate(b))
	}
	return nil
}

// settled waits until the account holds nothing: every job's row is
// written and its hold closed.
func (m *mediaRun) settled(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.base+"/admin/v1/accounts/"+m.acct, nil)
		req.Header.Set("Authorization", "Bearer "+m.adm.token)
		resp, err := m.adm.c.Do(req)
		if err != nil {
			return err
		}
		var a struct{ Held string }
		err = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		if err == nil && a.Held == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("media jobs still hold %s after 2 minutes", a.Held)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
