package console

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/users"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// fixture is a console over an in-memory store, served by httptest.
type fixture struct {
	t   *testing.T
	st  store.Store
	adm *admin.Service
	usr *users.Service
	c   *Console
	srv *httptest.Server
}

type bases struct{ st store.Store }

func (b bases) ReadableBases(ctx context.Context, account string) ([]store.KnowledgeBase, error) {
	all, err := b.st.ListKnowledgeBases(ctx)
	out := all[:0]
	for _, kb := range all {
		if kb.ReadableBy(account) {
			out = append(out, kb)
		}
	}
	return out, err
}

func newFixture(t *testing.T, signup string) *fixture {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sealer, _ := keys.NewSealer(make([]byte, 32))
	cfg := config.Default(func(string) string { return "" })
	cfg.Accounts.Signup = signup
	adm := admin.NewService(st, sealer, time.Now, config.DefaultSignupCredit)
	usr := users.New(users.Options{Store: st, Admin: adm, Signup: signup, Params: users.Params{Memory: 64, Time: 1, Threads: 1}})
	c, err := New(Options{Config: cfg, Store: st, Admin: adm, Users: usr, Logs: logsapi.New(st, nil, nil, nil),
		Bases: bases{st}, Secret: []byte("secret"), Logger: hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, st: st, adm: adm, usr: usr, c: c, srv: httptest.NewServer(c)}
	t.Cleanup(f.srv.Close)
	return f
}

// browser is a client with cookies that does not follow redirects.
type browser struct {
	f    *fixture
	hc   *http.Client
	csrf string
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{f: f, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

var csrfRe = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (b *browser) get(path string) (int, string) {
	b.f.t.Helper()
	resp, err := b.hc.Get(b.f.srv.URL + path)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfRe.FindSubmatch(body); m != nil {
		b.csrf = html.UnescapeString(string(m[1]))
	}
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (int, string, http.Header) {
	b.f.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if !form.Has("_csrf") {
		form.Set("_csrf", b.csrf)
	}
	resp, err := b.hc.PostForm(b.f.srv.URL+path, form)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func (b *browser) signUp(email string) {
	b.f.t.Helper()
	b.get("/console/signup")
	st, body, h := b.post("/console/signup", url.Values{"email": {email}, "password": {"a long password"}, "password2": {"a long password"}})
	if st != http.StatusSeeOther {
		b.f.t.Fatalf("sign up: %d %s", st, body)
	}
	if h.Get("Location") != "/console/?welcome=1" {
		b.f.t.Fatalf("sign up sent to %q", h.Get("Location"))
	}
	b.get("/console/")
}

func want(t *testing.T, what, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Fatalf("%s lacks %q:\n%s", what, p, body)
		}
	}
}

func TestEveryPageRenders(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	b := f.browser()
	if st, _ := b.get("/console/"); st != http.StatusSeeOther {
		t.Fatalf("the overview without a session: %d", st)
	}
	b.signUp("ada@example.com")
	st, body := b.get("/console/")
	if st != 200 {
		t.Fatalf("overview: %d", st)
	}
	want(t, "overview", body, "121.32", "Last 30 days", "No calls yet")

	st, body, _ = b.post("/console/keys", url.Values{"name": {"laptop"}, "models": {"only"}, "model": {"sim-chat", "gpt-4o-mini"}, "expiry": {"30d"}})
	if st != http.StatusCreated {
		t.Fatalf("create key: %d %s", st, body)
	}
	raw := regexp.MustCompile(`sk-tollgate-[0-9a-f]{64}`).FindString(body)
	if raw == "" {
		t.Fatalf("no raw key on the page:\n%s", body)
	}
	k, err := f.st.KeyByHash(t.Context(), keys.Hash(raw))
	if err != nil || k.Name != "laptop" || !k.RestrictModels || len(k.AllowedModels) != 2 || k.ExpiresAt == nil {
		t.Fatalf("key stored as %+v (%v)", k, err)
	}
	// A call's row, as settlement writes it.
	row := &store.LogRow{AccountID: k.AccountID, CreatedAt: time.Now().UTC(), SubmittedAt: time.Now().UTC(), KeyID: k.ID,
		KeyName: k.Name, KeyPrefix: k.Prefix, Model: "sim-chat", Status: store.StatusSuccess, InputTokens: 12,
		OutputTokens: 34, Cost: money.MustParse("0.000123456"), LatencyMS: 40, RequestID: "req_abc"}
	if err := f.st.Settle(t.Context(), store.Settlement{Row: row}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		parts []string
	}{
		{"/console/", []string{"req_abc", "0.000123456"}},
		{"/console/keys", []string{"laptop", "sim-chat, gpt-4o-mini", "Reveal"}},
		{"/console/logs", []string{"req_abc", "0.000123456", "Export CSV", "Summary of the period"}},
		{"/console/logs?period=custom&from=2020-01-01&to=2020-01-02", []string{"No call matches"}},
		{"/console/logs?status=error", []string{"No call matches"}},
		{"/console/agents", []string{"Create an agent"}},
		{"/console/members", []string{"ada@example.com", "Make an invitation link"}},
		{"/console/billing", []string{"121.32", "sign-up credit"}},
		{"/console/account", []string{"Sign out everywhere", "this browser"}},
		{"/console/keys/" + k.ID + "/reveal", []string{"Type your password again"}},
	} {
		st, body := b.get(c.path)
		if st != 200 {
			t.Fatalf("%s: %d\n%s", c.path, st, body)
		}
		want(t, c.path, body, c.parts...)
	}
	st, body = b.get("/console/logs/" + strconv.FormatUint(row.ID, 10))
	if st != 200 {
		t.Fatalf("technical view: %d %s", st, body)
	}
	want(t, "technical view", body, "req_abc", "Technical view", "0.000123456")
}

func TestCSRF(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	b := f.browser()
	b.signUp("ada@example.com")
	b.get("/console/keys")
	for _, tok := range []string{"", "forged"} {
		st, body, _ := b.post("/console/keys", url.Values{"name": {"x"}, "_csrf": {tok}})
		if st != http.StatusForbidden || !strings.Contains(body, "security token") {
			t.Fatalf("a form with token %q: %d %s", tok, st, body)
		}
	}
	ks, _ := f.st.ListKeys(t.Context(), "")
	if len(ks) != 0 {
		t.Fatalf("a key was made without the token: %+v", ks)
	}
	// The sign-in form too: a token bound to its own cookie.
	other := f.browser()
	st, _, _ := other.post("/console/signin", url.Values{"email": {"ada@example.com"}, "password": {"a long password"}, "_csrf": {b.csrf}})
	if st != http.StatusForbidden {
		t.Fatalf("sign-in with another browser's token: %d", st)
	}
}
