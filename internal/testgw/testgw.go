// Package testgw starts the real tollgate binary, with its real plugin
// processes, for integration tests, and talks to its admin API.
package testgw

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testkind"
)

// AdminToken is the admin token every test gateway runs with.
const AdminToken = "test-admin-token"

// Plugins are the vendor plugin binaries built beside the gateway.
var Plugins = []string{"sim", "openai", "anthropic", "gemini", "openai-compatible", "suno", "elevenlabs", "tavily", "syncso"}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// repoRoot finds the module root from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Build compiles tollgate and the plugins once per test process into a
// temporary directory and returns it.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		sweepBuildDirs()
		buildDir = filepath.Join(os.TempDir(), fmt.Sprintf("%s%d", buildPrefix, os.Getpid()))
		if buildErr = os.MkdirAll(buildDir, 0o755); buildErr != nil {
			return
		}
		targets := map[string]string{"tollgate": "./cmd/tollgate"}
		for _, p := range Plugins {
			targets["tollgate-plugin-"+p] = "./cmd/tollgate-plugin-" + p
		}
		for name, pkg := range targets {
			if _, err := os.Stat(filepath.Join(repoRoot(), pkg)); err != nil {
				continue
			}
			cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, name), pkg)
			cmd.Dir = repoRoot()
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

const buildPrefix = "tollgate-bin-"

// sweepBuildDirs removes the build directories of test processes that have
// ended: a test binary cannot remove its own at exit (it has no TestMain),
// and each holds about 300 MB of binaries.
func sweepBuildDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), buildPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), buildPrefix))
		if err != nil {
			// An older layout (MkdirTemp's random suffix): gone after a day.
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
				os.RemoveAll(d)
			}
			continue
		}
		if pid != os.Getpid() && !processAlive(pid) {
			os.RemoveAll(d)
		}
	}
}

