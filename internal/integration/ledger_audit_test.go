package integration

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/testpg"
)

// ledgerStores are the stores the logs API's rules are checked on: both
// answer every query (the filters, windows, order and totals are each
// store's own code).
var ledgerStores = []string{"badger", "postgres"}

// startDefaultOn runs the embedded default on a store: Badger in the data
// dir, or a fresh PostgreSQL database.
func startDefaultOn(t *testing.T, kind string) *testgw.Gateway {
	t.Helper()
	if kind == "badger" {
		return startGateway(t, testgw.Options{})
	}
	const badger = "store \"badger\" {\n  dir = \"./data\"\n}"
	cfg := config.Render(config.Default(func(string) string { return "" }))
	if !strings.Contains(cfg, badger) {
		t.Fatalf("the rendered default has no %q block:\n%s", badger, cfg)
	}
	cfg = strings.Replace(cfg, badger, "store \"postgres\" {\n  url = env(\"DATABASE_URL\")\n}", 1)
	return startGateway(t, testgw.Options{Config: cfg, Env: []string{"DATABASE_URL=" + testpg.Database(t),
		"TOLLGATE_MASTER_KEY=5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5c0ffee5"}})
}

// onEachStore runs f as a subtest on each store.
func onEachStore(t *testing.T, f func(t *testing.T, g *testgw.Gateway)) {
	for _, kind := range ledgerStores {
		t.Run(kind, func(t *testing.T) { f(t, startDefaultOn(t, kind)) })
	}
}

// The rules of the call log that hold for every row, whatever wrote it:
// checked on rows of chat calls (served, failed upstream, refused, refused
// at pre-charge) and media calls (a synchronous image, a refused one, an
// async video, speech), through the list, the technical view and the CSV.

// rowUnitTypes and techKinds are the spec's vocabularies.
var (
	rowUnitTypes = map[string]bool{"image": true, "video": true, "music": true, "audio": true, "avatar": true,
		"voice": true, "search": true, "transcript": true}
	techKinds    = map[string]bool{"video": true, "image": true, "music": true, "audio": true}
	decimalCost  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	rowStatuses  = map[string]bool{"success": true, "error": true, "interrupted": true, "rejected": true}
	rowFieldList = []string{"object", "id", "created_at", "submitted_at", "key_id", "key_name", "key_prefix", "model",
		"status", "error_code", "error_message", "input_tokens", "output_tokens", "cached_tokens", "unit_count",
		"unit_type", "cost", "latency_ms", "request_id", "task_id", "result_urls", "result_expires_at", "attempts_count"}
)

// isInt says v is a JSON number without a fraction.
func isInt(v any) bool {
	f, ok := v.(float64)
	return ok && f == math.Trunc(f)
}

func rfc3339(t *testing.T, what string, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s is %#v, want an RFC 3339 string", what, v)
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %q: %v", what, s, err)
	}
	return at
}

