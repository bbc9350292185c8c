package browser

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// step runs actions on ctx, failing the test with what step it was.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

func waitText(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	got, err := WaitText(ctx, sel, want, 20*time.Second)
	if err != nil {
		t.Fatalf("waiting for %q in %s: %v", want, sel, err)
	}
	return got
}

const password = "correct horse battery"

// signUp fills the sign-up form and waits for the overview.
func signUp(t *testing.T, ctx context.Context, url, email string) {
	t.Helper()
	step(t, ctx, "sign up "+email,
		chromedp.Navigate(url),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.SendKeys(chromedp.CSS(`input[name=password2]`), password),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#spent-month`)),
	)
}

// signIn fills the sign-in form and waits for its answer: another page,
// or the form again with a problem.
func signIn(t *testing.T, ctx context.Context, base, email, pw string) {
	t.Helper()
	step(t, ctx, "sign in "+email,
		chromedp.Navigate(base+"/console/signin"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), pw),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
	)
	deadline := time.Now().Add(20 * time.Second)
	for !eval[bool](t, ctx, `document.readyState === "complete" && (location.pathname !== "/console/signin" ||
		(document.querySelector("#problem") || {innerText: ""}).innerText !== "")`) {
		if time.Now().After(deadline) {
			t.Fatalf("sign in %s: no answer", email)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createKey makes a key on the keys page and returns its raw value.
func createKey(t *testing.T, ctx context.Context, base, name string) string {
	t.Helper()
	step(t, ctx, "create key "+name,
		chromedp.Navigate(base+"/console/keys"),
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), name),
		chromedp.Click(chromedp.CSS(`section.card form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-key`)),
	)
	raw := strings.TrimSpace(text(t, ctx, `#new-key`))
	if !regexp.MustCompile(`^sk-tollgate-[0-9a-f]{64}$`).MatchString(raw) {
		t.Fatalf("the new key reads %q", raw)
	}
	return raw
}

// chat makes a call with key, as a program would, and returns its trace
// id and exact cost from its usage and sim-chat's prices.
func chat(t *testing.T, base, key string) (string, money.Nano) {
	t.Helper()
	body := `{"model": "sim-chat", "messages": [{"role": "user", "content": "Hello from the console test"}], "max_tokens": 50}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	var out struct {
		Usage struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			CompletionTokens    int64 `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	u := out.Usage
	// sim-chat: 0.10 in, 0.40 out, 0.025 cached, per million tokens.
	cost := money.Nano((u.PromptTokens-u.PromptTokensDetails.CachedTokens)*100 + u.CompletionTokens*400 + u.PromptTokensDetails.CachedTokens*25)
	if cost <= 0 {
		t.Fatalf("usage %+v gives no cost", u)
	}
	return resp.Header.Get("x-gateway-trace"), cost
}

