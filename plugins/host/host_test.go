package host_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/conformance/echo"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// helperEnv makes the test binary a host of the plugin at its value: it
// prints the plugin's pid and waits to be killed.
const helperEnv = "TOLLGATE_HOST_TEST_HELPER"

func TestMain(m *testing.M) {
	if bin := os.Getenv(helperEnv); bin != "" {
		if err := runHelper(bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

func runHelper(bin string) error {
	h := host.New(hclog.NewNullLogger())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := h.Start(ctx, "helper", host.Exec{Path: bin}, mainConfig)
	if err != nil {
		return err
	}
	pid, _, err := report(ctx, v)
	if err != nil {
		return err
	}
	fmt.Println(pid)
	select {} // until SIGKILLed
}

var mainConfig = vendor.Config{Channels: []vendor.Channel{{Name: "main", APIKey: "k"}}}

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// plugin builds internal/testcrash once per test binary;
// TestMain removes it.
func plugin(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs a plugin process")
	}
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "tollgate-host-test")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "tollgate-plugin-testcrash")
		out, err := exec.Command("go", "build", "-o", build.bin,
			"github.com/tollgate-gw/tollgate/internal/testcrash").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// safeBuffer is a log sink written by the host's goroutines.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start launches the test plugin under a new host, closed with the test.
func start(t testing.TB, log hclog.Logger) (*host.Host, vendor.Vendor) {
	t.Helper()
	bin := plugin(t)
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h := host.New(log)
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := h.Start(ctx, "testcrash", host.Exec{Path: bin}, mainConfig)
	if err != nil {
		t.Fatal(err)
	}
	return h, v
}

func request(prompt string, stream bool) *vendor.ChatRequest {
	return &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Model: "m", Stream: stream,
		Body: conformance.Body("openai_chat", "m", prompt, stream), Timeout: 10 * time.Second}
}

// report asks the plugin for its pid and environment.
func report(ctx context.Context, v vendor.Vendor) (int, []string, error) {
	resp, err := v.Chat(ctx, request("[env]", false))
	if err != nil {
		return 0, nil, err
	}
	var r struct {
		Pid int
		Env []string
	}
	content := gjson.GetBytes(resp.Body, "choices.0.message.content").String()
	if err := json.Unmarshal([]byte(content), &r); err != nil {
		return 0, nil, fmt.Errorf("report %q: %w", resp.Body, err)
	}
	return r.Pid, r.Env, nil
}

func mustReport(t *testing.T, v vendor.Vendor) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pid, env, err := report(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	return pid, env
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin process %d still runs after %v", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func kind(err error) vendor.FailureKind {
	var f *vendor.Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return -1
}

func TestCallsAndStreamsThroughTheProcess(t *testing.T) {
	logs := &safeBuffer{}
	_, v := start(t, hclog.New(&hclog.LoggerOptions{Name: "gw", Output: logs, Level: hclog.Trace}))
	ctx := t.Context()
	d, err := v.Describe(ctx)
	if err != nil || d.Name != echo.Name || len(d.Protocols) != 4 {
		t.Fatalf("describe %+v %v", d, err)
	}
	resp, err := v.Chat(ctx, request("hi", false))
	if err != nil || resp.Status != 200 || gjson.GetBytes(resp.Body, "choices.0.message.content").String() != "echo" {
		t.Fatalf("chat %+v %v", resp, err)
	}
	var s conformance.Recorder
	if err := v.ChatStream(ctx, request("hi [echo:events=7]", true), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Heads) != 1 || s.Heads[0].Status != 200 || len(s.Events) != 7 || string(s.Events[6].Data) != "[DONE]" {
		t.Fatalf("stream: heads %+v, %d events", s.Heads, len(s.Events))
	}
	// The plugin's JSON log lines are re-logged under the gateway's logger
	// and the plugin's name.
	if out := logs.String(); !strings.Contains(out, "gw.testcrash") || !strings.Contains(out, "plugin address") {
		t.Fatalf("plugin logs not relayed:\n%s", out)
	}
}

func TestPluginSeesNoHostEnvironment(t *testing.T) {
	t.Setenv("TOLLGATE_TEST_SECRET", "hunter2")
	_, v := start(t, nil)
	_, env := mustReport(t, v)
	procs := false
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.Contains(kv, "hunter2") || name == "PATH" || name == "HOME" {
			t.Fatalf("the plugin sees the host's %s", name)
		}
		if name == "GOMAXPROCS" {
			if want := "GOMAXPROCS=" + strconv.Itoa(max(1, runtime.GOMAXPROCS(0)/2)); kv != want {
				t.Errorf("the plugin runs with %s, want %s", kv, want)
			}
			procs = true
			continue
		}
		if name == "GOMEMLIMIT" {
			t.Errorf("the plugin runs with %s without a memory_limit", kv)
			continue
		}
		if !strings.HasPrefix(name, "PLUGIN_") && name != vendor.Handshake.MagicCookieKey {
			t.Errorf("unexpected variable %s in the plugin's environment", name)
		}
	}
	if len(env) == 0 {
		t.Fatal("empty environment: the handshake cookie is missing")
	}
	if !procs {
		t.Error("the plugin was not given its GOMAXPROCS")
	}
}

