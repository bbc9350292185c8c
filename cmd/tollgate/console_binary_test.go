package main

import (
	"bytes"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// What docs/console.md shows an operator typing to let people in: an
// account, its people (`tollgate admin user create`, a password made or
// read from standard input), an invitation, a removal; each person then
// signs into the real gateway's console.
func TestBinaryUsers(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	global := []string{"admin", "--url", g.URL, "--token", testgw.AdminToken}
	admin := func(t *testing.T, args ...string) string {
		t.Helper()
		out, errOut, code := tollgateCmd(t, nil, append(append([]string{}, global...), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	field := func(t *testing.T, out, re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %s in:\n%s", re, out)
		}
		return m[1]
	}
	acct := field(t, admin(t, "account", "create", "--name", "Acme"), `(?m)^id: +(\S+)$`)

	// A made password, printed once.
	out := admin(t, "user", "create", acct, "--email", "Ops@Acme.example")
	if field(t, out, `(?m)^role: +(\S+)$`) != "owner" || field(t, out, `(?m)^email: +(\S+)$`) != "ops@acme.example" {
		t.Fatalf("user create:\n%s", out)
	}
	pw := field(t, out, `Their password, shown once: (\S+)`)
	if err := testgw.NewConsoleClient(g.URL).SignIn("ops@acme.example", pw); err != nil {
		t.Fatalf("sign in with the made password: %v", err)
	}

	// A password from standard input.
	cmd := exec.Command(filepath.Join(testgw.Build(t), "tollgate"), append(append([]string{}, global...),
		"user", "create", acct, "--email", "dev@acme.example", "--role", "member", "--password-stdin")...)
	cmd.Stdin = strings.NewReader("a password of mine\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("user create --password-stdin: %v %s", err, stderr.String())
	}
	if strings.Contains(stdout.String(), "shown once") {
		t.Fatalf("a given password was printed:\n%s", stdout.String())
	}
	dev := testgw.NewConsoleClient(g.URL)
	if err := dev.SignIn("dev@acme.example", "a password of mine"); err != nil {
		t.Fatalf("sign in with the password given on stdin: %v", err)
	}

	// An invitation link, accepted in the console.
	out = admin(t, "user", "invite", acct, "--role", "admin")
	token := field(t, out, `/console/signup\?invitation=([A-Za-z0-9_-]+)`)
	if err := testgw.NewConsoleClient(g.URL).SignUp("lead@acme.example", "another password", token); err != nil {
		t.Fatalf("accept the invitation: %v", err)
	}
	out = admin(t, "user", "list", acct)
	for _, want := range []string{"ops@acme.example", "dev@acme.example", "lead@acme.example", "admin", "member"} {
		if !strings.Contains(out, want) {
			t.Fatalf("user list lacks %q:\n%s", want, out)
		}
	}

	// Removed: signed out at once, and no sign-in.
	devID := field(t, out, `(?m)^(usr_\S+) +dev@acme\.example`)
	admin(t, "user", "delete", devID)
	if st, _, _ := dev.Get("/console/keys"); st != http.StatusSeeOther {
		t.Fatalf("a removed person's session: %d", st)
	}
	if err := testgw.NewConsoleClient(g.URL).SignIn("dev@acme.example", "a password of mine"); err == nil {
		t.Fatal("a removed person signed in")
	}
	if _, errOut, code := tollgateCmd(t, nil, append(append([]string{}, global...), "user", "create", "acct_missing", "--email", "x@y.example")...); code == 0 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("a user of an unknown account: %d %s", code, errOut)
	}
}

const consoleConfig = `
server {
  allow_private_urls = true
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["sim-chat"]
}
model "sim-chat" {
  owned_by = "sim"
  price {
    input  = "0.10"
    output = "0.40"
  }
}
`

// The console is off in a config file without its block, on under
// /console/ with one, and on its own address with console { listen }.
func TestBinaryConsoleListeners(t *testing.T) {
	off := testgw.Start(t, testgw.Options{Config: consoleConfig})
	if st := status(t, off.URL+"/console/signin"); st != http.StatusNotFound {
		t.Fatalf("a config without a console block serves /console/: %d", st)
	}
	if strings.Contains(off.Output(), "console:") {
		t.Fatalf("the banner names a console that is off:\n%s", off.Output())
	}

	on := testgw.Start(t, testgw.Options{Config: consoleConfig + "console {}\n"})
	if st := status(t, on.URL+"/console/signin"); st != http.StatusOK {
		t.Fatalf("console {} on the main listener: %d", st)
	}
	if st := status(t, on.URL+"/console/signup"); st != http.StatusForbidden {
		t.Fatalf("sign-up in a config file that does not open it: %d", st)
	}

	own := testgw.Start(t, testgw.Options{Config: consoleConfig + "console {\n  listen = \"127.0.0.1:0\"\n}\naccounts {\n  signup = true\n}\n"})
	m := regexp.MustCompile(`console: +(http://\S+)/console/`).FindStringSubmatch(own.Output())
	if m == nil {
		t.Fatalf("the banner does not say where the console is:\n%s", own.Output())
	}
	at := m[1]
	if at == own.URL {
		t.Fatalf("the console's own listener is the main one: %s", at)
	}
	if st := status(t, own.URL+"/console/signin"); st != http.StatusNotFound {
		t.Fatalf("the main listener serves the console too: %d", st)
	}
	if st := status(t, at+"/"); st != http.StatusSeeOther {
		t.Fatalf("the console's listener at / does not send to /console/: %d", st)
	}
	c := testgw.NewConsoleClient(at)
	if err := c.SignUp("ada@example.com", "a long password", ""); err != nil {
		t.Fatalf("sign up on the console's listener: %v", err)
	}
	if _, _, _, err := c.Post("/console/keys", map[string][]string{"name": {"k"}}); err != nil {
		t.Fatal(err)
	}
	// Its examples name the API's address, not the console's.
	_, body, err := c.Get("/console/")
	if err != nil || !strings.Contains(body, own.URL+"/v1/chat/completions") {
		t.Fatalf("the console's examples do not name the API at %s (%v):\n%s", own.URL, err, body)
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