// apiLogs reads /v1/logs with key.
func apiLogs(t *testing.T, base, key, query string) (int, []map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/logs?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []map[string]any `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Data
}

// TestConsoleFlow is a person's whole way through the console: sign up,
// see the trial credit, create a key and copy it, call the API with it,
// find the call on the log site with its exact cost, open its technical
// view, filter, export CSV, reveal the key after the password prompt,
// turn on its account-wide logs, sign out.
func TestConsoleFlow(t *testing.T) {
	ctx := Start(t)
	shots := NewScreenshots(t)
	g := testgw.Start(t, testgw.Options{})
	base := g.URL
	if err := GrantClipboard(ctx, base); err != nil {
		t.Logf("clipboard permission: %v", err)
	}
	// The person is in Tokyo: times show there, UTC on hover.
	if err := TimeZone(ctx, "Asia/Tokyo"); err != nil {
		t.Fatal(err)
	}

	step(t, ctx, "the sign-up page", chromedp.Navigate(base+"/console/signup"), chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)))
	shots.Take(ctx, "signup")
	signUp(t, ctx, base+"/console/signup", "ada@example.com")
	if got := text(t, ctx, `.tiles .tile:first-child .big`); got != "121.32" {
		t.Fatalf("the new account's balance reads %q, want the trial credit 121.32", got)
	}
	waitText(t, ctx, "main", "No calls yet")
	shots.Take(ctx, "overview-new")

	raw := createKey(t, ctx, base, "laptop")
	step(t, ctx, "copy the key", chromedp.Click(chromedp.CSS(`button[data-copy="#new-key"]`)))
	waitText(t, ctx, `button[data-copy="#new-key"]`, "Copied")
	if clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err == nil {
		if clip != raw {
			t.Fatalf("the clipboard holds %q, want the key", clip)
		}
	} else {
		t.Logf("the clipboard cannot be read back here (%v); the Copy button said Copied", err)
	}
	shots.Take(ctx, "keys-created")

	trace, cost := chat(t, base, raw)
	status, rows := apiLogs(t, base, raw, "")
	if status != 200 || len(rows) != 1 || rows[0]["request_id"] != trace || rows[0]["cost"] != cost.String() {
		t.Fatalf("the API's own log: %d %v; want the call %s costing %s", status, rows, trace, cost)
	}

	// The log site: the row, with its exact cost.
	step(t, ctx, "open the log site", chromedp.Navigate(base+"/console/logs"), chromedp.WaitVisible(chromedp.CSS(`table.rows`)))
	rowText := waitText(t, ctx, `table.rows tbody`, trace)
	if !strings.Contains(rowText, cost.String()) {
		t.Fatalf("the log site's row does not show the exact cost %s:\n%s", cost, rowText)
	}
	if when := eval[string](t, ctx, `document.querySelector('table.rows time').textContent + " | " + document.querySelector('table.rows time').title`); !regexp.MustCompile(`JST \| .* UTC$`).MatchString(when) {
		t.Fatalf("a row's time reads %q; want Tokyo's, with UTC on hover", when)
	}
	shots.Take(ctx, "logs")

	// Its technical view.
	step(t, ctx, "open the technical view",
		chromedp.Click(chromedp.CSS(`table.rows tbody a[href^="/console/logs/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.tech`)))
	tech := text(t, ctx, "main")
	for _, want := range []string{trace, "Technical view", cost.String() + " credits", "sim-chat"} {
		if !strings.Contains(tech, want) {
			t.Fatalf("the technical view lacks %q:\n%s", want, tech)
		}
	}
	shots.Take(ctx, "technical-view")

	// Filters: a status with no call, then the call's own.
	step(t, ctx, "filter on errors",
		chromedp.Navigate(base+"/console/logs"),
		chromedp.Click(chromedp.CSS(`input[name=status][value=error]`)),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	waitText(t, ctx, "#results", "No call matches")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(eval[string](t, ctx, `location.href`), "status=error"); {
		if time.Now().After(deadline) {
			t.Fatalf("the filtered page's address %q does not carry the filter", eval[string](t, ctx, `location.href`))
		}
		time.Sleep(50 * time.Millisecond)
	}
	step(t, ctx, "filter on successes of sim-chat",
		chromedp.Click(chromedp.CSS(`input[name=status][value=error]`)),
		chromedp.Click(chromedp.CSS(`input[name=status][value=success]`)),
		chromedp.SetValue(chromedp.CSS(`select[name=model]`), "sim-chat"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	waitText(t, ctx, "#results", trace)
	shots.Take(ctx, "logs-filtered")

	// The CSV export of the spec: its columns, the row's cost.
	href := eval[string](t, ctx, `document.querySelector('a[download]').getAttribute('href')`)
	st, truncated, body, err := Fetch(ctx, href, "", "x-truncated")
	if err != nil || st != 200 {
		t.Fatalf("export %s: %d %v %s", href, st, err, body)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("the export has %d records (%v):\n%s", len(recs), err, body)
	}
	wantCols := "id,created_at,key_name,key_prefix,model,status,error_code,error_message,input_tokens,output_tokens,cached_tokens,unit_count,unit_type,cost_usd,latency_ms,request_id,task_id,submitted_at,attempts_count,result_urls,result_expires_at"
	if got := strings.Join(recs[0], ","); got != wantCols {
		t.Fatalf("export columns:\n got  %s\n want %s", got, wantCols)
	}
	if recs[1][13] != cost.String() || recs[1][15] != trace || recs[1][4] != "sim-chat" || truncated != "" {
		t.Fatalf("export row %v (x-truncated %q); want cost %s of %s", recs[1], truncated, cost, trace)
	}

	// Reveal the key again, after the password prompt.
	step(t, ctx, "open reveal",
		chromedp.Navigate(base+"/console/keys"),
		chromedp.Click(chromedp.CSS(`a[href$="/reveal"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	shots.Take(ctx, "reveal-prompt")
	step(t, ctx, "a wrong password",
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "not my password"),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	waitText(t, ctx, "#problem", "Wrong password")
	step(t, ctx, "the right password",
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#revealed-key`)))
	if got := strings.TrimSpace(text(t, ctx, `#revealed-key`)); got != raw {
		t.Fatalf("revealed %q, want the key", got)
	}
	shots.Take(ctx, "revealed")

	// The account-wide logs toggle, console-only: the key may then read
	// scope=account through the API.
	if st, _ := apiLogs(t, base, raw, "scope=account"); st != http.StatusForbidden {
		t.Fatalf("scope=account before the toggle: %d", st)
	}
	step(t, ctx, "turn on the logs toggle", chromedp.Navigate(base+"/console/keys"),
		chromedp.Click(chromedp.CSS(`form[action$="/logs-scope"] button`)))
	deadline := time.Now().Add(10 * time.Second)
	for eval[string](t, ctx, `document.querySelector('form[action$="/logs-scope"] button').getAttribute('aria-pressed')`) != "true" {
		if time.Now().After(deadline) {
			t.Fatal("the logs toggle did not turn on")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, rows := apiLogs(t, base, raw, "scope=account"); st != 200 || len(rows) != 1 {
		t.Fatalf("scope=account after the toggle: %d, %d rows", st, len(rows))
	}
	shots.Take(ctx, "keys")

	// The overview now shows the spend and the call.
	step(t, ctx, "overview", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.CSS(`#spent-month`)))
	if got := text(t, ctx, `#spent-month`); got != cost.String() {
		t.Fatalf("spent this month reads %q, want %s", got, cost)
	}
	waitText(t, ctx, "main", trace)
	step(t, ctx, "the chart is drawn", chromedp.WaitVisible(chromedp.CSS(`.plot canvas`)))
	shots.Take(ctx, "overview")
	if err := Dark(ctx, true); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "the overview in the dark", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.plot canvas`)))
	if bg := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`); bg == "rgb(251, 251, 250)" {
		t.Fatalf("dark mode left the light background %s", bg)
	}
	shots.Take(ctx, "overview-dark")
	if err := Dark(ctx, false); err != nil {
		t.Fatal(err)
	}

	// Phone size and the other pages, for the pictures.
	for _, p := range []string{"agents", "members", "billing", "account"} {
		step(t, ctx, p, chromedp.Navigate(base+"/console/"+p), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		shots.Take(ctx, p)
	}
	if err := Mobile(ctx, true); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "logs on a phone", chromedp.Navigate(base+"/console/logs"), chromedp.WaitVisible(chromedp.CSS(`table.rows`)))
	shots.Take(ctx, "logs-phone")
	if err := Mobile(ctx, false); err != nil {
		t.Fatal(err)
	}

	// Sign out: the session ends; a page sends to sign in again.
	step(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`.who button`)), chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	waitText(t, ctx, "main", "You are signed out")
	step(t, ctx, "keys after sign-out", chromedp.Navigate(base+"/console/keys"), chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "/console/signin") {
		t.Fatalf("after sign-out the keys page is %s", loc)
	}
}

// TestConsoleMembersCSRFThrottle: a member sees only their own keys; a
// state change without the CSRF token is refused; ten wrong passwords
// pause sign-in.
func TestConsoleMembersCSRFThrottle(t *testing.T) {
	owner := Start(t)
	shots := NewScreenshots(t)
	g := testgw.Start(t, testgw.Options{})
	base := g.URL

	signUp(t, owner, base+"/console/signup", "owner@example.com")
	ownerKey := createKey(t, owner, base, "owner's key")
	_ = ownerKey

	// Two invitations, made on the members page.
	invite := func() string {
		step(t, owner, "invite",
			chromedp.Navigate(base+"/console/members"),
			chromedp.SetValue(chromedp.CSS(`select[name=role]`), "member"),
			chromedp.Click(chromedp.CSS(`form[action="/console/members"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`#invite-link`)))
		return strings.TrimSpace(text(t, owner, `#invite-link`))
	}
	link1, link2 := invite(), invite()
	shots.Take(owner, "members-invited")

	alice := Tab(t, owner)
	signUp(t, alice, link1, "alice@example.com")
	aliceKey := createKey(t, alice, base, "alice's key")
	bob := Tab(t, owner)
	signUp(t, bob, link2, "bob@example.com")
	createKey(t, bob, base, "bob's key")

	// Bob's keys page lists his key only.
	step(t, bob, "bob's keys", chromedp.Navigate(base+"/console/keys"), chromedp.WaitVisible(chromedp.CSS(`table.keys`)))
	keys := text(t, bob, `table.keys`)
	if !strings.Contains(keys, "bob's key") || strings.Contains(keys, "alice's key") || strings.Contains(keys, "owner's key") {
		t.Fatalf("bob's keys page:\n%s", keys)
	}
	shots.Take(bob, "keys-member")
	// Alice's key, asked for by id, does not exist for Bob.
	aliceID := keyID(t, g, aliceKey)
	if st, _, _, err := Fetch(bob, base+"/console/keys/"+aliceID+"/reveal", "", ""); err != nil || st != http.StatusNotFound {
		t.Fatalf("bob opening alice's key: %d %v", st, err)
	}
	// The owner sees every key.
	step(t, owner, "owner's keys", chromedp.Navigate(base+"/console/keys"), chromedp.WaitVisible(chromedp.CSS(`table.keys`)))
	if keys := text(t, owner, `table.keys`); !strings.Contains(keys, "alice's key") || !strings.Contains(keys, "bob's key") {
		t.Fatalf("the owner's keys page:\n%s", keys)
	}

	// A state change without the CSRF token: refused, nothing made.
	st, _, body, err := Fetch(bob, base+"/console/keys",
		`{method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "name=sneaky"}`, "")
	if err != nil || st != http.StatusForbidden || !strings.Contains(body, "security token") {
		t.Fatalf("a POST without the token: %d %v", st, err)
	}
	st, _, _, err = Fetch(bob, base+"/console/keys/"+keyID(t, g, ownerKey)+"/disable",
		`{method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "_csrf=forged"}`, "")
	if err != nil || st != http.StatusForbidden {
		t.Fatalf("a POST with a forged token: %d %v", st, err)
	}
	if keys := text(t, owner, `table.keys`); strings.Contains(keys, "sneaky") {
		t.Fatal("a key was made without the token")
	}

	// Ten wrong passwords pause the account's sign-in, right password or not.
	step(t, alice, "sign out", chromedp.Navigate(base+"/console/account"), chromedp.Click(chromedp.CSS(`.who button`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	for i := range 10 {
		signIn(t, alice, base, "alice@example.com", fmt.Sprintf("wrong password %d", i))
		waitText(t, alice, "#problem", "Wrong email or password")
	}
	signIn(t, alice, base, "alice@example.com", password)
	msg := waitText(t, alice, "#problem", "Too many failed sign-ins for this account")
	if !strings.Contains(msg, "try again in") {
		t.Fatalf("the throttle's message: %q", msg)
	}
	shots.Take(alice, "signin-throttled")
	// Another person signs in as usual.
	step(t, bob, "bob signs out", chromedp.Navigate(base+"/console/account"), chromedp.Click(chromedp.CSS(`.who button`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	signIn(t, bob, base, "bob@example.com", password)
	if loc, _ := chromedp.Run(bob, chromedp.Location()); strings.Contains(loc, "signin") {
		t.Fatalf("bob could not sign in: %s", loc)
	}
}

// keyID is a raw key's id, from the admin API.
func keyID(t *testing.T, g *testgw.Gateway, raw string) string {
	t.Helper()
	var accts struct {
		Data []struct{ ID string } `json:"data"`
	}
	g.Admin("GET", "/accounts", nil, &accts)
	for _, a := range accts.Data {
		var ks struct {
			Data []struct{ ID, Prefix string } `json:"data"`
		}
		g.Admin("GET", "/accounts/"+a.ID+"/keys", nil, &ks)
		for _, k := range ks.Data {
			if strings.HasPrefix(raw, k.Prefix) {
				return k.ID
			}
		}
	}
	t.Fatalf("no key %s…", raw[:16])
	return ""
}