// TestPluginRunsWithItsGOMAXPROCS: a plugin block's gomaxprocs reaches
// the process.
func TestPluginRunsWithItsGOMAXPROCS(t *testing.T) {
	h := host.New(hclog.NewNullLogger())
	t.Cleanup(h.Close)
	v, err := h.Start(t.Context(), "procs", host.Exec{Path: plugin(t), Procs: 3}, mainConfig)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("procs").Procs(); got != 3 {
		t.Errorf("Procs() = %d, want 3", got)
	}
	_, env := mustReport(t, v)
	if !slices.Contains(env, "GOMAXPROCS=3") {
		t.Errorf("the plugin's environment %q lacks GOMAXPROCS=3", env)
	}
}

// TestPluginRunsWithItsMemoryLimit: a plugin block's memory_limit is the
// soft memory limit the plugin's Go runtime runs with; the gateway's own
// GOMEMLIMIT does not reach it.
func TestPluginRunsWithItsMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	h := host.New(hclog.NewNullLogger())
	t.Cleanup(h.Close)
	for _, tc := range []struct {
		name string
		set  int64
		want int64
	}{{"limited", 40 << 20, 40 << 20}, {"default", 0, 0}} {
		v, err := h.Start(t.Context(), tc.name, host.Exec{Path: plugin(t), MemoryLimit: tc.set}, mainConfig)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Get(tc.name).MemoryLimit(); got != tc.want {
			t.Errorf("%s: MemoryLimit() = %d, want %d", tc.name, got, tc.want)
		}
		resp, err := v.Chat(t.Context(), request("[env]", false))
		if err != nil {
			t.Fatal(err)
		}
		content := gjson.GetBytes(resp.Body, "choices.0.message.content").String()
		if got := gjson.Get(content, "memlimit").Int(); got != cmp.Or(tc.want, math.MaxInt64) {
			t.Errorf("%s: the plugin's runtime runs with a memory limit of %d bytes, want %d (%s)", tc.name, got, tc.want, content)
		}
	}
}

