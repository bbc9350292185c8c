package console

import (
	"context"
	"net/http"
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
	"github.com/tollgate-gw/tollgate/internal/testgw"
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

func (f *fixture) browser() *testgw.ConsoleClient { return testgw.NewConsoleClient(f.srv.URL) }

func signUp(t *testing.T, b *testgw.ConsoleClient, email string) {
	t.Helper()
	if err := b.SignUp(email, "a long password", ""); err != nil {
		t.Fatalf("sign up %s: %v", email, err)
	}
}

// get and post are the client's calls, failing the test on a transport error.
func get(t *testing.T, b *testgw.ConsoleClient, path string) (int, string) {
	t.Helper()
	st, body, err := b.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	return st, body
}

func post(t *testing.T, b *testgw.ConsoleClient, path string, form url.Values) (int, string, http.Header) {
	t.Helper()
	st, body, h, err := b.Post(path, form)
	if err != nil {
		t.Fatal(err)
	}
	return st, body, h
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
	if st, _ := get(t, b, "/console/"); st != http.StatusSeeOther {
		t.Fatalf("the overview without a session: %d", st)
	}
	signUp(t, b, "ada@example.com")
	st, body := get(t, b, "/console/")
	if st != 200 {
		t.Fatalf("overview: %d", st)
	}
	want(t, "overview", body, "121.32", "Last 30 days", "No calls yet")

	st, body, _ = post(t, b, "/console/keys", url.Values{"name": {"laptop"}, "models": {"only"}, "model": {"sim-chat", "gpt-4o-mini"}, "expiry": {"30d"}})
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
		st, body := get(t, b, c.path)
		if st != 200 {
			t.Fatalf("%s: %d\n%s", c.path, st, body)
		}
		want(t, c.path, body, c.parts...)
	}
	st, body = get(t, b, "/console/logs/"+strconv.FormatUint(row.ID, 10))
	if st != 200 {
		t.Fatalf("technical view: %d %s", st, body)
	}
	want(t, "technical view", body, "req_abc", "Technical view", "0.000123456")

	// The account page: a zone, a password, and signing out everywhere.
	other := f.browser()
	if err := other.SignIn("ada@example.com", "a long password"); err != nil {
		t.Fatal(err)
	}
	get(t, b, "/console/account")
	if st, body, _ := post(t, b, "/console/account/timezone", url.Values{"zone": {"Mars/Olympus"}}); st != http.StatusBadRequest {
		t.Fatalf("an unknown zone: %d %s", st, body)
	}
	get(t, b, "/console/account")
	st, body, _ = post(t, b, "/console/account/timezone", url.Values{"zone": {"Europe/Paris"}})
	want(t, "zone set", body, "Times are now shown in Europe/Paris")
	if st != 200 || !strings.Contains(body, "CET") && !strings.Contains(body, "CEST") {
		t.Fatalf("times after the zone change: %d", st)
	}
	st, body, _ = post(t, b, "/console/account/password", url.Values{"current": {"a long password"}, "new": {"a newer password"}, "new2": {"a newer password"}})
	if st != 200 || !strings.Contains(body, "Password changed") {
		t.Fatalf("password change: %d %s", st, body)
	}
	if st, _ := get(t, other, "/console/keys"); st != http.StatusSeeOther {
		t.Fatalf("another session after a password change: %d", st)
	}
	st, _, h := post(t, b, "/console/account/signout-everywhere", nil)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/signin") {
		t.Fatalf("sign out everywhere: %d %s", st, h.Get("Location"))
	}
	if st, _ := get(t, b, "/console/keys"); st != http.StatusSeeOther {
		t.Fatalf("this session after signing out everywhere: %d", st)
	}
	if err := f.browser().SignIn("ada@example.com", "a newer password"); err != nil {
		t.Fatalf("sign in with the new password: %v", err)
	}
}

