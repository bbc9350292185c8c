package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// These tests run the real tollgate binary, built with its plugins beside
// it (internal/testgw), against a real gateway: what an operator types.

// tollgateCmd runs the built binary with args; no vendor key and no admin
// token from the test's own environment reach it.
func tollgateCmd(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runIn(t, "", env, append([]string{filepath.Join(testgw.Build(t), "tollgate")}, args...)...)
}

// runIn runs a command line in dir ("" for the test's own folder) with
// none of the test's TOLLGATE_* or *_API_KEY variables, plus env.
func runIn(t *testing.T, dir string, env []string, line ...string) (stdout, stderr string, code int) {
	t.Helper()
	return testgw.Exec(t, dir, env, line...)
}

func TestBinaryAdmin(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	admin := func(args ...string) (string, string, int) {
		return tollgateCmd(t, nil, append([]string{"admin", "--url", g.URL, "--token", testgw.AdminToken}, args...)...)
	}
	acct := g.Account("")

	t.Run("keys is key, and --json goes anywhere", func(t *testing.T) {
		for _, args := range [][]string{
			{"--json", "keys", "list", acct},
			{"keys", "--json", "list", acct},
			{"keys", "list", "--json", acct},
			{"keys", "list", acct, "--json"},
		} {
			out, errOut, code := admin(args...)
			var list struct{ Object string }
			if code != 0 || json.Unmarshal([]byte(out), &list) != nil || list.Object != "list" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
	})
	t.Run("key create says the key is shown once", func(t *testing.T) {
		out, errOut, code := admin("key", "create", acct, "--name", "ci")
		if code != 0 || errOut != "" || !regexp.MustCompile(`(?m)^key: +sk-tollgate-[0-9a-f]{64}$`).MatchString(out) {
			t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
		}
		bin := filepath.Join(testgw.Build(t), "tollgate") // the path it was run by, so the command runs as printed
		if !strings.Contains(out, "The raw key is shown once here; store it now (an admin can print it again with: "+bin+" admin key reveal key_") ||
			strings.Contains(out, "revealable") {
			t.Errorf("stdout:\n%s", out)
		}
	})
	t.Run("a useless key is warned of, and made", func(t *testing.T) {
		_, errOut, code := admin("key", "create", acct, "--name", "w", "--allowed-models", "sim-chatt,gpt-4o-mini", "--expires-at", "2001-01-01T00:00:00Z")
		want := "warning: --expires-at 2001-01-01T00:00:00Z is in the past: the key is expired from the start (its calls get 401 api key expired)\n" +
			`warning: --allowed-models: "sim-chatt" is not a model of this gateway (did you mean "sim-chat"?); the key may list it, but calls to it get model_not_found` + "\n"
		if code != 0 || errOut != want {
			t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errOut, want)
		}
	})
	t.Run("a wrong account id names what is missing, with the full path", func(t *testing.T) {
		out, errOut, code := admin("key", "list", "acct_nope")
		want := "error: GET /admin/v1/accounts/acct_nope/keys: 404: account \"acct_nope\" does not exist (not_found)\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("exit %d, stdout %q, stderr %q\nwant %q", code, out, errOut, want)
		}
	})
	t.Run("one error prefix for every command", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"serve", "--lsiten", ":1"}, "error: tollgate serve: unknown flag --lsiten (did you mean --listen?); see tollgate serve --help\n"},
			{[]string{"config", "check", "--config", "/nonexistent.hcl"}, "error: config: open /nonexistent.hcl: no such file or directory\n"},
			{[]string{"admn"}, `error: tollgate: unknown command "admn" (did you mean "admin"?); the commands are serve, admin, kb, config, migrate, audit, completion, version; see tollgate --help` + "\n"},
			{[]string{"admin", "--url", g.URL, "--token", "wrong", "account", "list"}, "error: GET /admin/v1/accounts: 401: admin authentication failed: send Authorization: Bearer <admin token> (invalid_api_key)\n"},
		} {
			_, errOut, code := tollgateCmd(t, nil, tc.args...)
			if code != 1 || errOut != tc.want {
				t.Errorf("%v: exit %d, stderr %q\nwant %q", tc.args, code, errOut, tc.want)
			}
		}
	})
}