// checkRowTypes checks one row of GET /v1/logs (default include) against
// the spec's field table.
func checkRowTypes(t *testing.T, r map[string]any) {
	t.Helper()
	for _, f := range rowFieldList {
		if _, ok := r[f]; !ok {
			t.Fatalf("row lacks %s: %v", f, r)
		}
	}
	if r["object"] != "log" || !isInt(r["id"]) || r["id"].(float64) <= 0 {
		t.Fatalf("object/id: %v", r)
	}
	created, submitted := rfc3339(t, "created_at", r["created_at"]), rfc3339(t, "submitted_at", r["submitted_at"])
	if created.Before(submitted) {
		t.Errorf("created_at %v before submitted_at %v", created, submitted)
	}
	for _, f := range []string{"key_id", "key_name", "key_prefix", "model", "request_id"} {
		if _, ok := r[f].(string); !ok {
			t.Errorf("%s is %#v, want a string", f, r[f])
		}
	}
	status, _ := r["status"].(string)
	if !rowStatuses[status] {
		t.Errorf("status %#v", r["status"])
	}
	for _, f := range []string{"error_code", "error_message", "task_id"} {
		if _, ok := r[f].(string); !ok && r[f] != nil {
			t.Errorf("%s is %#v, want a string or null", f, r[f])
		}
	}
	if status == "success" && (r["error_code"] != nil || r["error_message"] != nil) {
		t.Errorf("a success with an error: %v", r)
	}
	for _, f := range []string{"input_tokens", "output_tokens", "cached_tokens", "latency_ms"} {
		if !isInt(r[f]) || r[f].(float64) < 0 {
			t.Errorf("%s is %#v, want a whole number", f, r[f])
		}
	}
	if r["unit_count"] != nil && !isInt(r["unit_count"]) {
		t.Errorf("unit_count is %#v", r["unit_count"])
	}
	if ut := r["unit_type"]; ut != nil && !rowUnitTypes[str(ut)] {
		t.Errorf("unit_type is %#v", ut)
	}
	cost, ok := r["cost"].(string)
	if !ok || !decimalCost.MatchString(cost) {
		t.Errorf("cost is %#v, want a decimal string", r["cost"])
	}
	if status == "rejected" && cost != "0" {
		t.Errorf("a rejected row costs %s", cost)
	}
	urls, ok := r["result_urls"].([]any)
	if !ok {
		t.Errorf("result_urls is %#v, want an array", r["result_urls"])
	}
	for _, u := range urls {
		if _, ok := u.(string); !ok {
			t.Errorf("result_urls item %#v", u)
		}
	}
	if r["result_expires_at"] != nil {
		rfc3339(t, "result_expires_at", r["result_expires_at"])
	}
	if ac := r["attempts_count"]; ac != nil && (!isInt(ac) || ac.(float64) < 1) {
		t.Errorf("attempts_count is %#v: null or a count of at least 1, never 0", ac)
	}
	atts, ok := r["attempts"].([]any)
	if !ok {
		t.Fatalf("attempts is %#v with the default include", r["attempts"])
	}
	for _, a := range atts {
		m := a.(map[string]any)
		for _, f := range []string{"seq", "created_at", "latency_ms", "error_code", "error_message"} {
			if _, ok := m[f]; !ok {
				t.Errorf("attempt lacks %s: %v", f, m)
			}
		}
		rfc3339(t, "attempt created_at", m["created_at"])
	}
}

func TestLedgerRowFieldsOfEveryKind(t *testing.T) { onEachStore(t, testRowFieldsOfEveryKind) }