func TestCSRF(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	b := f.browser()
	signUp(t, b, "ada@example.com")
	get(t, b, "/console/keys")
	for _, tok := range []string{"", "forged"} {
		st, body, _ := post(t, b, "/console/keys", url.Values{"name": {"x"}, "_csrf": {tok}})
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
	st, _, _ := post(t, other, "/console/signin", url.Values{"email": {"ada@example.com"}, "password": {"a long password"}, "_csrf": {b.CSRF}})
	if st != http.StatusForbidden {
		t.Fatalf("sign-in with another browser's token: %d", st)
	}
}

var invitationRe = regexp.MustCompile(`invitation=([A-Za-z0-9_-]+)`)

// invite makes an invitation on the members page and returns its token.
func invite(t *testing.T, owner *testgw.ConsoleClient, role string) string {
	t.Helper()
	get(t, owner, "/console/members")
	st, body, _ := post(t, owner, "/console/members", url.Values{"role": {role}})
	m := invitationRe.FindStringSubmatch(body)
	if st != http.StatusCreated || m == nil {
		t.Fatalf("invite %s: %d\n%s", role, st, body)
	}
	return m[1]
}

func joined(t *testing.T, f *fixture, email, token string) *testgw.ConsoleClient {
	t.Helper()
	b := f.browser()
	if err := b.SignUp(email, "a long password", token); err != nil {
		t.Fatalf("%s joins: %v", email, err)
	}
	get(t, b, "/console/")
	return b
}

// TestRolesAndAgents: an owner invites an admin and a member; the member
// manages only their own keys and may not see members or billing; the
// admin runs agents (issuing a capped key, approving the member's request,
// the key then the member's own).
func TestRolesAndAgents(t *testing.T) {
	f := newFixture(t, config.SignupOpen)
	ctx := t.Context()
	owner := f.browser()
	signUp(t, owner, "owner@example.com")
	get(t, owner, "/console/")
	admin := joined(t, f, "admin@example.com", invite(t, owner, store.RoleAdmin))
	member := joined(t, f, "member@example.com", invite(t, owner, store.RoleMember))

	get(t, member, "/console/keys")
	st, body, _ := post(t, member, "/console/keys", url.Values{"name": {"member key"}})
	if st != http.StatusCreated {
		t.Fatalf("member creates a key: %d %s", st, body)
	}
	mu, _ := f.st.UserByEmail(ctx, "member@example.com")
	ks, _ := f.st.ListKeys(ctx, mu.AccountID)
	if len(ks) != 1 || ks[0].UserID != mu.ID {
		t.Fatalf("the member's key: %+v", ks)
	}
	for _, path := range []string{"/console/members", "/console/billing"} {
		if st, _ := get(t, member, path); st != http.StatusForbidden {
			t.Fatalf("a member opens %s: %d", path, st)
		}
	}
	get(t, member, "/console/keys")
	if st, _, _ := post(t, member, "/console/keys/"+ks[0].ID+"/logs-scope", url.Values{"on": {"true"}}); st != http.StatusForbidden {
		t.Fatalf("a member turns on account-wide logs: %d", st)
	}
	if st, _, _ := post(t, member, "/console/keys/"+ks[0].ID+"/disable", nil); st != http.StatusSeeOther {
		t.Fatalf("a member disables their key: %d", st)
	}
	if st, _ := get(t, member, "/console/agents"); st != 200 {
		t.Fatalf("a member opens the agents: %d", st)
	}
	if st, _, _ := post(t, member, "/console/agents", url.Values{"name": {"x"}, "model": {"sim-chat"}}); st != http.StatusForbidden {
		t.Fatalf("a member creates an agent: %d", st)
	}

	// The admin makes an agent and issues a capped key.
	get(t, admin, "/console/agents")
	st, _, h := post(t, admin, "/console/agents", url.Values{"name": {"Help desk"}, "model": {"sim-chat"},
		"system_prompt": {"You help."}, "temperature": {"0.2"}, "kb": {}, "published": {"on"}})
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/console/agents/agt_") {
		t.Fatalf("create agent: %d %s", st, h.Get("Location"))
	}
	agentPath := strings.TrimSuffix(h.Get("Location"), "?created=1")
	get(t, admin, agentPath)
	st, body, _ = post(t, admin, agentPath+"/keys", url.Values{"name": {"bot"}, "spend_cap": {"5.5"}})
	if st != 200 || !regexp.MustCompile(`sk-tollgate-[0-9a-f]{64}`).MatchString(body) {
		t.Fatalf("issue a key: %d %s", st, body)
	}
	agentID := strings.TrimPrefix(agentPath, "/console/agents/")
	var botKey store.Key
	ks, _ = f.st.ListKeys(ctx, mu.AccountID)
	for _, k := range ks {
		if k.Name == "bot" {
			botKey = k
		}
	}
	if botKey.AgentID != agentID || botKey.SpendCap == nil || *botKey.SpendCap != money.MustParse("5.5") || botKey.Kind != store.KindAgent {
		t.Fatalf("the agent key: %+v", botKey)
	}
	if st, _, _ := post(t, admin, agentPath+"/keys", url.Values{"name": {"bad"}, "spend_cap": {"-1"}}); st != http.StatusBadRequest {
		t.Fatalf("a negative spend cap: %d", st)
	}

	// The member asks for a key; the admin approves it with a cap.
	get(t, member, "/console/agents")
	if st, _, _ := post(t, member, "/console/agents/"+agentID+"/request", url.Values{"note": {"for my scripts"}}); st != http.StatusSeeOther {
		t.Fatalf("request a key: %d", st)
	}
	rs, _ := f.st.ListKeyRequests(ctx, mu.AccountID)
	if len(rs) != 1 || rs[0].Requester != "member@example.com" || rs[0].Status != store.KeyRequestPending {
		t.Fatalf("requests: %+v", rs)
	}
	_, body = get(t, admin, "/console/agents")
	if !strings.Contains(body, "for my scripts") {
		t.Fatalf("the admin does not see the request:\n%s", body)
	}
	st, body, _ = post(t, admin, "/console/key-requests/"+rs[0].ID+"/approve", url.Values{"spend_cap": {"2"}})
	if st != 200 || !strings.Contains(body, "member@example.com, who sees it on their keys page") {
		t.Fatalf("approve: %d %s", st, body)
	}
	if st, _, _ := post(t, admin, "/console/key-requests/"+rs[0].ID+"/approve", nil); st != http.StatusConflict {
		t.Fatalf("approve twice: %d", st)
	}
	_, body = get(t, member, "/console/keys")
	if !strings.Contains(body, "agent") || strings.Count(body, `<tr id="key-`) != 2 || strings.Contains(body, ">bot<") {
		t.Fatalf("the member's keys after the approval:\n%s", body)
	}
	// The member's log site offers their own keys only.
	_, body = get(t, member, "/console/logs")
	if strings.Contains(body, "Every key") || strings.Contains(body, ">bot (") {
		t.Fatalf("the member's key choice:\n%s", body)
	}
	// The owner sees all three keys.
	_, body = get(t, owner, "/console/keys")
	if n := strings.Count(body, `<tr id="key-`); n != 3 {
		t.Fatalf("the owner sees %d keys", n)
	}
}

