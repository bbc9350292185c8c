package multiinstance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/testpg"
)

// run runs the tollgate binary with a config and returns its output.
func run(t *testing.T, env []string, config string, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tollgate.hcl")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(testgw.Build(t), "tollgate"), append(args, "--config", path)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const migrateConfig = `store "postgres" {
  url = env("DATABASE_URL")
}
`

// tollgate migrate applies the schema once; a second run has nothing to
// do; a badger config has no schema.
func TestMigrateCommand(t *testing.T) {
	env := []string{"DATABASE_URL=" + testpg.Database(t)}
	out, err := run(t, env, migrateConfig, "migrate")
	if err != nil || !strings.Contains(out, "applied 0001_init") {
		t.Fatalf("first migrate: %v\n%s", err, out)
	}
	out, err = run(t, env, migrateConfig, "migrate")
	if err != nil || !strings.Contains(out, "(0 migrations applied now)") {
		t.Fatalf("second migrate: %v\n%s", err, out)
	}
	out, err = run(t, nil, `store "badger" {}`, "migrate")
	if err == nil || !strings.Contains(out, `migrate is for a store "postgres" block`) {
		t.Fatalf("migrate on badger: %v\n%s", err, out)
	}
	out, err = run(t, []string{"DATABASE_URL=postgres://127.0.0.1:1/none?connect_timeout=2"}, migrateConfig, "migrate")
	if err == nil || !strings.Contains(out, "cannot reach the database at 127.0.0.1:1/none") {
		t.Fatalf("migrate without a database: %v\n%s", err, out)
	}
}

// serve and config check refuse a postgres store without a master key
// shared by the instances, at the store block's line; config check does
// not reach the database.
func TestServeNeedsASharedMasterKey(t *testing.T) {
	env := []string{"DATABASE_URL=" + testpg.Database(t), "TOLLGATE_MASTER_KEY="}
	for _, args := range [][]string{{"serve", "--listen", "127.0.0.1:0"}, {"config", "check"}} {
		out, err := run(t, env, migrateConfig, args...)
		if err == nil || !strings.Contains(out, "tollgate.hcl:1") || !strings.Contains(out, "one master key") {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	out, err := run(t, []string{"DATABASE_URL=postgres://db.example/x", "TOLLGATE_MASTER_KEY=" + masterKey}, migrateConfig, "config", "check")
	if err != nil || !strings.Contains(out, "postgres://db.example/x") {
		t.Fatalf("config check with a master key: %v\n%s", err, out)
	}
}

// The two-instance example runs as written: a key made through one
// instance calls through the other, and both see one balance.
func TestTwoInstancesExample(t *testing.T) {
	env := []string{"DATABASE_URL=" + testpg.Database(t), "TOLLGATE_MASTER_KEY=" + masterKey}
	data := t.TempDir() // the example's shared dir, given to both
	var gws []*testgw.Gateway
	for _, name := range []string{"a.hcl", "b.hcl"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "examples", "two-instances", name))
		if err != nil {
			t.Fatal(err)
		}
		gws = append(gws, testgw.Start(t, testgw.Options{Config: string(src), Env: env, DataDir: data}))
	}
	if out := gws[0].Output(); !strings.Contains(out, "(shared with the other instances)") {
		t.Fatalf("the banner does not name the shared store:\n%s", out)
	}
	acct := gws[0].Account("5")
	_, key := gws[0].Key(acct, nil)
	a := send("POST", gws[1].URL+"/v1/chat/completions", key,
		`{"model":"sim-chat","messages":[{"role":"user","content":"hi"}]}`, nil)
	if a.Status != 200 {
		t.Fatalf("call through b: %d %s", a.Status, a.Body)
	}
	b0, _ := gws[0].Balance(acct)
	b1, _ := gws[1].Balance(acct)
	if b0 != b1 || b0 == "5" {
		t.Fatalf("balances %s and %s after a charged call", b0, b1)
	}
}
