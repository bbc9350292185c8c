package testkind

import (
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// A real `go test -json` run of marked tests (parallel, skipped, failed,
// marked in a subtest's cleanup) is counted by kind and ending.
func TestCountsARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test package")
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./testdata/fixture")
	cmd.Env = append(os.Environ(), "TESTKIND_FIXTURE=1")
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("the fixture's failing test did not fail the run:\n%s", out)
	}
	rep, err := Count(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	pkg := "github.com/tollgate-gw/tollgate/internal/testkind/testdata/fixture "
	want := map[Kind][]Result{
		Postgres: {{pkg + "TestPostgresPasses", "pass"}, {pkg + "TestPostgresSkips", "skip"}},
		Plugins:  {{pkg + "TestPluginsFail", "fail"}},
		SIGKILL:  {{pkg + "TestKillInSubtest/kill", "pass"}},
	}
	if !reflect.DeepEqual(rep.Kinds, want) {
		t.Fatalf("counted %+v\nwant %+v\nfrom:\n%s", rep.Kinds, want, out)
	}
	probs := strings.Join(rep.Problems(Required), "\n")
	for _, p := range []string{"no plugins test passed (1 ran)", "no unprivileged test passed (0 ran)", "postgres test " + pkg + "TestPostgresSkips skipped"} {
		if !strings.Contains(probs, p) {
			t.Errorf("problems lack %q:\n%s", p, probs)
		}
	}
	if strings.Contains(probs, "no postgres") || strings.Contains(probs, "no sigkill") {
		t.Errorf("a kind that passed is named:\n%s", probs)
	}
}

// A marked test whose package died before it ended counts as failed, and
// lines that are not events (build output) are passed over.
func TestUnendedTestFails(t *testing.T) {
	rec := `go: downloading example.com/x v1.0.0
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: tollgate-test-kind: postgres\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"panic: test timed out after 20m0s\n"}
{"Action":"fail","Package":"p"}
`
	rep, err := Count(strings.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Kinds[Postgres]; len(got) != 1 || got[0].Action != "fail" {
		t.Fatalf("counted %+v", rep.Kinds)
	}
	if p := rep.Problems([]Kind{Postgres}); len(p) != 1 || !strings.Contains(p[0], "no postgres test passed (1 ran)") {
		t.Fatalf("problems %q", p)
	}
}

// A record that is not go test -json is an error, not an empty pass.
func TestBadRecord(t *testing.T) {
	if _, err := Count(strings.NewReader("{\"Action\":\n")); err == nil {
		t.Fatal("a broken event was read")
	}
	rep, err := Count(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Problems(Required); len(p) != len(Required) {
		t.Fatalf("an empty record: %q", p)
	}
}
