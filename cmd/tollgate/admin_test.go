package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-gw/tollgate/pipeline"
)

const (
	adminAccountFixture = `{"id":"acct_1","object":"account","name":"Acme","status":"active","created_at":"2025-01-02T03:04:05Z","rpm":120,"balance":"121.32","held":"1.5","available":"119.82"}`
	adminWalletFixture  = `{"object":"wallet","account_id":"acct_1","balance":"146.32","held":"0","available":"146.32"}`
	adminKeyFixture     = `{"id":"key_1","object":"api_key","key":"sk-tollgate-abc","account_id":"acct_1","name":"ci","prefix":"sk-tollgate-ab","allowed_models":["gpt-4o-mini"],"expires_at":"2030-01-02T03:04:05Z","enabled":true,"logs_account_scope":false,"kind":"service","revealable":true,"created_at":"2025-01-02T03:04:05Z"}`
	adminKeyNoRaw       = `{"id":"key_1","object":"api_key","account_id":"acct_1","name":"ci","prefix":"sk-tollgate-ab","allowed_models":null,"expires_at":null,"enabled":false,"logs_account_scope":false,"kind":"","revealable":true,"created_at":"2025-01-02T03:04:05Z"}`
)

// fakeAdmin answers the admin routes with fixtures and records each request.
type fakeAdmin struct {
	mu   sync.Mutex
	reqs []adminRecorded
}

type adminRecorded struct {
	method, path, auth, contentType string
	body                            []byte
}

var adminRoutes = map[string]struct {
	status int
	body   string
}{
	"POST /admin/v1/accounts":                {201, adminAccountFixture},
	"GET /admin/v1/accounts":                 {200, `{"object":"list","data":[` + adminAccountFixture + `,{"id":"acct_22","name":"Beta Corp","status":"disabled","created_at":"2025-02-01T00:00:00Z","balance":"0","held":"0","available":"0"}]}`},
	"GET /admin/v1/accounts/acct_1":          {200, adminAccountFixture},
	"PATCH /admin/v1/accounts/acct_1":        {200, adminAccountFixture},
	"POST /admin/v1/accounts/acct_1/credits": {200, adminWalletFixture},
	"POST /admin/v1/accounts/acct_1/keys":    {201, adminKeyFixture},
	"GET /admin/v1/accounts/acct_1/keys":     {200, `{"object":"list","data":[` + adminKeyNoRaw + `]}`},
	"GET /admin/v1/keys/key_1/reveal":        {200, `{"id":"key_1","key":"sk-tollgate-abc"}`},
	"PATCH /admin/v1/keys/key_1":             {200, adminKeyNoRaw},
	"DELETE /admin/v1/keys/key_1":            {200, `{"id":"key_1","object":"api_key","deleted":true}`},
	"GET /admin/v1/accounts/missing":         {404, `{"error":{"message":"not found","type":"invalid_request_error","code":"not_found"}}`},
	"GET /admin/v1/keys/broken/reveal":       {502, "bad gateway from proxy"},
	"GET /admin/v1/keys/plain/reveal":        {400, `{"error":{"message":"key was created before sealing","type":"invalid_request_error"}}`},
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "GET" && r.URL.Path == "/api/v1/models/public" {
		// The public registry the CLI checks --allowed-models against.
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini","aliases":[]},{"id":"claude-sonnet-4-5","aliases":["claude-latest"]},{"id":"a","aliases":["b"]}]}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, adminRecorded{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"admin authentication failed","type":"authentication_error","code":"invalid_api_key"}}`)
		return
	}
	route, ok := adminRoutes[r.Method+" "+r.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"message":"no admin route","type":"invalid_request_error","code":"not_found"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(route.status)
	_, _ = io.WriteString(w, route.body)
}

func (f *fakeAdmin) requests() []adminRecorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]adminRecorded(nil), f.reqs...)
}

// adminAppMu serialises app runs: urfave/cli shares its global help flag between
// apps and writes to it while parsing.
var adminAppMu sync.Mutex

// runAdmin runs `tollgate admin <global...> <args...>` in process, through
// the same run as main.
func runAdmin(global []string, args ...string) (stdout, stderr string, code int) {
	return runCLI(append(append([]string{"admin"}, global...), args...)...)
}

func runCLI(args ...string) (stdout, stderr string, code int) {
	adminAppMu.Lock()
	defer adminAppMu.Unlock()
	var out, errb bytes.Buffer
	code = run(append([]string{"tollgate"}, args...), &out, &errb, pipeline.NewRegistry())
	return out.String(), errb.String(), code
}