func TestCookies(t *testing.T) {
	for _, secure := range []bool{false, true} {
		f := newFixture(t, config.SignupOpen)
		f.c.o.Secure = secure
		b := f.browser()
		get(t, b, "/console/signup")
		_, _, h := post(t, b, "/console/signup", url.Values{"email": {"a@example.com"}, "password": {"a long password"}, "password2": {"a long password"}})
		var session string
		for _, c := range h.Values("Set-Cookie") {
			if strings.HasPrefix(c, "tollgate_session=") {
				session = c
			}
		}
		for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/console/"} {
			if !strings.Contains(session, want) {
				t.Fatalf("the session cookie %q lacks %s", session, want)
			}
		}
		if strings.Contains(session, "Secure") != secure {
			t.Fatalf("the session cookie %q: Secure should be %v", session, secure)
		}
	}
}

// The log site's periods and dates are the person's: a day in Tokyo is
// 15:00 to 15:00 UTC; 7d and 30d are the API's own.
func TestFilterWindow(t *testing.T) {
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	now := time.Date(2025, 6, 10, 1, 30, 0, 0, time.UTC) // 10:30 in Tokyo
	for _, c := range []struct {
		f    filters
		want url.Values
	}{
		{filters{Period: "custom", From: "2025-06-02", To: "2025-06-03"},
			url.Values{"from": {"2025-06-01T15:00:00Z"}, "to": {"2025-06-03T15:00:00Z"}}},
		{filters{Period: "today"}, url.Values{"from": {"2025-06-09T15:00:00Z"}, "to": {"2025-06-10T01:30:00Z"}}},
		{filters{Period: "this_month"}, url.Values{"from": {"2025-05-31T15:00:00Z"}, "to": {"2025-06-10T01:30:00Z"}}},
		{filters{Period: "7d"}, url.Values{"period": {"7d"}}},
		{filters{Period: "all"}, url.Values{"period": {"all"}}},
	} {
		got, err := c.f.window(tokyo, now)
		if err != nil || got.Encode() != c.want.Encode() {
			t.Fatalf("%+v: %v %v, want %v", c.f, got, err, c.want)
		}
	}
	for _, bad := range []filters{{Period: "custom", From: "2025-06-03", To: "2025-06-02"}, {Period: "custom", From: "x"}, {Period: "year"}} {
		if _, err := bad.window(tokyo, now); err == nil || err.Status != 400 {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
}