func testRowFieldsOfEveryKind(t *testing.T, g *testgw.Gateway) {
	acct := g.Account("1") // enough for the media calls, not for the dear chat's hold
	_, key := g.Key(acct, nil)
	rd := readers{g, acct}
	post := func(k, path, body string) call {
		t.Helper()
		return do(t, "POST", g.URL+path, bearer(k), body)
	}
	type made struct {
		trace, status, unitType string
		attemptsNull            bool
	}
	var calls []made
	add := func(c call, status, unitType string, attemptsNull bool) {
		t.Helper()
		tr := c.Header.Get("x-gateway-trace")
		if tr == "" {
			t.Fatalf("no x-gateway-trace: %d %s", c.Status, c.Body)
		}
		calls = append(calls, made{tr, status, unitType, attemptsNull})
	}
	add(post(key, "/v1/chat/completions", chatBody("sim-chat", "plain", "")), "success", "", false)
	add(post(key, "/v1/chat/completions", chatBody("sim-chat", "fail [sim:error=500]", "")), "error", "", false)
	add(post(key, "/v1/chat/completions", chatBody("no-such-model", "refused", "")), "rejected", "", true)
	add(post(key, "/v1/chat/completions", chatBody("sim-chat", "too dear", `"max_tokens":100000000`)), "rejected", "", true)
	add(post(key, "/v1/images/generations", `{"model":"sim-image","prompt":"a cat"}`), "success", "image", false)
	add(post(key, "/v1/images/generations", `{"model":"sim-image","prompt":"a cat","n":50}`), "rejected", "image", true)
	add(post(key, "/v1/audio/speech", `{"model":"sim-speech","input":"hello there","voice":"alloy"}`), "success", "audio", false)
	vid := post(key, "/v1/videos/generations", `{"model":"sim-video","prompt":"a cat","duration":2}`)
	add(vid, "success", "video", false)
	taskID := gjson.GetBytes(vid.Body, "id").Str

	reader := rd.next()
	var page logsPage
	deadline := time.Now().Add(10 * time.Second)
	for { // the video's row is written when its job ends
		page = getLogs(t, g, key, q("limit", "200"))
		if len(page.Data) == len(calls) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(page.Data) != len(calls) {
		t.Fatalf("%d rows for %d calls", len(page.Data), len(calls))
	}
	byTrace := map[string]map[string]any{}
	ids := map[float64]bool{}
	for _, r := range page.Data {
		checkRowTypes(t, r)
		if ids[r["id"].(float64)] {
			t.Fatalf("id %v twice", r["id"])
		}
		ids[r["id"].(float64)] = true
		byTrace[str(r["request_id"])] = r
		if !strings.HasPrefix(key, str(r["key_prefix"])) {
			t.Errorf("key_prefix %v", r["key_prefix"])
		}
	}
	for _, c := range calls {
		r := byTrace[c.trace]
		if r == nil {
			t.Fatalf("no row with request_id %s (x-gateway-trace)", c.trace)
		}
		if str(r["status"]) != c.status || str(r["unit_type"]) != c.unitType || (r["attempts_count"] == nil) != c.attemptsNull {
			t.Errorf("row of %s: status %v unit_type %v attempts_count %v, want %s %q null=%v",
				c.trace, r["status"], r["unit_type"], r["attempts_count"], c.status, c.unitType, c.attemptsNull)
		}
	}
	t.Run("an async job's row is found by its task id and its request id", func(t *testing.T) {
		byTask := getLogs(t, g, key, q("ref", taskID))
		byReq := getLogs(t, g, key, q("ref", calls[len(calls)-1].trace))
		if len(byTask.Data) != 1 || len(byReq.Data) != 1 || byTask.Data[0]["id"] != byReq.Data[0]["id"] || byTask.Data[0]["task_id"] != taskID {
			t.Fatalf("ref=%s: %v; ref=request id: %v", taskID, byTask.Data, byReq.Data)
		}
	})

	t.Run("technical views", func(t *testing.T) {
		for _, r := range page.Data {
			c := do(t, "GET", g.URL+"/v1/logs/"+idStr(uint64(r["id"].(float64))), bearer(key), "")
			if c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
			m := c.json(t)
			if m["id"] != r["id"] || !isInt(m["id"]) {
				t.Errorf("id %v, row %v", m["id"], r["id"])
			}
			if k := m["kind"]; k != nil && !techKinds[str(k)] {
				t.Errorf("kind %#v", k)
			}
			if r["unit_type"] == nil && m["kind"] != nil {
				t.Errorf("a chat row of kind %v", m["kind"])
			}
			if n, ok := m["request_note"]; !ok || (n != nil && !isString(n)) {
				t.Errorf("request_note %#v", n)
			}
			for _, group := range []string{"request", "upstream", "gateway"} {
				items, ok := m[group].([]any)
				if !ok {
					t.Fatalf("%s is not an array: %s", group, c.Body)
				}
				for _, it := range items {
					kv, _ := it.(map[string]any)
					if len(kv) != 2 || !isString(kv["k"]) || !isString(kv["v"]) {
						t.Errorf("%s item %#v", group, it)
					}
				}
			}
		}
	})

	// Every column of the CSV is the list's value: nulls empty, result_urls
	// joined with |, cost_usd the cost in credits.
	t.Run("CSV cells equal the rows", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/logs/export.csv", bearer(key), "")
		recs, err := csv.NewReader(bytes.NewReader(c.Body)).ReadAll()
		if err != nil || c.Status != 200 || len(recs) != 1+len(page.Data) {
			t.Fatalf("%d %v: %s", c.Status, err, c.Body)
		}
		cols := []string{"id", "created_at", "key_name", "key_prefix", "model", "status", "error_code", "error_message",
			"input_tokens", "output_tokens", "cached_tokens", "unit_count", "unit_type", "cost_usd", "latency_ms",
			"request_id", "task_id", "submitted_at", "attempts_count", "result_urls", "result_expires_at"}
		if strings.Join(recs[0], ",") != strings.Join(cols, ",") {
			t.Fatalf("header %v", recs[0])
		}
		for i, rec := range recs[1:] {
			r := page.Data[i] // both newest first
			for j, col := range cols {
				field := col
				if col == "cost_usd" {
					field = "cost"
				}
				if got, want := rec[j], cellOf(r[field]); got != want {
					t.Errorf("row %v %s = %q, want %q", r["id"], col, got, want)
				}
			}
		}
	})

	t.Run("scope account sees them too", func(t *testing.T) {
		p := getLogs(t, g, reader, q("scope", "account", "limit", "200"))
		if len(p.Data) != len(calls) {
			t.Fatalf("%d rows", len(p.Data))
		}
	})
}