// BuildExtra compiles another main package into the build directory.
func BuildExtra(t testing.TB, name, pkg string) string {
	t.Helper()
	dir := Build(t)
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = repoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Gateway is a running tollgate process.
type Gateway struct {
	URL     string
	DataDir string
	Cmd     *exec.Cmd
	// Client makes the admin calls (nil: http.DefaultClient); a test of
	// an HTTPS gateway sets one that trusts its certificate.
	Client *http.Client
	config string // the HCL it runs on; empty: the embedded default
	t      testing.TB
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
}

// Options start a gateway.
type Options struct {
	Config  string   // HCL text; empty = the embedded default
	DataDir string   // reuse a data dir (restart tests); empty = a new temp dir
	Binary  string   // another binary than tollgate (custom-stage example)
	Env     []string // extra environment
	Args    []string // extra serve args
	Dir     string   // the working directory; empty = the test's
	// NoAudit says why the gateway's books are not audited when the test
	// ends (they are broken on purpose); empty audits them (CheckBooks).
	NoAudit string
}

// Start runs tollgate serve and waits until it listens.
func Start(t testing.TB, o Options) *Gateway {
	t.Helper()
	dir := Build(t)
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	bin := filepath.Join(dir, "tollgate")
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", o.DataDir, "--log-level", "debug"}
	if o.Binary != "" {
		bin = o.Binary
		args = nil
	}
	if o.Config != "" {
		path := filepath.Join(o.DataDir, "tollgate.hcl")
		cfg := strings.ReplaceAll(o.Config, "@DATA@", o.DataDir)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	args = append(args, o.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "TOLLGATE_ADMIN_TOKEN="+AdminToken)
	cmd.Env = append(cmd.Env, o.Env...)
	g := &Gateway{DataDir: o.DataDir, Cmd: cmd, t: t, exited: make(chan struct{})}
	if o.Config != "" {
		g.config = strings.ReplaceAll(o.Config, "@DATA@", o.DataDir)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{g: g}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.out.WriteString(line + "\n")
			g.mu.Unlock()
			if u, ok := strings.CutPrefix(line, "Tollgate listening on "); ok {
				select {
				case ready <- u:
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(g.exited) }()
	select {
	case g.URL = <-ready:
	case <-g.exited:
		t.Fatalf("tollgate exited before listening:\n%s", g.Output())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("tollgate did not start in 30s:\n%s", g.Output())
	}
	t.Cleanup(func() {
		g.Stop()
		if strings.Contains(g.Output(), "plugin started") { // go-plugin's line, at log level debug
			testkind.Mark(t, testkind.Plugins)
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", g.Output())
		}
	})
	if o.NoAudit == "" {
		t.Cleanup(g.auditAtEnd) // runs first: before the stop above
	}
	return g
}

type lockedWriter struct{ g *Gateway }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.g.out.Write(p)
}

// Output is everything the process printed so far.
func (g *Gateway) Output() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.String()
}

// Stop ends the process with SIGTERM and waits (SIGKILL after 10s).
func (g *Gateway) Stop() {
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		_ = g.Cmd.Process.Kill()
		<-g.exited
	}
}

// Alive reports whether the process is still running.
func (g *Gateway) Alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs the process and waits for it.
func (g *Gateway) Kill() {
	testkind.Mark(g.t, testkind.SIGKILL)
	_ = g.Cmd.Process.Kill()
	<-g.exited
}

// Admin calls the admin API, fails the test unless the answer is 2xx,
// decodes the JSON answer into out (may be nil) and returns the status.
// A test that expects a refusal uses AdminStatus.
func (g *Gateway) Admin(method, path string, body any, out any) int {
	g.t.Helper()
	status, data := g.admin(method, path, body)
	if status < 200 || status > 299 {
		g.t.Fatalf("admin %s %s: status %d: %s", method, path, status, data)
	}
	g.decode(method, path, data, out)
	return status
}

// AdminStatus calls the admin API and returns its status whatever it is,
// with the JSON answer decoded into out (may be nil): for tests that expect
// a refusal, which check the status themselves.
func (g *Gateway) AdminStatus(method, path string, body any, out any) int {
	g.t.Helper()
	status, data := g.admin(method, path, body)
	g.decode(method, path, data, out)
	return status
}

func (g *Gateway) admin(method, path string, body any) (int, []byte) {
	g.t.Helper()
	return g.adminAt(g.URL, AdminToken, method, path, body)
}

// adminAt calls the admin API at base (the gateway's root) with token.
func (g *Gateway) adminAt(base, token, method, path string, body any) (int, []byte) {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			g.t.Fatalf("admin %s %s: %v", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+"/admin/v1"+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	client := g.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatalf("admin %s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, data
}

func (g *Gateway) decode(method, path string, data []byte, out any) {
	g.t.Helper()
	if out == nil {
		return
	}
	if err := json.Unmarshal(data, out); err != nil {
		g.t.Fatalf("admin %s %s: %v: %s", method, path, err, data)
	}
}

// Account creates an account with the given credit ("" = the sign-up credit).
func (g *Gateway) Account(credit string) string {
	g.t.Helper()
	body := map[string]any{"name": "test"}
	if credit != "" {
		body["initial_credit"] = credit
	}
	var a struct{ ID string }
	if st := g.Admin("POST", "/accounts", body, &a); st != http.StatusCreated || a.ID == "" {
		g.t.Fatalf("create account: %d %+v", st, a)
	}
	return a.ID
}

// Key creates a key for an account; extra fields are merged into the request.
func (g *Gateway) Key(accountID string, extra map[string]any) (id, raw string) {
	g.t.Helper()
	body := map[string]any{"name": "test key"}
	for k, v := range extra {
		body[k] = v
	}
	var k struct{ ID, Key string }
	if st := g.Admin("POST", "/accounts/"+accountID+"/keys", body, &k); st != http.StatusCreated || k.Key == "" {
		g.t.Fatalf("create key: %d %+v", st, k)
	}
	return k.ID, k.Key
}

// Balance returns the account's balance and held amounts as strings.
func (g *Gateway) Balance(accountID string) (balance, held string) {
	g.t.Helper()
	var a struct{ Balance, Held string }
	g.Admin("GET", "/accounts/"+accountID, nil, &a)
	if a.Balance == "" || a.Held == "" {
		g.t.Fatalf("account %s: no balance or held in the answer", accountID)
	}
	return a.Balance, a.Held
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