func TestBinaryConfigCheck(t *testing.T) {
	t.Run("the example starts without vendor keys", func(t *testing.T) {
		example := filepath.Join("..", "..", "docs", "examples", "tollgate.hcl")
		out, errOut, code := tollgateCmd(t, nil, "config", "check", "--config", example)
		if code != 0 || !strings.HasPrefix(out, "# The effective configuration of "+example) ||
			!strings.Contains(out, "# Channels left out with enabled = false: openai-main, anthropic-main.") ||
			!strings.HasSuffix(errOut, "ok: "+example+" is valid (3 models, 1 channel, vendors: sim)\n") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		// With the keys set, the real channels are on and their plugins configured.
		out, errOut, code = tollgateCmd(t, []string{"OPENAI_API_KEY=sk-test-openai", "ANTHROPIC_API_KEY=sk-test-anthropic"}, "config", "check", "--config", example)
		if code != 0 || strings.Contains(out, "sk-test") || !strings.Contains(out, `api_key   = "<secret, 14 characters>"`) ||
			!strings.Contains(errOut, "vendors: anthropic, openai, sim") {
			t.Errorf("with keys: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("the embedded default", func(t *testing.T) {
		_, errOut, code := tollgateCmd(t, nil, "config", "check", "--quiet")
		if code != 0 || errOut != "ok: the embedded default is valid (27 models, 1 channel, vendors: sim)\n" {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("what cannot work is refused by file:line", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.hcl")
		src := `model "m" {
  price {
    input  = "1"
    output = "2"
  }
}
channel "typo" {
  vendor    = "opnai"
  protocols = ["openai_chat"]
  models    = ["m"]
}
channel "nokey" {
  vendor    = "openai"
  base_url  = "https://api.openai.com/v1"
  api_key   = env("UNSET_FOR_TEST", "")
  protocols = ["openai_chat"]
  models    = ["m"]
}
`
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := tollgateCmd(t, nil, "config", "check", "--config", path)
		want := []string{
			path + `:8,15-22: channel "typo": vendor "opnai" has no plugin (did you mean "openai"?); the plugins found are anthropic, elevenlabs, gemini, openai, openai-compatible, sim, suno, syncso, tavily`,
			path + `:14,15-42: channel "nokey": base_url "https://api.openai.com/v1": give the vendor root without /v1 (https://api.openai.com); the plugin adds the version`,
		}
		if code != 1 || out != "" {
			t.Errorf("exit %d, stdout %q", code, out)
		}
		for _, w := range want {
			if !strings.Contains(errOut, "error: "+w) {
				t.Errorf("stderr lacks %q:\n%s", w, errOut)
			}
		}
		if strings.Contains(errOut, "rpc error") {
			t.Errorf("gRPC wording reached the operator:\n%s", errOut)
		}
		// Typo and base_url fixed: the empty api_key is next, at its line.
		src = strings.Replace(src, `vendor    = "opnai"`, "vendor    = \"openai\"\n  base_url  = \"https://api.openai.com\"\n  api_key   = \"sk-test\"", 1)
		src = strings.Replace(src, `/v1"`, `"`, 1)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code = tollgateCmd(t, nil, "config", "check", "--config", path)
		if want := "error: " + path + `:17,15-40: channel "nokey": api_key is empty (usually api_key = env("VENDOR_API_KEY"); is the variable set?)` + "\n"; code != 1 || errOut != want {
			t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errOut, want)
		}
	})
}

func TestBinaryVersionAndCompletion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tollgate")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7 -X main.commit=abc1234 -X main.date=2030-01-02T03:04:05Z", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if want := "tollgate v9.8.7 (commit abc1234, built 2030-01-02T03:04:05Z)\n"; err != nil || string(out) != want {
			t.Errorf("%v: %q %v, want %q", args, out, err, want)
		}
	}
	out, _, code := tollgateCmd(t, nil, "version")
	if code != 0 || !regexp.MustCompile(`^tollgate dev \(commit \S+, built \S+\)\n$`).MatchString(out) {
		t.Errorf("a plain build: %q", out)
	}
	out, _, code = tollgateCmd(t, nil, "completion", "bash")
	if code != 0 || !strings.Contains(out, "complete -o bashdefault -o default -F _tollgate_complete tollgate") {
		t.Errorf("bash completion: %d %q", code, out)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if out, _, code := tollgateCmd(t, nil, "completion", shell); code != 0 || !strings.Contains(out, "tollgate") {
			t.Errorf("%s completion: %d %q", shell, code, out)
		}
	}
	out, _, _ = tollgateCmd(t, nil, "admin", "key", "--generate-bash-completion")
	for _, w := range []string{"create", "list", "reveal", "update", "delete"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("completion of admin key lacks %s: %q", w, out)
		}
	}
}