func newFakeAdmin(t *testing.T) (*fakeAdmin, []string) {
	f := &fakeAdmin{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, []string{"--url", srv.URL + "/", "--token", "tok"}
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		args   []string
		method string
		path   string
		body   string   // JSON the request must carry; "" for none
		out    []string // lines stdout must contain
	}{
		{
			desc: "account create with initial credit", args: []string{"account", "create", "--name", "Acme", "--initial-credit", "10.50"},
			method: "POST", path: "/admin/v1/accounts", body: `{"name":"Acme","initial_credit":"10.5"}`,
			out: []string{"id:          acct_1", "name:        Acme", "balance:     121.32", "held:        1.5", "available:   119.82", "rpm:         120", "concurrency: default", "created_at:  2025-01-02T03:04:05Z"},
		},
		{
			desc: "account create without initial credit", args: []string{"account", "create", "--name", "Acme"},
			method: "POST", path: "/admin/v1/accounts", body: `{"name":"Acme"}`, out: []string{"status:      active"},
		},
		{
			desc: "account create with zero credit", args: []string{"account", "create", "--name", "Acme", "--initial-credit", "0"},
			method: "POST", path: "/admin/v1/accounts", body: `{"name":"Acme","initial_credit":"0"}`,
		},
		{
			desc: "account list", args: []string{"account", "list"}, method: "GET", path: "/admin/v1/accounts",
			out: []string{
				"ID       NAME       STATUS    BALANCE  AVAILABLE  CREATED",
				"acct_1   Acme       active    121.32   119.82     2025-01-02T03:04:05Z",
				"acct_22  Beta Corp  disabled  0        0          2025-02-01T00:00:00Z",
			},
		},
		{
			desc: "account get", args: []string{"account", "get", "acct_1"}, method: "GET", path: "/admin/v1/accounts/acct_1",
			out: []string{"id:          acct_1"},
		},
		{
			desc: "account disable", args: []string{"account", "disable", "acct_1"}, method: "PATCH", path: "/admin/v1/accounts/acct_1",
			body: `{"status":"disabled"}`,
		},
		{
			desc: "account enable", args: []string{"account", "enable", "acct_1"}, method: "PATCH", path: "/admin/v1/accounts/acct_1",
			body: `{"status":"active"}`,
		},
		{
			desc: "account update, flags after the id", args: []string{"account", "update", "acct_1", "--rpm", "100", "--name", "New"},
			method: "PATCH", path: "/admin/v1/accounts/acct_1", body: `{"name":"New","rpm":100}`,
		},
		{
			desc: "account update concurrency back to the default", args: []string{"account", "update", "--concurrency", "0", "acct_1"},
			method: "PATCH", path: "/admin/v1/accounts/acct_1", body: `{"concurrency":0}`,
		},
		{
			desc: "account credit negative, flags after the id", args: []string{"account", "credit", "acct_1", "--amount", "-2.50", "--note", "refund"},
			method: "POST", path: "/admin/v1/accounts/acct_1/credits", body: `{"amount":"-2.5","note":"refund"}`,
			out: []string{"account_id: acct_1", "balance:    146.32", "available:  146.32"},
		},
		{
			desc: "account credit, flags before the id", args: []string{"account", "credit", "--amount", "25", "acct_1"},
			method: "POST", path: "/admin/v1/accounts/acct_1/credits", body: `{"amount":"25","note":""}`,
		},
		{
			desc: "account credit, flags on both sides", args: []string{"account", "credit", "--note", "promo", "acct_1", "--amount=0.000000001"},
			method: "POST", path: "/admin/v1/accounts/acct_1/credits", body: `{"amount":"0.000000001","note":"promo"}`,
		},
		{
			desc: "key create with defaults", args: []string{"key", "create", "acct_1", "--name", "ci"},
			method: "POST", path: "/admin/v1/accounts/acct_1/keys",
			body: `{"name":"ci","allowed_models":null,"expires_at":null,"enabled":true,"logs_account_scope":false}`,
			out: []string{"id:                 key_1", "key:                sk-tollgate-abc", "allowed_models:     gpt-4o-mini",
				"The raw key is shown once here; store it now (an admin can print it again with: tollgate admin key reveal key_1)."},
		},
		{
			desc: "key create with every flag",
			args: []string{"key", "create", "acct_1", "--name", "ci", "--allowed-models", "gpt-4o-mini, claude-sonnet-4-5", "--expires-at", "2030-01-02T03:04:05+02:00",
				"--disabled", "--logs-account-scope", "--kind", "service"},
			method: "POST", path: "/admin/v1/accounts/acct_1/keys",
			body: `{"name":"ci","allowed_models":["gpt-4o-mini","claude-sonnet-4-5"],"expires_at":"2030-01-02T03:04:05+02:00","enabled":false,"logs_account_scope":true,"kind":"service"}`,
		},
		{
			desc: "key create allowing no model", args: []string{"key", "create", "acct_1", "--name", "ci", "--allow-none"},
			method: "POST", path: "/admin/v1/accounts/acct_1/keys",
			body: `{"name":"ci","allowed_models":[],"expires_at":null,"enabled":true,"logs_account_scope":false}`,
		},
		{
			desc: "key list", args: []string{"key", "list", "acct_1"}, method: "GET", path: "/admin/v1/accounts/acct_1/keys",
			out: []string{
				"ID     NAME  PREFIX          ENABLED  MODELS  EXPIRES  KIND",
				"key_1  ci    sk-tollgate-ab  false    all     never",
			},
		},
		{
			desc: "key reveal", args: []string{"key", "reveal", "key_1"}, method: "GET", path: "/admin/v1/keys/key_1/reveal",
			out: []string{"id:  key_1", "key: sk-tollgate-abc"},
		},
		{
			desc: "key update disable, all models, no expiry", args: []string{"key", "update", "key_1", "--disable", "--allow-all", "--expires-at", "never"},
			method: "PATCH", path: "/admin/v1/keys/key_1", body: `{"enabled":false,"allowed_models":null,"expires_at":null}`,
			out: []string{"enabled:            false", "allowed_models:     all", "expires_at:         never"},
		},
		{
			desc: "key update enable, rename, scope off", args: []string{"key", "update", "key_1", "--enable", "--name", "x", "--logs-account-scope=false"},
			method: "PATCH", path: "/admin/v1/keys/key_1", body: `{"enabled":true,"name":"x","logs_account_scope":false}`,
		},
		{
			desc: "key update models and kind", args: []string{"key", "update", "key_1", "--allowed-models", "a,b", "--kind", "personal"},
			method: "PATCH", path: "/admin/v1/keys/key_1", body: `{"allowed_models":["a","b"],"kind":"personal"}`,
		},
		{
			desc: "key delete", args: []string{"key", "delete", "key_1"}, method: "DELETE", path: "/admin/v1/keys/key_1",
			out: []string{"deleted key key_1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			fake, global := newFakeAdmin(t)
			stdout, stderr, code := runAdmin(global, tc.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr = %q", code, stderr)
			}
			reqs := fake.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != tc.method || r.path != tc.path || r.auth != "Bearer tok" {
				t.Errorf("request %s %s auth %q, want %s %s", r.method, r.path, r.auth, tc.method, tc.path)
			}
			assertAdminJSON(t, r, tc.body)
			for _, line := range tc.out {
				if !adminHasLine(stdout, line) {
					t.Errorf("stdout lacks line %q:\n%s", line, stdout)
				}
			}
		})
	}
}