func isString(v any) bool { _, ok := v.(string); return ok }

// cellOf is a JSON value as the CSV writes it.
func cellOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = cellOf(p)
		}
		return strings.Join(parts, "|")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// An async job is no row while it runs (it is in_flight), then one row,
// booked at its terminal instant.
func TestLedgerAsyncJobBecomesARowWhenItEnds(t *testing.T) {
	onEachStore(t, testAsyncJobBecomesARowWhenItEnds)
}

func testAsyncJobBecomesARowWhenItEnds(t *testing.T, g *testgw.Gateway) {
	_, key := g.Key(g.Account(""), nil)
	sub := do(t, "POST", g.URL+"/v1/videos/generations", bearer(key), `{"model":"sim-video","prompt":"slow [sim:latency=1500ms]","duration":2}`)
	id := gjson.GetBytes(sub.Body, "id").Str
	if id == "" {
		t.Fatalf("%d %s", sub.Status, sub.Body)
	}
	running := getLogs(t, g, key, q("include", "in_flight"))
	if len(running.Data) != 0 || running.InFlight == nil || len(*running.InFlight) != 1 {
		t.Fatalf("while running: %d rows, in_flight %v", len(running.Data), running.InFlight)
	}
	if f := (*running.InFlight)[0].(map[string]any); f["task_id"] != id || f["request_id"] != sub.Header.Get("x-gateway-trace") {
		t.Fatalf("in_flight %v", f)
	}
	if p := getLogs(t, g, key, q("ref", id)); len(p.Data) != 0 {
		t.Fatalf("a row before the job ended: %v", p.Data)
	}
	if s := do(t, "GET", g.URL+"/v1/logs/summary?period=today", bearer(key), ""); gjson.GetBytes(s.Body, "total.requests").Int() != 0 {
		t.Fatalf("the summary counts a running job: %s", s.Body)
	}
	var row map[string]any
	for deadline := time.Now().Add(15 * time.Second); row == nil; time.Sleep(200 * time.Millisecond) {
		if p := getLogs(t, g, key, q("ref", id)); len(p.Data) == 1 {
			row = p.Data[0]
		} else if time.Now().After(deadline) {
			t.Fatal("no row after the job ended")
		}
	}
	created, submitted := rfc3339(t, "created_at", row["created_at"]), rfc3339(t, "submitted_at", row["submitted_at"])
	if created.Sub(submitted) < time.Second {
		t.Fatalf("created_at %v is not the terminal instant (submitted %v, the job ran 1.5 s)", created, submitted)
	}
	done := getLogs(t, g, key, q("include", "in_flight"))
	if len(done.Data) != 1 || done.InFlight == nil || len(*done.InFlight) != 0 {
		t.Fatalf("after the end: %d rows, in_flight %v", len(done.Data), done.InFlight)
	}
}

// The logs endpoints are free and answer at zero balance; an admin credit
// is not a call, so it is no row and no part of a summary.
func TestLedgerLogsAreFreeAtAnyBalance(t *testing.T) { onEachStore(t, testLogsAreFreeAtAnyBalance) }

