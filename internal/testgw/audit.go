package testgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/store/audit"
)

// Audit asks the running gateway to audit its books (GET /admin/v1/audit).
func (g *Gateway) Audit() audit.Report {
	g.t.Helper()
	var rep audit.Report
	g.Admin("GET", "/audit", nil, &rep)
	return rep
}

// CheckBooks fails the test unless the running gateway's books pass their
// audit, naming each violation. Every gateway Start runs is checked so
// when its test ends (Options.NoAudit opts out).
func (g *Gateway) CheckBooks() {
	g.t.Helper()
	if rep := g.Audit(); !rep.OK {
		g.t.Errorf("the books of the gateway at %s fail their audit:\n%s", g.URL, Violations(rep))
	}
}

// auditAtEnd audits a gateway as its test ends (unless the test failed
// already): live through its admin API while it runs, then, once it
// stopped cleanly, `tollgate audit` on its data directory (a drained stop
// leaves no hold open). The admin API is found where the banner says
// (admin_listen, a generated token, one in the config); a test that got
// its own address refused (the failed-attempts ceiling) is audited
// offline only.
func (g *Gateway) auditAtEnd() {
	t := g.t
	t.Helper()
	if t.Failed() {
		return
	}
	if g.Alive() {
		base, token := g.adminAccess()
		status, data := g.adminAt(base, token, "GET", "/audit", nil)
		var rep audit.Report
		switch {
		case status == http.StatusTooManyRequests:
			t.Logf("the admin API refuses this address (%s); the books are audited from the data directory once stopped", data)
		case status != http.StatusOK:
			t.Errorf("the end-of-test audit of the gateway at %s: GET /admin/v1/audit: %d %s", base, status, data)
		case json.Unmarshal(data, &rep) != nil:
			t.Errorf("the end-of-test audit of the gateway at %s: unreadable report %s", base, data)
		case !rep.OK:
			t.Errorf("the books of the gateway at %s fail their audit:\n%s", base, Violations(rep))
		}
		g.Stop()
	}
	if st := g.Cmd.ProcessState; st != nil && st.Success() {
		g.CheckStoppedBooks()
	}
}

// The banner's lines the end-of-test audit reads.
var (
	bannerAdmin     = regexp.MustCompile(`(?m)^admin:\s+(https?://\S+)/admin/v1`)
	bannerTokenFile = regexp.MustCompile(`(?m)^admin token:\s+(?:generated into|in) the file (\S+) `)
	bannerData      = regexp.MustCompile(`(?m)^data:\s+(\S+)$`)
	configToken     = regexp.MustCompile(`admin_token\s*=\s*"([^"]+)"`)
)

// adminAccess is where the admin API answers and its token, as the
// gateway's banner tells them.
func (g *Gateway) adminAccess() (base, token string) {
	out := g.Output()
	base, token = g.URL, AdminToken
	if m := bannerAdmin.FindStringSubmatch(out); m != nil {
		base = m[1]
	}
	switch m := bannerTokenFile.FindStringSubmatch(out); {
	case m != nil:
		b, err := os.ReadFile(g.path(m[1]))
		if err != nil {
			g.t.Fatalf("the admin token file the banner names: %v", err)
		}
		token = strings.TrimSpace(string(b))
	case strings.Contains(out, "admin token:  server.admin_token in"):
		if m := configToken.FindStringSubmatch(g.config); m != nil {
			token = m[1]
		}
	}
	return base, token
}

// path resolves a path the gateway printed against its working directory.
func (g *Gateway) path(p string) string {
	if filepath.IsAbs(p) || g.Cmd.Dir == "" {
		return p
	}
	return filepath.Join(g.Cmd.Dir, p)
}

// CheckStoppedBooks fails the test unless the books of the stopped
// gateway's data directory (the one its banner names) pass `tollgate audit
// --data-dir`, as an operator would run it: a hold left open at the stop
// is named. A gateway on PostgreSQL keeps no store there; nothing is
// checked (its books were audited live).
func (g *Gateway) CheckStoppedBooks() {
	g.t.Helper()
	dir := g.DataDir
	if m := bannerData.FindStringSubmatch(g.Output()); m != nil {
		dir = g.path(m[1])
	}
	if _, err := os.Stat(filepath.Join(dir, "badger")); err != nil {
		return
	}
	if rep, code := AuditDir(g.t, dir); code != 0 || !rep.OK {
		g.t.Errorf("the books of the stopped gateway's %s fail their audit (exit %d):\n%s", dir, code, Violations(rep))
	}
}

// AuditDir runs `tollgate audit --data-dir dir --json` and returns the
// report and the command's exit status (0 pass, 1 violations, 2 no audit).
func AuditDir(t testing.TB, dir string, args ...string) (audit.Report, int) {
	t.Helper()
	out, errOut, code := Run(t, append([]string{"audit", "--data-dir", dir, "--json"}, args...)...)
	var rep audit.Report
	if code != 2 {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("tollgate audit --data-dir %s: exit %d, unreadable report %v:\n%s\n%s", dir, code, err, out, errOut)
		}
	} else {
		t.Errorf("tollgate audit --data-dir %s could not audit: %s", dir, errOut)
	}
	return rep, code
}

// Violations lists a report's violations, one a line.
func Violations(rep audit.Report) string {
	var b strings.Builder
	for _, v := range rep.Violations {
		b.WriteString("  " + v.String() + "\n")
	}
	if n := rep.Count - len(rep.Violations); n > 0 {
		b.WriteString("  ...\n")
	}
	return b.String()
}

// Run runs the built tollgate binary with args (none of the test's
// TOLLGATE_* variables reach it) and returns what it printed and its exit
// status.
func Run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return Exec(t, "", nil, append([]string{filepath.Join(Build(t), "tollgate")}, args...)...)
}

// Exec runs the command line in dir with the test's environment, less its
// TOLLGATE_* and *_API_KEY variables, plus env, and returns what it
// printed and its exit status.
func Exec(t testing.TB, dir string, env []string, line ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(line[0], line[1:]...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(name, "_API_KEY") && !strings.HasPrefix(name, "TOLLGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