func assertAdminJSON(t *testing.T, r adminRecorded, want string) {
	t.Helper()
	if want == "" {
		if len(r.body) != 0 {
			t.Errorf("body %s, want none", r.body)
		}
		return
	}
	if r.contentType != "application/json" {
		t.Errorf("content-type %q", r.contentType)
	}
	var got, exp any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("body %s\nwant %s", r.body, want)
	}
}

func adminHasLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimRight(l, " ") == line {
			return true
		}
	}
	return false
}

func TestAdminJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		args []string
		want string
	}{
		{desc: "account get", args: []string{"account", "get", "acct_1"}, want: adminAccountFixture + "\n"},
		{desc: "key create shows the raw key", args: []string{"key", "create", "acct_1", "--name", "ci"}, want: adminKeyFixture + "\n"},
		{desc: "key delete", args: []string{"key", "delete", "key_1"}, want: `{"id":"key_1","object":"api_key","deleted":true}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			for _, where := range []string{"after admin", "after the command", "at the end"} {
				_, global := newFakeAdmin(t)
				args := append(append([]string{}, global...), tc.args...)
				switch where {
				case "after admin":
					args = append(append([]string{"--json"}, global...), tc.args...)
				case "after the command":
					args = append(append(append([]string{}, global...), tc.args[:2]...), append([]string{"--json"}, tc.args[2:]...)...)
				case "at the end":
					args = append(args, "--json")
				}
				stdout, stderr, code := runCLI(append([]string{"admin"}, args...)...)
				if code != 0 || stdout != tc.want {
					t.Errorf("%s: exit %d stderr %q\nstdout %q\nwant   %q", where, code, stderr, stdout, tc.want)
				}
			}
		})
	}
}

// Key flags that make a key useless are warned of; the key is still made.
func TestAdminKeyWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		args []string
		want string
	}{
		{desc: "known models and an alias", args: []string{"key", "create", "acct_1", "--name", "n", "--allowed-models", "gpt-4o-mini,claude-latest"}},
		{
			desc: "unknown model", args: []string{"key", "create", "acct_1", "--name", "n", "--allowed-models", "gpt-4o-mni,claude-sonnet-4-5"},
			want: `warning: --allowed-models: "gpt-4o-mni" is not a model of this gateway (did you mean "gpt-4o-mini"?); the key may list it, but calls to it get model_not_found` + "\n",
		},
		{
			desc: "expiry in the past", args: []string{"key", "create", "acct_1", "--name", "n", "--expires-at", "2001-02-03T04:05:06Z"},
			want: "warning: --expires-at 2001-02-03T04:05:06Z is in the past: the key is expired from the start (its calls get 401 api key expired)\n",
		},
		{
			desc: "update too", args: []string{"key", "update", "key_1", "--allowed-models", "mistral"},
			want: `warning: --allowed-models: "mistral" is not a model of this gateway; the key may list it, but calls to it get model_not_found` + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			fake, global := newFakeAdmin(t)
			_, stderr, code := runAdmin(global, tc.args...)
			if code != 0 || stderr != tc.want || len(fake.requests()) != 1 {
				t.Errorf("exit %d, %d requests, stderr %q\nwant %q", code, len(fake.requests()), stderr, tc.want)
			}
		})
	}
}

func TestAdminHelpAfterID(t *testing.T) {
	t.Parallel()
	fake, global := newFakeAdmin(t)
	stdout, stderr, code := runAdmin(global, "key", "update", "key_1", "--help")
	if code != 0 || stderr != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	if !strings.Contains(stdout, "tollgate admin key update [command options] KEY_ID") || !strings.Contains(stdout, "--allow-none") {
		t.Errorf("help:\n%s", stdout)
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("%d requests", n)
	}
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		global   []string // replaces --token tok when set
		args     []string
		requests int
		err      string // stderr is "error: " and this; the exit status 1
	}{
		{desc: "not found", args: []string{"account", "get", "missing"}, requests: 1, err: "GET /admin/v1/accounts/missing: 404: not found (not_found)"},
		{desc: "wrong token", global: []string{"--token", "nope"}, args: []string{"account", "list"}, requests: 1, err: "GET /admin/v1/accounts: 401: admin authentication failed (invalid_api_key)"},
		{desc: "error without code", args: []string{"key", "reveal", "plain"}, requests: 1, err: "GET /admin/v1/keys/plain/reveal: 400: key was created before sealing"},
		{desc: "non-JSON error body", args: []string{"key", "reveal", "broken"}, requests: 1, err: "GET /admin/v1/keys/broken/reveal: 502: bad gateway from proxy"},
		{desc: "missing id", args: []string{"account", "get"}, err: "admin account get: missing ACCOUNT_ID"},
		{desc: "id with a slash", args: []string{"key", "delete", "a/b"}, err: `admin key delete: "a/b" is not a valid KEY_ID`},
		{desc: "extra argument", args: []string{"key", "delete", "key_1", "key_2"}, err: `admin key delete: unexpected argument "key_2" (it takes one KEY_ID)`},
		{desc: "unknown flag after the id", args: []string{"key", "list", "acct_1", "--all"}, err: "tollgate admin key list: unknown flag --all; see tollgate admin key list --help"},
		{desc: "unknown flag before the id", args: []string{"key", "create", "--nam", "x", "acct_1"}, err: `tollgate admin key create: unknown flag --nam (did you mean --name?); see tollgate admin key create --help`},
		{desc: "unknown command", args: []string{"acount", "list"}, err: `tollgate admin: unknown command "acount" (did you mean "account"?); the commands are account, key, agent, key-request, user, topups; see tollgate admin --help`},
		{desc: "credit without amount", args: []string{"account", "credit", "acct_1"}, err: "account credit: --amount is required"},
		{desc: "credit with a bad amount", args: []string{"account", "credit", "acct_1", "--amount", "1,5"}, err: `--amount: invalid amount "1,5"`},
		{desc: "initial credit with a bad amount", args: []string{"account", "create", "--name", "a", "--initial-credit", "ten"}, err: `--initial-credit: invalid amount "ten"`},
		{desc: "account create without name", args: []string{"account", "create"}, err: "account create: --name is required"},
		{desc: "account list with an argument", args: []string{"account", "list", "x"}, err: `account list takes no arguments, got ["x"]`},
		{desc: "account update with nothing", args: []string{"account", "update", "acct_1"}, err: "account update: give at least one of --name, --rpm, --concurrency, --allowed-models, --allow-none, --allow-all"},
		{desc: "key create without name", args: []string{"key", "create", "acct_1"}, err: "key create: --name is required"},
		{desc: "bad expiry", args: []string{"key", "create", "acct_1", "--name", "n", "--expires-at", "tomorrow"}, err: `--expires-at: "tomorrow" is not an RFC 3339 time such as 2030-01-02T15:04:05Z (or "never")`},
		{desc: "allowed models conflict", args: []string{"key", "update", "key_1", "--allow-none", "--allowed-models", "a"}, err: "--allowed-models, --allow-none and --allow-all exclude each other"},
		{desc: "empty allowed models", args: []string{"key", "update", "key_1", "--allowed-models", " , "}, err: "--allowed-models: give model ids separated by commas (or --allow-none)"},
		{desc: "enable and disable", args: []string{"key", "update", "key_1", "--enable", "--disable"}, err: "key update: --enable and --disable exclude each other"},
		{desc: "key update with nothing", args: []string{"key", "update", "key_1"}, err: "key update: nothing to change; give at least one flag"},
		{desc: "bad url", global: []string{"--url", "127.0.0.1:8080", "--token", "tok"}, args: []string{"account", "list"}, err: `--url "127.0.0.1:8080": want http:// or https://`},
		{desc: "no gateway", global: []string{"--url", "http://127.0.0.1:1", "--token", "tok"}, args: []string{"account", "list"},
			err: "no gateway answers at http://127.0.0.1:1 (connect: connection refused); is tollgate serve running? Point --url (or $TOLLGATE_URL) at its listen address"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			fake, global := newFakeAdmin(t)
			if tc.global != nil {
				global = append(global[:2:2], tc.global...)
			}
			stdout, stderr, code := runAdmin(global, tc.args...)
			if n := len(fake.requests()); n != tc.requests {
				t.Errorf("%d requests reached the server, want %d", n, tc.requests)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if want := "error: " + tc.err + "\n"; code != 1 || stderr != want {
				t.Errorf("exit %d, stderr %q\nwant exit 1, %q", code, stderr, want)
			}
		})
	}
}