func testLogsAreFreeAtAnyBalance(t *testing.T, g *testgw.Gateway) {
	broke := g.Account("0")
	_, brokeKey := g.Key(broke, map[string]any{"logs_account_scope": true})
	refused := do(t, "POST", g.URL+"/v1/chat/completions", bearer(brokeKey), chatBody("sim-chat", "hi", ""))
	if refused.Status != 402 {
		t.Fatalf("%d %s", refused.Status, refused.Body)
	}
	// Every billed call gets a row, one refused at authentication
	// included, and a media call's row says its unit type though its
	// model was never read.
	media := []struct{ path, body, unitType string }{
		{"/v1/images/generations", `{"model":"sim-image","prompt":"x"}`, "image"},
		{"/v1/videos/generations", `{"model":"sim-video","prompt":"x","duration":2}`, "video"},
		{"/v1/videos/generations", `{"model":"dh-lipsync","source_video_url":"https://example.com/v.mp4","audio_url":"https://example.com/a.wav","duration":1}`, "video"},
		{"/v1/audio/speech", `{"model":"sim-speech","input":"x","voice":"alloy"}`, "audio"},
		{"/v1/search", `{"query":"x"}`, "search"},
	}
	traces := make([]string, len(media))
	for i, m := range media {
		c := do(t, "POST", g.URL+m.path, bearer(brokeKey), m.body)
		if c.Status != 402 {
			t.Fatalf("%s at zero balance: %d %s", m.path, c.Status, c.Body)
		}
		traces[i] = c.Header.Get("x-gateway-trace")
	}
	rows := logsOf(t, g, brokeKey)
	if len(rows) != 1+len(media) {
		t.Fatalf("%d rows for %d refused calls", len(rows), 1+len(media))
	}
	for i, r := range rows { // newest first
		want, trace := "", refused.Header.Get("x-gateway-trace") // the chat call, first made
		if i < len(media) {
			want, trace = media[len(media)-1-i].unitType, traces[len(media)-1-i]
		}
		if r["status"] != "rejected" || r["error_code"] != "quota_exceeded" || r["cost"] != "0" || str(r["unit_type"]) != want ||
			r["request_id"] != trace || r["attempts_count"] != nil {
			t.Errorf("row %d: %v, want unit_type %q, request_id %s", i, r, want, trace)
		}
	}
	if p := getLogs(t, g, brokeKey, q("unit_type", "chat")); len(p.Data) != 1 {
		t.Errorf("unit_type=chat lists %d rows", len(p.Data))
	}
	row := rows[len(rows)-1]
	for _, path := range []string{"/v1/logs", "/v1/logs?scope=account", "/v1/logs/summary", "/v1/logs/export.csv",
		"/v1/logs/" + idStr(uint64(row["id"].(float64)))} {
		if c := do(t, "GET", g.URL+path, bearer(brokeKey), ""); c.Status != 200 {
			t.Errorf("%s at zero balance: %d %s", path, c.Status, c.Body)
		}
	}

	acct := g.Account("")
	_, key := g.Key(acct, nil)
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "one call", "")); c.Status != 200 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	logsOf(t, g, key)
	before, _ := g.Balance(acct)
	g.Admin("POST", "/accounts/"+acct+"/credits", map[string]any{"amount": "5", "note": "a top-up"}, nil)
	for _, path := range []string{"/v1/logs", "/v1/logs/summary?period=today", "/v1/logs/export.csv", "/v1/logs?include=in_flight"} {
		if c := do(t, "GET", g.URL+path, bearer(key), ""); c.Status != 200 {
			t.Fatalf("%s: %d %s", path, c.Status, c.Body)
		}
	}
	after, held := g.Balance(acct)
	if money.MustParse(after) != money.MustParse(before)+money.Credits(5) || held != "0" {
		t.Fatalf("balance %s then %s (held %s): the logs calls cost something", before, after, held)
	}
	if rows := logsOf(t, g, key); len(rows) != 1 {
		t.Fatalf("%d rows: the credit is not a call", len(rows))
	}
	s := do(t, "GET", g.URL+"/v1/logs/summary?period=7d", bearer(key), "")
	if gjson.GetBytes(s.Body, "total.requests").Int() != 1 {
		t.Fatalf("summary %s", s.Body)
	}
}

// The summary of a from/to window counts the rows the list returns for it,
// to the nanosecond; a timestamp whose offset's + came unescaped is read.
func TestLedgerSummaryWindowIsTheListsWindow(t *testing.T) {
	onEachStore(t, testSummaryWindowIsTheListsWindow)
}

