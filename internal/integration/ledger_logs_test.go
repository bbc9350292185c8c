package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// TestLedgerLogsRules checks every rule of GET /v1/logs and /v1/logs/{id}
// against the real binary, on each store: rows written by real chat calls
// through the sim plugin, read back over HTTP.
func TestLedgerLogsRules(t *testing.T) { onEachStore(t, testLedgerLogsRules) }

func testLedgerLogsRules(t *testing.T, g *testgw.Gateway) {
	acct := g.Account("")
	rd := readers{g, acct}
	w1ID, w1 := g.Key(acct, map[string]any{"name": "writer one"})
	w2ID, w2 := g.Key(acct, map[string]any{"name": "writer two"})
	otherAcct := g.Account("")
	_, foreign := g.Key(otherAcct, map[string]any{"logs_account_scope": true})

	chat := func(key, prompt string, wantStatus int) string {
		t.Helper()
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", prompt, ""))
		if c.Status != wantStatus {
			t.Fatalf("chat %q: %d %s", prompt, c.Status, c.Body)
		}
		return c.Header.Get("x-gateway-trace")
	}
	start := time.Now().UTC()
	var w1Traces []string
	for i := 0; i < 4; i++ {
		w1Traces = append(w1Traces, chat(w1, "hello number "+idStr(uint64(i)), 200))
	}
	errTrace := chat(w1, "fail please [sim:error=500]", 500)
	w2Traces := []string{chat(w2, "hi from two", 200), chat(w2, "again from two", 200)}
	chat(foreign, "another account", 200)
	_ = w2Traces

	// All of w1's rows, newest first, through an account-scope reader.
	all := getLogs(t, g, rd.next(), q("scope", "account", "key_id", w1ID, "limit", "200"))
	if len(all.Data) != 5 {
		t.Fatalf("writer one has %d rows, want 5", len(all.Data))
	}
	byTrace := map[string]map[string]any{}
	for _, r := range all.Data {
		byTrace[r["request_id"].(string)] = r
	}
	for _, tr := range append(slices.Clone(w1Traces), errTrace) {
		if byTrace[tr] == nil {
			t.Fatalf("no row with request_id = x-gateway-trace %s", tr)
		}
	}
	errRow := byTrace[errTrace]
	errID := uint64(errRow["id"].(float64))

	t.Run("row fields", func(t *testing.T) {
		r := byTrace[w1Traces[0]]
		if r["object"] != "log" || r["key_id"] != w1ID || r["key_name"] != "writer one" || r["model"] != "sim-chat" ||
			r["status"] != "success" || r["error_code"] != nil || r["unit_type"] != nil || r["task_id"] != nil {
			t.Fatalf("row %v", r)
		}
		if checkCost(t, r) <= 0 || r["input_tokens"].(float64) <= 0 || r["output_tokens"].(float64) <= 0 {
			t.Fatalf("cost/tokens %v", r)
		}
		if !strings.HasPrefix(w1, r["key_prefix"].(string)) {
			t.Fatalf("key_prefix %v is not a prefix of the key", r["key_prefix"])
		}
		if errRow["status"] != "error" || errRow["error_code"] == nil {
			t.Fatalf("error row %v", errRow)
		}
	})

	t.Run("scope key is the calling key's rows", func(t *testing.T) {
		p := getLogs(t, g, w2, "")
		if p.Scope != "key" || len(p.Data) != 2 {
			t.Fatalf("scope %s, %d rows", p.Scope, len(p.Data))
		}
		for _, r := range p.Data {
			if r["key_id"] != w2ID {
				t.Fatalf("row of key %v", r["key_id"])
			}
		}
	})
	t.Run("scope account without the toggle is 403", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/logs?scope=account", bearer(w1), "")
		wantErr(t, c, 403, "permission_denied", "permission_error")
	})
	t.Run("scope account with the toggle is the whole account", func(t *testing.T) {
		p := getLogs(t, g, rd.next(), q("scope", "account", "period", "all"))
		if p.Scope != "account" || len(p.Data) != 7 {
			t.Fatalf("scope %s, %d rows, want 7", p.Scope, len(p.Data))
		}
	})
	t.Run("employee and desktop keys never get account scope", func(t *testing.T) {
		for _, kind := range []string{"employee", "desktop"} {
			_, k := g.Key(acct, map[string]any{"kind": kind, "logs_account_scope": true})
			c := do(t, "GET", g.URL+"/v1/logs?scope=account", bearer(k), "")
			wantErr(t, c, 403, "permission_denied", "permission_error")
			if p := getLogs(t, g, k, ""); p.Scope != "key" {
				t.Fatalf("%s key scope=key: %s", kind, p.Scope)
			}
		}
	})
	t.Run("agent keys get 403 on every logs endpoint", func(t *testing.T) {
		_, agent := g.Key(acct, map[string]any{"kind": "agent", "logs_account_scope": true})
		for _, path := range []string{"/v1/logs", "/v1/logs?scope=account", "/v1/logs/summary", "/v1/logs/export.csv", "/v1/logs/" + idStr(errID)} {
			c := do(t, "GET", g.URL+path, bearer(agent), "")
			wantErr(t, c, 403, "permission_denied", "permission_error")
		}
	})
	t.Run("key_id only with account scope", func(t *testing.T) {
		r := rd.next()
		wantErr(t, do(t, "GET", g.URL+"/v1/logs?key_id="+w1ID, bearer(r), ""), 400, "invalid_request", "invalid_request_error")
		wantErr(t, do(t, "GET", g.URL+"/v1/logs?scope=key&key_id="+w1ID, bearer(r), ""), 400, "invalid_request", "invalid_request_error")
		p := getLogs(t, g, r, q("scope", "account", "key_id", w2ID))
		if len(p.Data) != 2 {
			t.Fatalf("key_id=%s: %d rows", w2ID, len(p.Data))
		}
	})
	t.Run("another account is invisible", func(t *testing.T) {
		p := getLogs(t, g, foreign, q("scope", "account", "key_id", w1ID))
		if len(p.Data) != 0 {
			t.Fatalf("foreign account sees %d rows", len(p.Data))
		}
	})

	t.Run("periods", func(t *testing.T) {
		r := rd.next()
		now := time.Now().UTC()
		tests := []struct {
			period, from string
		}{
			{"today", now.Format("2006-01-02") + "T00:00:00Z"},
			{"this_month", now.Format("2006-01") + "-01T00:00:00Z"},
			{"all", "1970-01-01T00:00:00Z"},
			{"7d", ""},
			{"30d", ""},
		}
		for _, tc := range tests {
			t.Run(tc.period, func(t *testing.T) {
				p := getLogs(t, g, r, q("scope", "account", "key_id", w1ID, "period", tc.period))
				if len(p.Data) != 5 {
					t.Fatalf("%d rows", len(p.Data))
				}
				to, err := time.Parse(time.RFC3339Nano, p.PeriodTo)
				if err != nil || to.Before(start) || to.After(time.Now().Add(time.Second)) {
					t.Fatalf("period_to %s", p.PeriodTo)
				}
				from, err := time.Parse(time.RFC3339Nano, p.PeriodFrom)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case tc.from != "" && tc.period != "today" && tc.period != "this_month" && p.PeriodFrom != tc.from:
					t.Fatalf("period_from %s, want %s", p.PeriodFrom, tc.from)
				case tc.period == "7d" && to.Sub(from) != 7*24*time.Hour, tc.period == "30d" && to.Sub(from) != 30*24*time.Hour:
					t.Fatalf("window %s .. %s", p.PeriodFrom, p.PeriodTo)
				case (tc.period == "today" || tc.period == "this_month") && !strings.HasPrefix(tc.from, p.PeriodFrom[:10]):
					t.Fatalf("period_from %s, want %s", p.PeriodFrom, tc.from)
				}
			})
		}
		p := getLogs(t, g, r, q("scope", "account", "key_id", w1ID))
		if to, _ := time.Parse(time.RFC3339Nano, p.PeriodTo); p.PeriodFrom != to.Add(-30*24*time.Hour).Format(time.RFC3339Nano) {
			t.Fatalf("default period is not 30d: %s .. %s", p.PeriodFrom, p.PeriodTo)
		}
		wantErr(t, do(t, "GET", g.URL+"/v1/logs?period=yesterday", bearer(r), ""), 400, "invalid_request", "invalid_request_error")
	})

	t.Run("from and to together", func(t *testing.T) {
		r := rd.next()
		day := time.Now().UTC().Format("2006-01-02")
		for _, qs := range []string{"from=" + day, "to=" + day, "from=" + day + "&to=", "from=nonsense&to=" + day, "from=" + day + "&to=2001-01-01"} {
			c := do(t, "GET", g.URL+"/v1/logs?"+qs, bearer(r), "")
			wantErr(t, c, 400, "invalid_request", "invalid_request_error")
		}
		// Given both, period is ignored (not even validated).
		p := getLogs(t, g, r, q("scope", "account", "key_id", w1ID, "from", day, "to", day, "period", "bogus"))
		if len(p.Data) != 5 {
			t.Fatalf("from=to=%s: %d rows", day, len(p.Data))
		}
	})

	t.Run("date to includes the day, timestamp to excludes the instant", func(t *testing.T) {
		r := rd.next()
		created, err := time.Parse(time.RFC3339Nano, errRow["created_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		day := created.Format("2006-01-02")
		base := []string{"scope", "account", "key_id", w1ID, "ref", errTrace}
		tests := []struct {
			desc, from, to string
			want           int
		}{
			{"date to is the whole day", day, day, 1},
			{"timestamp to equal to created_at excludes it", day, created.Format(time.RFC3339Nano), 0},
			{"timestamp to a nanosecond later includes it", day, created.Add(time.Nanosecond).Format(time.RFC3339Nano), 1},
			{"timestamp from equal to created_at includes it", created.Format(time.RFC3339Nano), created.Add(time.Hour).Format(time.RFC3339Nano), 1},
			{"forms mixed, window before the row", "2000-01-01", created.Add(-time.Millisecond).Format(time.RFC3339Nano), 0},
		}
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				p := getLogs(t, g, r, q(append(base, "from", tc.from, "to", tc.to)...))
				if len(p.Data) != tc.want {
					t.Fatalf("%d rows, want %d", len(p.Data), tc.want)
				}
			})
		}
	})

	t.Run("filters", func(t *testing.T) {
		r := rd.next()
		base := []string{"scope", "account", "key_id", w1ID}
		tests := []struct {
			desc string
			kv   []string
			want int
		}{
			{"status", []string{"status", "error"}, 1},
			{"status list", []string{"status", "success,error"}, 5},
			{"status rejected", []string{"status", "rejected"}, 0},
			{"empty status is no filter", []string{"status", ""}, 5},
			{"model", []string{"model", "sim-chat"}, 5},
			{"model list with an unknown id", []string{"model", "nope,sim-chat"}, 5},
			{"other model", []string{"model", "nope"}, 0},
			{"empty model is no filter", []string{"model", ""}, 5},
			{"unit_type chat is token-billed rows", []string{"unit_type", "chat"}, 5},
			{"unit_type image", []string{"unit_type", "image"}, 0},
			{"error_code", []string{"error_code", errRow["error_code"].(string)}, 1},
			{"empty error_code is no filter", []string{"error_code", ""}, 5},
			{"ref by request id (x-gateway-trace)", []string{"ref", w1Traces[2]}, 1},
			{"ref unknown", []string{"ref", "req_000000000000000000000000"}, 0},
			{"unknown parameter ignored", []string{"colour", "blue"}, 5},
		}
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				p := getLogs(t, g, r, q(append(slices.Clone(base), tc.kv...)...))
				if len(p.Data) != tc.want {
					t.Fatalf("%d rows, want %d", len(p.Data), tc.want)
				}
				if tc.desc == "ref by request id (x-gateway-trace)" && p.Data[0]["request_id"] != w1Traces[2] {
					t.Fatalf("ref found %v", p.Data[0]["request_id"])
				}
			})
		}
		for _, bad := range []string{"status=failed", "status=success,failed", "unit_type=images", "order=newest", "include=everything"} {
			t.Run("400 "+bad, func(t *testing.T) {
				wantErr(t, do(t, "GET", g.URL+"/v1/logs?"+bad, bearer(r), ""), 400, "invalid_request", "invalid_request_error")
			})
		}
	})

	t.Run("order", func(t *testing.T) {
		r := rd.next()
		desc := getLogs(t, g, r, q("scope", "account", "key_id", w1ID)).ids()
		asc := getLogs(t, g, r, q("scope", "account", "key_id", w1ID, "order", "asc")).ids()
		explicit := getLogs(t, g, r, q("scope", "account", "key_id", w1ID, "order", "desc")).ids()
		rev := slices.Clone(asc)
		slices.Reverse(rev)
		if !slices.Equal(desc, rev) || !slices.Equal(desc, explicit) || !slices.IsSorted(asc) {
			t.Fatalf("desc %v asc %v", desc, asc)
		}
		if asc[0] != uint64(byTrace[w1Traces[0]]["id"].(float64)) {
			t.Fatalf("oldest first is %d", asc[0])
		}
	})

	t.Run("limit bounds", func(t *testing.T) {
		r := rd.next()
		for _, bad := range []string{"0", "201", "-1", "ten", "1.5"} {
			wantErr(t, do(t, "GET", g.URL+"/v1/logs?limit="+bad, bearer(r), ""), 400, "invalid_request", "invalid_request_error")
		}
		if p := getLogs(t, g, r, q("scope", "account", "limit", "1")); len(p.Data) != 1 || !p.HasMore || p.NextCursor == nil {
			t.Fatalf("limit=1: %d rows, has_more %v", len(p.Data), p.HasMore)
		}
		if p := getLogs(t, g, r, q("scope", "account", "limit", "200")); len(p.Data) != 7 || p.HasMore || p.NextCursor != nil {
			t.Fatalf("limit=200: %d rows, has_more %v", len(p.Data), p.HasMore)
		}
	})

	t.Run("cursor pages never skip or repeat", func(t *testing.T) {
		r := rd.next()
		full := getLogs(t, g, r, q("scope", "account", "period", "all")).ids()
		for _, order := range []string{"desc", "asc"} {
			t.Run(order, func(t *testing.T) {
				var got []uint64
				p := getLogs(t, g, r, q("scope", "account", "period", "all", "limit", "2", "order", order))
				firstTo := p.PeriodTo
				for {
					got = append(got, p.ids()...)
					if !p.HasMore {
						break
					}
					// period is not needed with a cursor: the window is frozen in it.
					p = getLogs(t, g, r, q("scope", "account", "limit", "2", "order", order, "cursor", *p.NextCursor))
					if p.PeriodTo != firstTo {
						t.Fatalf("window moved: %s then %s", firstTo, p.PeriodTo)
					}
				}
				want := slices.Clone(full)
				if order == "asc" {
					slices.Reverse(want)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("pages %v, want %v", got, want)
				}
			})
		}
	})

	t.Run("cursor and order mismatch is 400 both ways", func(t *testing.T) {
		r := rd.next()
		desc := getLogs(t, g, r, q("scope", "account", "limit", "2"))
		asc := getLogs(t, g, r, q("scope", "account", "limit", "2", "order", "asc"))
		for _, qs := range []string{
			q("scope", "account", "limit", "2", "order", "asc", "cursor", *desc.NextCursor),
			q("scope", "account", "limit", "2", "cursor", *asc.NextCursor),
			q("scope", "account", "limit", "2", "order", "desc", "cursor", *asc.NextCursor),
			q("scope", "account", "limit", "2", "cursor", (*desc.NextCursor)[1:]),
		} {
			wantErr(t, do(t, "GET", g.URL+"/v1/logs?"+qs, bearer(r), ""), 400, "invalid_request", "invalid_request_error")
		}
	})

	t.Run("include", func(t *testing.T) {
		r := rd.next()
		base := []string{"scope", "account", "key_id", w1ID, "limit", "2"}
		def := getLogs(t, g, r, q(base...))
		if _, ok := def.Data[0]["attempts"].([]any); !ok || def.InFlight != nil {
			t.Fatalf("default include: attempts %v, in_flight %v", def.Data[0]["attempts"], def.InFlight)
		}
		none := getLogs(t, g, r, q(append(slices.Clone(base), "include", "none")...))
		if _, ok := none.Data[0]["attempts"]; ok || none.InFlight != nil {
			t.Fatalf("include=none: %v", none.Data[0])
		}
		inf := getLogs(t, g, r, q(append(slices.Clone(base), "include", "in_flight")...))
		if _, ok := inf.Data[0]["attempts"]; ok || inf.InFlight == nil || len(*inf.InFlight) != 0 {
			t.Fatalf("include=in_flight first page: in_flight %v, row %v", inf.InFlight, inf.Data[0])
		}
		next := getLogs(t, g, r, q("scope", "account", "key_id", w1ID, "limit", "2", "include", "in_flight,attempts", "cursor", *inf.NextCursor))
		if _, ok := next.Data[0]["attempts"].([]any); !ok || next.InFlight != nil {
			t.Fatalf("include=in_flight,attempts later page: in_flight %v", next.InFlight)
		}
		wantErr(t, do(t, "GET", g.URL+"/v1/logs?include=attempts,bogus", bearer(r), ""), 400, "invalid_request", "invalid_request_error")
	})

	t.Run("GET /v1/logs/{id}", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/logs/"+idStr(errID), bearer(w1), "")
		if c.Status != 200 {
			t.Fatalf("own row: %d %s", c.Status, c.Body)
		}
		m := c.json(t)
		if m["id"] != float64(errID) {
			t.Fatalf("id %v", m["id"])
		}
		for _, group := range []string{"request", "upstream", "gateway"} {
			items, ok := m[group].([]any)
			if !ok {
				t.Fatalf("%s is not an array: %s", group, c.Body)
			}
			for _, it := range items {
				kv := it.(map[string]any)
				if _, ok := kv["k"].(string); !ok {
					t.Fatalf("%s item %v", group, kv)
				}
				if _, ok := kv["v"].(string); !ok {
					t.Fatalf("%s item %v", group, kv)
				}
			}
		}
		for _, f := range []string{"kind", "request_note"} {
			if _, ok := m[f]; !ok {
				t.Fatalf("%s missing: %s", f, c.Body)
			}
		}
		// Another key's row without account scope, another account's
		// reader, an unknown id, a non-number: 404 log_not_found.
		for _, tc := range []struct{ key, path string }{
			{w2, "/v1/logs/" + idStr(errID)},
			{foreign, "/v1/logs/" + idStr(errID) + "?scope=account"},
			{w1, "/v1/logs/999999999"},
			{w1, "/v1/logs/abc"},
		} {
			wantErr(t, do(t, "GET", g.URL+tc.path, bearer(tc.key), ""), 404, "log_not_found", "invalid_request_error")
		}
		if c := do(t, "GET", g.URL+"/v1/logs/"+idStr(errID)+"?scope=account", bearer(rd.next()), ""); c.Status != 200 {
			t.Fatalf("account scope reads another key's row: %d %s", c.Status, c.Body)
		}
		wantErr(t, do(t, "GET", g.URL+"/v1/logs/"+idStr(errID)+"?scope=account", bearer(w2), ""), 403, "permission_denied", "permission_error")
	})

	t.Run("x-api-key works as Bearer does", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/logs", map[string]string{"x-api-key": w2}, "")
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		wantErr(t, do(t, "GET", g.URL+"/v1/logs", nil, ""), 401, "invalid_api_key", "authentication_error")
	})
}
