package integration

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// childrenOf lists the pids whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func waitGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("plugin process %d outlived the gateway", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// The gateway is SIGKILLed between pre-charge and settle. On restart the hold
// is released (no leak, no charge), the call gets an interrupted row, and no
// plugin process outlived the killed gateway.
func TestSIGKILLBetweenPrechargeAndSettle(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, testgw.Options{DataDir: dir})
	acct := g.Account("")
	_, key := g.Key(acct, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/chat/completions",
			strings.NewReader(chatBody("sim-chat", "take your time [sim:latency=60s]", "")))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, held := g.Balance(acct); held != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hold never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	plugins := childrenOf(t, g.Cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("no plugin process found under the gateway")
	}
	g.Kill()
	waitGone(t, plugins, 5*time.Second)
	cancel()

	g2 := startGateway(t, testgw.Options{DataDir: dir})
	bal, held := g2.Balance(acct)
	if bal != "121.32" || held != "0" {
		t.Fatalf("after recovery: balance %s held %s, want 121.32 and 0", bal, held)
	}
	rows := logsOf(t, g2, key)
	if len(rows) != 1 || rows[0]["status"] != "interrupted" || rows[0]["cost"] != "0" || rows[0]["error_code"] != nil {
		t.Fatalf("rows after recovery: %v", rows)
	}
	// A second restart finds nothing more to recover.
	g2.Stop()
	g3 := startGateway(t, testgw.Options{DataDir: dir})
	if rows := logsOf(t, g3, key); len(rows) != 1 {
		t.Fatalf("recovery ran twice: %v", rows)
	}
	if bal, _ := g3.Balance(acct); bal != "121.32" {
		t.Fatalf("balance %s", bal)
	}
}

func TestNoPluginOutlivesAGracefulStop(t *testing.T) {
	g := startGateway(t, testgw.Options{})
	plugins := childrenOf(t, g.Cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("no plugin process")
	}
	g.Stop()
	waitGone(t, plugins, 5*time.Second)
}

func TestFirstStartPrintsADemoKeyThatWorks(t *testing.T) {
	g := startGateway(t, testgw.Options{})
	out := g.Output()
	i := strings.Index(out, "sk-tollgate-")
	if i < 0 || !strings.Contains(out, "curl") || !strings.Contains(out, "121.32") {
		t.Fatalf("banner:\n%s", out)
	}
	key := out[i : i+76]
	c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "Hello!", ""))
	if c.Status != 200 {
		t.Fatalf("demo key: %d %s", c.Status, c.Body)
	}
	// The banner is printed on the first start only.
	dir := g.DataDir
	g.Stop()
	g2 := startGateway(t, testgw.Options{DataDir: dir})
	if strings.Contains(g2.Output(), "sk-tollgate-") {
		t.Fatal("the demo key was printed again")
	}
}

// A plugin process that dies mid-call, before anything reached the client:
// the host restarts it and the call is made again on it, served with the
// failed attempt in its row; its hold is settled once. A call that
// arrives while the plugin is down waits for it.
func TestPluginCrashMidCallIsMadeAgain(t *testing.T) {
	g, acct, key := startDefault(t)
	plugins := childrenOf(t, g.Cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("no plugin process")
	}
	type result struct {
		c   call
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := tryDo("POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "slowly [sim:latency=2s]", ""))
		done <- result{c, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, held := g.Balance(acct); held != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never got under way")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the call is now inside the plugin
	for _, pid := range plugins {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Arriving while the plugin is down: it waits for it.
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "are you back?", "")); c.Status != 200 {
		t.Fatalf("a call during the restart: %d %s", c.Status, c.Body)
	}
	var c call
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		c = r.c
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight did not end")
	}
	if c.Status != 200 {
		t.Fatalf("the call in flight when its plugin died: %d %s", c.Status, c.Body)
	}
	if _, held := g.Balance(acct); held != "0" {
		t.Fatalf("held %s after the crash", held)
	}
	var row map[string]any
	for _, r := range logsOf(t, g, key) {
		if r["request_id"] == c.Header.Get("x-gateway-trace") {
			row = r
		}
	}
	atts, _ := row["attempts"].([]any)
	if row["status"] != "success" || len(atts) != 1 || str(atts[0].(map[string]any)["error_code"]) != "upstream_unreachable" {
		t.Fatalf("row of the call made again: %v", row)
	}
}