// The token falls back to <data-dir>/admin.token; these tests set the
// environment, so they do not run in parallel.
func TestAdminTokenSources(t *testing.T) {
	t.Setenv("TOLLGATE_ADMIN_TOKEN", "")
	t.Setenv("TOLLGATE_URL", "")
	t.Setenv("TOLLGATE_DATA_DIR", "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "admin.token"), []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := &fakeAdmin{}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	tests := []struct {
		desc string
		env  map[string]string
		args []string
		err  string
	}{
		{desc: "token file in the data dir", args: []string{"--url", srv.URL, "--data-dir", dir}},
		{desc: "token and url from the environment", env: map[string]string{"TOLLGATE_ADMIN_TOKEN": "tok", "TOLLGATE_URL": srv.URL}, args: []string{"--data-dir", empty}},
		{desc: "flag beats the file", args: []string{"--url", srv.URL, "--data-dir", empty, "--token", "tok"}},
		{desc: "empty token file", args: []string{"--url", srv.URL, "--data-dir", empty}, err: "no admin token: " + filepath.Join(empty, "admin.token") + " is empty"},
		{
			desc: "no token anywhere", args: []string{"--url", srv.URL, "--data-dir", filepath.Join(dir, "nope")},
			err: "no admin token: " + filepath.Join(dir, "nope", "admin.token") + " does not exist (tollgate serve writes admin.token into its data directory); " +
				"point --data-dir or TOLLGATE_DATA_DIR at the gateway's data directory, or pass --token (or TOLLGATE_ADMIN_TOKEN)",
		},
		{desc: "data dir from the environment", env: map[string]string{"TOLLGATE_DATA_DIR": dir}, args: []string{"--url", srv.URL}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			before := len(fake.requests())
			_, stderr, code := runAdmin(tc.args, "account", "get", "acct_1")
			if tc.err != "" {
				if want := "error: " + tc.err + "\n"; code != 1 || stderr != want {
					t.Errorf("exit %d, stderr %q\nwant %q", code, stderr, want)
				}
				return
			}
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			reqs := fake.requests()
			if len(reqs) != before+1 || reqs[len(reqs)-1].auth != "Bearer tok" {
				t.Errorf("requests %+v", reqs[before:])
			}
		})
	}
}