// The banner says once what listens, which config, where the admin token
// is (a path, not the token); a later start says the demo account exists
// and gives the command that prints its key again, which works.
func TestBinaryBanner(t *testing.T) {
	dir := t.TempDir()
	noToken := []string{"TOLLGATE_ADMIN_TOKEN="}
	first := testgw.Start(t, testgw.Options{DataDir: dir, Env: noToken})
	out := first.Output() // the listening line is the banner's last
	tokenFile := filepath.Join(dir, "admin.token")
	rawKey := regexp.MustCompile(`(?m)^    (sk-tollgate-[0-9a-f]{64})$`).FindStringSubmatch(out)
	for _, want := range []string{
		"Tollgate listening on " + first.URL + "\n",
		"config:       embedded default",
		"admin token:  generated into the file " + tokenFile + " (" + filepath.Join(testgw.Build(t), "tollgate") + " admin reads it there)\n",
		"A demo account holds 121.32 trial credit.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first banner lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{ // every family the default serves, and a line to try each
		`(?m)^chat: +sim-chat, `,
		`(?m)^image: +sim-image, sim-image-grid, `,
		`(?m)^knowledge: +GET /api/v1/ext/wiki/search`,
		`/v1/images/generations \\\n.*\n.*\n +-d '\{"model": "sim-image", `,
		`/api/v1/ext/wiki/search\?q=idempotency" -H "Authorization: Bearer sk-tollgate-`,
		`(?m)^video: +sim-video, sim-video-hd`,
		`(?m)^search: +sim-search`,
		`/v1/videos/generations \\\n.*\n.*\n +-d '\{"model": "sim-video", `,
		`/v1/search \\\n.*\n.*\n +-d '\{"model": "sim-search", `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("first banner lacks %s:\n%s", want, out)
		}
	}
	if n := strings.Count(strings.ToLower(out), "listening"); n != 1 || rawKey == nil {
		t.Errorf("listening said %d times, key %v:\n%s", n, rawKey, out)
	}
	first.Stop()

	second := testgw.Start(t, testgw.Options{DataDir: dir, Env: noToken})
	out = second.Output()
	cmdLine := regexp.MustCompile(`print its key again with: (\S+/tollgate admin .*key reveal key_[0-9a-f]+)\n`).FindStringSubmatch(out)
	if cmdLine == nil || !strings.Contains(out, "admin token:   in the file "+tokenFile) || strings.Contains(out, "A demo account holds") {
		t.Fatalf("second banner:\n%s", out)
	}
	args := strings.Fields(cmdLine[1])[1:]
	got, errOut, code := tollgateCmd(t, nil, args...)
	if code != 0 || !strings.Contains(got, "key: "+rawKey[1]) {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want the demo key %s", cmdLine[1], code, got, errOut, rawKey[1])
	}
}

// After make run (bin/tollgate serve in the repository, data in ./data),
// the admin commands the banner prints run from any folder: the CLI finds
// the token in the data folder beside its own bin/, and --data-dir or
// TOLLGATE_DATA_DIR name the folder for a binary elsewhere; without them
// the error names both.
func TestBinaryAdminFromAnotherFolder(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	built := testgw.Build(t)
	names, _ := filepath.Glob(filepath.Join(built, "tollgate*"))
	for _, src := range names {
		dst := filepath.Join(repo, "bin", filepath.Base(src))
		if err := os.Link(src, dst); err != nil {
			b, rerr := os.ReadFile(src)
			if rerr != nil || os.WriteFile(dst, b, 0o755) != nil {
				t.Fatalf("bin/%s: %v", filepath.Base(src), err)
			}
		}
	}
	g := testgw.Start(t, testgw.Options{
		Binary: filepath.Join(repo, "bin", "tollgate"), Dir: repo,
		Args: []string{"serve", "--listen", "127.0.0.1:0"}, Env: []string{"TOLLGATE_ADMIN_TOKEN=", "TOLLGATE_DATA_DIR="},
	})
	out := g.Output()
	raw := regexp.MustCompile(`(?m)^    (sk-tollgate-[0-9a-f]{64})$`).FindStringSubmatch(out)
	printed := regexp.MustCompile(`print it again with\s+(\S+ admin [^\n]*key reveal key_[0-9a-f]+)\)`).FindStringSubmatch(out)
	if raw == nil || printed == nil || !strings.HasPrefix(printed[1], filepath.Join(repo, "bin", "tollgate")+" admin") {
		t.Fatalf("banner:\n%s", out)
	}
	elsewhere := t.TempDir()
	if got, errOut, code := runIn(t, elsewhere, nil, strings.Fields(printed[1])...); code != 0 || !strings.Contains(got, "key: "+raw[1]) {
		t.Fatalf("%s, run from %s: exit %d, stdout %q, stderr %q", printed[1], elsewhere, code, got, errOut)
	}

	// A binary whose folder has no data beside it: the error names both
	// ways to say where the data is, and each works.
	keyID := regexp.MustCompile(`key_[0-9a-f]+`).FindString(printed[1])
	reveal := []string{filepath.Join(built, "tollgate"), "admin", "--url", g.URL, "key", "reveal", keyID}
	_, errOut, code := runIn(t, elsewhere, nil, reveal...)
	if code != 1 || !strings.Contains(errOut, "--data-dir") || !strings.Contains(errOut, "TOLLGATE_DATA_DIR") {
		t.Fatalf("no data dir: exit %d, stderr %q", code, errOut)
	}
	data := filepath.Join(repo, "data")
	for _, tc := range []struct {
		desc string
		env  []string
		args []string
	}{
		{"TOLLGATE_DATA_DIR", []string{"TOLLGATE_DATA_DIR=" + data}, reveal},
		{"--data-dir", nil, append(slices.Clone(reveal), "--data-dir", data)},
	} {
		if got, errOut, code := runIn(t, elsewhere, tc.env, tc.args...); code != 0 || !strings.Contains(got, "key: "+raw[1]) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.desc, code, got, errOut)
		}
	}
}