func testSummaryWindowIsTheListsWindow(t *testing.T, g *testgw.Gateway) {
	_, key := g.Key(g.Account(""), nil)
	for _, p := range []string{"one", "two", "three"} {
		if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", p, "")); c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	}
	rows := getLogs(t, g, key, q("order", "asc"))
	if len(rows.Data) != 3 {
		t.Fatalf("%d rows", len(rows.Data))
	}
	from, to := str(rows.Data[1]["created_at"]), str(rows.Data[2]["created_at"])
	list := getLogs(t, g, key, q("from", from, "to", to))
	s := do(t, "GET", g.URL+"/v1/logs/summary?"+q("from", from, "to", to), bearer(key), "")
	if len(list.Data) != 1 || gjson.GetBytes(s.Body, "total.requests").Int() != 1 ||
		gjson.GetBytes(s.Body, "period_from").Str != from || gjson.GetBytes(s.Body, "period_to").Str != to {
		t.Fatalf("[%s, %s): list %d rows, summary %s", from, to, len(list.Data), s.Body)
	}
	// 2026-01-01T00:00:00+00:00 typed into a URL: the + arrives as a space.
	raw := do(t, "GET", g.URL+"/v1/logs?from=2000-01-01T00:00:00+00:00&to="+strings.ReplaceAll(to, "Z", "+00:00"), bearer(key), "")
	if raw.Status != 200 || len(gjson.GetBytes(raw.Body, "data").Array()) != 2 {
		t.Fatalf("%d %s", raw.Status, raw.Body)
	}
}

// The logs endpoints authenticate as every endpoint does (Authentication
// rule 6): each failure is 401 invalid_api_key with its message, in the
// completions-style shape, and counts nothing; the rows of a key that can
// no longer read stay in the account's log.
func TestLedgerLogsAuthentication(t *testing.T) {
	g, acct, key := startDefault(t)
	reader := readers{g, acct}.next()
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "a row", "")); c.Status != 200 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	row := logsOf(t, g, key)[0]
	rowPath := "/v1/logs/" + idStr(uint64(row["id"].(float64)))

	revokedID, revoked := g.Key(acct, nil)
	g.Admin("PATCH", "/keys/"+revokedID, map[string]any{"enabled": false}, nil)
	_, expired := g.Key(acct, map[string]any{"expires_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
	off := g.Account("")
	_, offKey := g.Key(off, nil)
	g.Admin("PATCH", "/accounts/"+off, map[string]any{"status": "disabled"}, nil)
	failures := []struct {
		desc    string
		headers map[string]string
		msg     string
	}{
		{"no key", nil, "authentication failed: missing or malformed api key ("},
		{"malformed key", bearer("sk-tollgate-short"), "authentication failed: missing or malformed api key ("},
		{"unknown key", bearer("sk-tollgate-" + strings.Repeat("0", 64)), "authentication failed: invalid api key"},
		{"revoked key", bearer(revoked), "authentication failed: api key revoked"},
		{"expired key", map[string]string{"x-api-key": expired}, "authentication failed: api key expired"},
		{"disabled account", bearer(offKey), "authentication failed: account is not active"},
	}
	for _, f := range failures {
		t.Run(f.desc, func(t *testing.T) {
			for _, path := range []string{"/v1/logs", "/v1/logs/summary", "/v1/logs/export.csv", rowPath} {
				c := do(t, "GET", g.URL+path, f.headers, "")
				msg := wantErr(t, c, 401, "invalid_api_key", "authentication_error")
				if !strings.HasPrefix(msg, f.msg) || c.Header.Get("x-gateway-trace") == "" {
					t.Fatalf("%s: %q (trace %q), want %q", path, msg, c.Header.Get("x-gateway-trace"), f.msg)
				}
			}
		})
	}
	t.Run("a revoked key's rows stay in the account's log", func(t *testing.T) {
		id, k := g.Key(acct, nil)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(k), chatBody("sim-chat", "then revoked", "")); c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		logsOf(t, g, k)
		g.Admin("PATCH", "/keys/"+id, map[string]any{"enabled": false}, nil)
		if p := getLogs(t, g, reader, q("scope", "account", "key_id", id)); len(p.Data) != 1 || p.Data[0]["key_id"] != id {
			t.Fatalf("rows of the revoked key: %v", p.Data)
		}
	})
}