// waitBack calls until the restarted plugin answers.
func waitBack(t *testing.T, v vendor.Vendor) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pid, _, err := report(ctx, v)
		cancel()
		if err == nil {
			return pid
		}
		if kind(err) != vendor.FailureConnect {
			t.Fatalf("while restarting: %v, want a connect failure", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin did not come back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCrashMidCallThenRestart(t *testing.T) {
	_, v := start(t, nil)
	pid, _ := mustReport(t, v)

	_, err := v.Chat(t.Context(), request("[crash]", false))
	var f *vendor.Failure
	if !errors.As(err, &f) || f.Kind != vendor.FailureConnect || !strings.Contains(f.Message, "exited") || !f.PluginDied {
		t.Fatalf("crash mid-call: %#v, want a connect failure saying the plugin exited, to be made again", err)
	}
	waitGone(t, pid, 2*time.Second)
	// Calls to channel "main" succeed again: the new process was configured.
	pid2 := waitBack(t, v)
	if pid2 == pid {
		t.Fatalf("same pid %d after a crash", pid)
	}

	// Mid-stream the answer has begun: the caller sees it break off.
	var s conformance.Recorder
	err = v.ChatStream(t.Context(), request("[crash]", true), &s)
	if kind(err) != vendor.FailureBroken || len(s.Heads) != 1 || errors.As(err, &f) && f.PluginDied {
		t.Fatalf("crash mid-stream: %v after %d heads, want a broken failure not to be made again", err, len(s.Heads))
	}
	if pid3 := waitBack(t, v); pid3 == pid2 {
		t.Fatalf("same pid %d after a crash", pid3)
	}
}

// A call that arrives while the plugin restarts waits for it and is
// served; with a wait shorter than the restart it fails as unreachable.
func TestCallWaitsForARestart(t *testing.T) {
	h, v := start(t, nil)
	pid, _ := mustReport(t, v)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 2*time.Second)
	waitDown(t, v)
	resp, err := v.Chat(t.Context(), request("hi", false))
	if err != nil || resp.Status != 200 {
		t.Fatalf("a call during the restart: %+v %v, want it to wait and be served", resp, err)
	}
	pid2, _ := mustReport(t, v)
	h.SetRestartWait(time.Nanosecond)
	if err := syscall.Kill(pid2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid2, 2*time.Second)
	waitDown(t, v)
	_, err = v.Chat(t.Context(), request("hi", false))
	var f *vendor.Failure
	if !errors.As(err, &f) || f.Kind != vendor.FailureConnect || f.PluginDied || !strings.Contains(f.Message, "not running") {
		t.Fatalf("a call that cannot wait: %#v, want a connect failure", err)
	}
	h.SetRestartWait(0)
	waitBack(t, v)
}

// waitDown waits until the host has seen the process exit (a call made
// before that goes to the dead process and fails as PluginDied).
func waitDown(t *testing.T, v vendor.Vendor) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); v.(*host.Plugin).Up(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the host did not see the plugin exit")
		}
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	h, v := start(t, nil)
	pid, _ := mustReport(t, v)
	h.Close()
	if alive(pid) {
		t.Fatalf("plugin %d runs after Close", pid)
	}
	if _, err := v.Chat(t.Context(), request("hi", false)); kind(err) != vendor.FailureConnect {
		t.Fatalf("call after Close: %v, want a connect failure", err)
	}
	h.Close() // twice is harmless
	if _, err := h.Start(t.Context(), "late", host.Exec{Path: plugin(t)}, mainConfig); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestSIGKILLedHostLeavesNoOrphan(t *testing.T) {
	bin := plugin(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+bin)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		lines <- sc.Text()
	}()
	var pid int
	select {
	case line := <-lines:
		if pid, err = strconv.Atoi(line); err != nil {
			t.Fatalf("helper said %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the helper host never reported its plugin")
	}
	if !alive(pid) {
		t.Fatalf("plugin %d is not running", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid, 2*time.Second)
}

func TestStartFailures(t *testing.T) {
	notPlugin := filepath.Join(t.TempDir(), "not-a-plugin")
	if err := os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path string }{
		{"missing binary", filepath.Join(t.TempDir(), "nope")},
		{"not a plugin", notPlugin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := host.New(hclog.NewNullLogger())
			defer h.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if _, err := h.Start(ctx, "bad", host.Exec{Path: tt.path}, mainConfig); err == nil || !strings.Contains(err.Error(), "bad") {
				t.Fatalf("Start = %v, want an error naming the plugin", err)
			}
		})
	}
}

func TestFind(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	beside := filepath.Join(filepath.Dir(exe), "tollgate-plugin-findtest-beside")
	if err := os.WriteFile(beside, nil, 0o755); err != nil {
		t.Skipf("cannot write beside the test binary: %v", err)
	}
	t.Cleanup(func() { os.Remove(beside) })
	dir := t.TempDir()
	inDir := filepath.Join(dir, "tollgate-plugin-findtest-dir")
	explicit := filepath.Join(dir, "custom")
	for _, p := range []string{inDir, explicit} {
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TOLLGATE_PLUGIN_DIR", dir)
	tests := []struct {
		name, plugin, explicit, want string
		errHas                       []string
	}{
		{"explicit", "findtest-beside", explicit, explicit, nil},
		{"explicit missing", "x", filepath.Join(dir, "missing"), "", []string{"missing"}},
		{"beside the executable", "findtest-beside", "", beside, nil},
		{"plugin dir", "findtest-dir", "", inDir, nil},
		{"nowhere", "findtest-none", "", "", []string{
			filepath.Join(filepath.Dir(exe), "tollgate-plugin-findtest-none"),
			filepath.Join(dir, "tollgate-plugin-findtest-none"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := host.Find(tt.plugin, tt.explicit)
			if tt.errHas == nil {
				if err != nil || got != tt.want {
					t.Fatalf("Find = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find = %q, want an error", got)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
	if got := host.Available(); !slices.Contains(got, "findtest-beside") || !slices.Contains(got, "findtest-dir") || !slices.IsSorted(got) {
		t.Errorf("Available = %v", got)
	}
}

// The echo vendor passes the suite behind the host over both transports:
// as a plugin process, and in process (as the gateway runs a channel with
// transport = "in-process").
func TestConformanceThroughHost(t *testing.T) {
	for name, run := range map[string]func(t testing.TB, log hclog.Logger) (*host.Host, vendor.Vendor){
		"process": start, "in_process": startInProcess,
	} {
		t.Run(name, func(t *testing.T) {
			conformance.Run(t, conformance.Target{
				Name: echo.Name,
				New: func(t *testing.T) vendor.Vendor {
					_, v := run(t, nil)
					return v
				},
				Protocols: []string{"openai_chat", "anthropic_messages", "openai_responses", "gemini_native"},
				Request:   conformance.MarkerRequest,
			})
		})
	}
}
