package testgw

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// CheckStoppedBooks fails the test unless the books of the stopped
// gateway's data directory pass `tollgate audit --data-dir`, as an
// operator would run it: a hold left open at the stop is named. A gateway
// on PostgreSQL keeps no store there; nothing is checked.
func (g *Gateway) CheckStoppedBooks() {
	g.t.Helper()
	if _, err := os.Stat(filepath.Join(g.DataDir, "badger")); err != nil {
		return
	}
	if rep, code := AuditDir(g.t, g.DataDir); code != 0 || !rep.OK {
		g.t.Errorf("the books of the stopped gateway's %s fail their audit (exit %d):\n%s", g.DataDir, code, Violations(rep))
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
	cmd := exec.Command(filepath.Join(Build(t), "tollgate"), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOLLGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
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
