package integration

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// Item 9 of issue 22: the admin API shared the public listener with no
// brake (20,000 wrong tokens in 1.1 s, no throttle, no log line).

// adminAddrOf reads the admin listener's address from the banner.
func adminAddrOf(t *testing.T, g *testgw.Gateway) string {
	t.Helper()
	m := regexp.MustCompile(`admin:\s+http://(\S+)/admin/v1`).FindStringSubmatch(g.Output())
	if m == nil {
		t.Fatalf("no admin line in the banner:\n%s", g.Output())
	}
	return "http://" + m[1]
}

// adminAt calls the admin API at base with token.
func adminAt(t *testing.T, base, method, path, token, body string) call {
	t.Helper()
	return do(t, method, base+"/admin/v1"+path, map[string]string{"Authorization": "Bearer " + token}, body)
}

func TestAdminListen(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{Config: `
server {
  admin_listen = ":0"
}
`})
	admin := adminAddrOf(t, g)
	if !strings.HasPrefix(admin, "http://127.0.0.1:") {
		t.Fatalf("a port alone is not on loopback: %s", admin)
	}
	if r := adminAt(t, g.URL, "GET", "/accounts", testgw.AdminToken, ""); r.Status != 404 {
		t.Fatalf("the API's listener still serves the admin API: %d %s", r.Status, r.Body)
	}
	r := adminAt(t, admin, "POST", "/accounts", testgw.AdminToken, `{"name":"own listener"}`)
	if r.Status != 201 {
		t.Fatalf("create an account on admin_listen: %d %s", r.Status, r.Body)
	}
	// The CLI reaches it with --url.
	bin := filepath.Join(testgw.Build(t), "tollgate")
	cmd := exec.Command(bin, "admin", "--url", admin, "--token", testgw.AdminToken, "account", "list")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "own listener") {
		t.Fatalf("tollgate admin on admin_listen: %v\n%s", err, out)
	}
}

// An address that keeps sending wrong admin tokens is refused with 429,
// even with the right one, and the gateway says so in its log.
func TestAdminFailedAttemptsCeiling(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{})
	for i := range 10 {
		if r := adminAt(t, g.URL, "GET", "/accounts", "wrong-"+itoa(i), ""); r.Status != 401 {
			t.Fatalf("attempt %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	r := adminAt(t, g.URL, "GET", "/accounts", testgw.AdminToken, "")
	if code, _, _ := r.errorOf(t); r.Status != 429 || code != "rate_limit_exceeded" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("past the ceiling: %d %v %s", r.Status, r.Header, r.Body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Output(), "too many failed admin attempts") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line:\n%s", g.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The public API is not affected.
	if r := do(t, "GET", g.URL+"/v1/models", bearer("sk-tollgate-"+strings.Repeat("0", 64)), ""); r.Status != 401 {
		t.Fatalf("the API: %d", r.Status)
	}
}

// An admin token under 32 characters is refused where the admin API would
// be reachable beyond loopback; the refusal happens before anything listens.
func TestAdminShortTokenBeyondLoopback(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(testgw.Build(t), "tollgate")
	for _, tc := range []struct {
		desc, cfg string
		args      []string
	}{
		{"listen on every interface", "", []string{"--listen", "0.0.0.0:0"}},
		{"admin_listen on every interface", "server {\n  admin_listen = \"0.0.0.0:0\"\n}\n", []string{"--listen", "127.0.0.1:0"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			out := serveExpectFailure(t, bin, tc.cfg, []string{"TOLLGATE_ADMIN_TOKEN=short-admin-token"}, tc.args...)
			if !strings.Contains(out, "32 or more") || strings.Contains(out, "Tollgate listening on") {
				t.Fatalf("want a refusal before listening:\n%s", out)
			}
		})
	}
}
