package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

func TestAuthentication(t *testing.T) {
	g, acct, key := startDefault(t)
	chat := g.URL + "/v1/chat/completions"
	body := chatBody("sim-chat", "hi", "")
	wellFormedUnknown := "sk-tollgate-" + strings.Repeat("ab", 32)

	t.Run("four key forms are accepted", func(t *testing.T) {
		forms := []struct {
			desc    string
			headers map[string]string
			query   string
		}{
			{"x-api-key", map[string]string{"x-api-key": key}, ""},
			{"alternate header", map[string]string{"x-tollgate-api-key": key}, ""},
			{"key query parameter", nil, "?key=" + key},
			{"Authorization Bearer", bearer(key), ""},
		}
		for _, f := range forms {
			t.Run(f.desc, func(t *testing.T) {
				c := do(t, "POST", chat+f.query, f.headers, body)
				if c.Status != 200 {
					t.Fatalf("status %d: %s", c.Status, c.Body)
				}
			})
		}
	})

	t.Run("lookup order: x-api-key before Bearer", func(t *testing.T) {
		c := do(t, "POST", chat, map[string]string{"x-api-key": wellFormedUnknown, "Authorization": "Bearer " + key}, body)
		if _, _, msg := c.errorOf(t); c.Status != 401 || msg != "authentication failed: invalid api key" {
			t.Fatalf("want the x-api-key to be used: %d %s", c.Status, c.Body)
		}
	})

	t.Run("lookup order: alternate header before query before Bearer", func(t *testing.T) {
		c := do(t, "POST", chat+"?key="+key, map[string]string{"x-tollgate-api-key": wellFormedUnknown}, body)
		if c.Status != 401 {
			t.Fatalf("alternate header not preferred over query: %d", c.Status)
		}
		c = do(t, "POST", chat+"?key="+wellFormedUnknown, bearer(key), body)
		if c.Status != 401 {
			t.Fatalf("query not preferred over Bearer: %d", c.Status)
		}
	})

	t.Run("an empty form counts as absent", func(t *testing.T) {
		c := do(t, "POST", chat, map[string]string{"x-api-key": "", "Authorization": "Bearer " + key}, body)
		if c.Status != 200 {
			t.Fatalf("status %d: %s", c.Status, c.Body)
		}
	})

	expectMsg := func(t *testing.T, c call, want string) {
		t.Helper()
		code, typ, msg := c.errorOf(t)
		if c.Status != 401 || code != "invalid_api_key" || typ != "authentication_error" || !strings.HasPrefix(msg, want) {
			t.Fatalf("got %d %s/%s %q, want 401 invalid_api_key %q", c.Status, code, typ, msg, want)
		}
		if c.Header.Get("x-gateway-trace") == "" {
			t.Fatal("no x-gateway-trace on a 401")
		}
	}

	t.Run("missing key", func(t *testing.T) {
		expectMsg(t, do(t, "POST", chat, nil, body), "authentication failed: missing or malformed api key (")
	})
	t.Run("malformed key", func(t *testing.T) {
		expectMsg(t, do(t, "POST", chat, bearer("sk-tollgate-short"), body), "authentication failed: missing or malformed api key (")
		expectMsg(t, do(t, "POST", chat, bearer(strings.ToUpper(key)), body), "authentication failed: missing or malformed api key (")
	})
	t.Run("invalid key", func(t *testing.T) {
		expectMsg(t, do(t, "POST", chat, bearer(wellFormedUnknown), body), "authentication failed: invalid api key")
	})
	t.Run("revoked key", func(t *testing.T) {
		id, k := g.Key(acct, nil)
		g.Admin("PATCH", "/keys/"+id, map[string]any{"enabled": false}, nil)
		expectMsg(t, do(t, "POST", chat, bearer(k), body), "authentication failed: api key revoked")
	})
	t.Run("deleted key is invalid", func(t *testing.T) {
		id, k := g.Key(acct, nil)
		g.Admin("DELETE", "/keys/"+id, nil, nil)
		expectMsg(t, do(t, "POST", chat, bearer(k), body), "authentication failed: invalid api key")
	})
	t.Run("expired key", func(t *testing.T) {
		_, k := g.Key(acct, map[string]any{"expires_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
		expectMsg(t, do(t, "POST", chat, bearer(k), body), "authentication failed: api key expired")
	})
	t.Run("key not yet expired", func(t *testing.T) {
		_, k := g.Key(acct, map[string]any{"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		if c := do(t, "POST", chat, bearer(k), body); c.Status != 200 {
			t.Fatalf("status %d", c.Status)
		}
	})
	t.Run("disabled account", func(t *testing.T) {
		other := g.Account("")
		_, k := g.Key(other, nil)
		g.Admin("PATCH", "/accounts/"+other, map[string]any{"status": "disabled"}, nil)
		expectMsg(t, do(t, "POST", chat, bearer(k), body), "authentication failed: account is not active")
		g.Admin("PATCH", "/accounts/"+other, map[string]any{"status": "active"}, nil)
		if c := do(t, "POST", chat, bearer(k), body); c.Status != 200 {
			t.Fatalf("re-enabled account: %d", c.Status)
		}
	})

	t.Run("GET /v1/models accepts only Bearer and x-api-key", func(t *testing.T) {
		models := g.URL + "/v1/models"
		if c := do(t, "GET", models, bearer(key), ""); c.Status != 200 {
			t.Fatalf("bearer: %d", c.Status)
		}
		if c := do(t, "GET", models, map[string]string{"x-api-key": key}, ""); c.Status != 200 {
			t.Fatalf("x-api-key: %d", c.Status)
		}
		expectMsg(t, do(t, "GET", models+"?key="+key, nil, ""), "authentication failed: missing or malformed api key")
		expectMsg(t, do(t, "GET", models, map[string]string{"x-tollgate-api-key": key}, ""), "authentication failed: missing or malformed api key")
	})
}

func TestReveal(t *testing.T) {
	g, acct, _ := startDefault(t)
	id, raw := g.Key(acct, nil)
	var got struct{ ID, Key string }
	if st := g.Admin("GET", "/keys/"+id+"/reveal", nil, &got); st != 200 || got.Key != raw {
		t.Fatalf("reveal: %d %q, want %q", st, got.Key, raw)
	}
	var bad map[string]any
	if st := g.AdminStatus("GET", "/keys/key_missing/reveal", nil, &bad); st != 404 {
		t.Fatalf("unknown key reveal: %d", st)
	}
	req, _ := http.NewRequest("GET", g.URL+"/admin/v1/keys/"+id+"/reveal", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("wrong admin token: %d", resp.StatusCode)
	}
}

func TestQuotaAtAuthentication(t *testing.T) {
	g := startGateway(t, testgw.Options{})
	acct := g.Account("0")
	_, key := g.Key(acct, nil)

	t.Run("billed endpoint is 402 at zero balance", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", ""))
		code, typ, _ := c.errorOf(t)
		if c.Status != 402 || code != "quota_exceeded" || typ != "insufficient_quota" {
			t.Fatalf("got %d %s %s", c.Status, code, typ)
		}
	})
	t.Run("messages-style 402 is billing_error", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/messages", map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"},
			`{"model":"sim-chat","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
		m := c.json(t)
		e, _ := m["error"].(map[string]any)
		if c.Status != 402 || m["type"] != "error" || e["type"] != "billing_error" {
			t.Fatalf("got %d %s", c.Status, c.Body)
		}
	})
	t.Run("free endpoints answer at zero balance", func(t *testing.T) {
		for _, path := range []string{"/v1/models", "/v1/key/balance", "/v1/catalog"} {
			if c := do(t, "GET", g.URL+path, bearer(key), ""); c.Status != 200 {
				t.Errorf("%s: %d %s", path, c.Status, c.Body)
			}
		}
	})
	t.Run("the 402 is logged as rejected quota_exceeded", func(t *testing.T) {
		rows := logsOf(t, g, key)
		if len(rows) == 0 {
			t.Fatal("no row for the 402")
		}
		r := rows[len(rows)-1]
		if r["status"] != "rejected" || r["error_code"] != "quota_exceeded" || r["cost"] != "0" {
			t.Fatalf("row %v", r)
		}
	})
	t.Run("a negative balance is 402 too", func(t *testing.T) {
		g.Admin("POST", "/accounts/"+acct+"/credits", map[string]any{"amount": "-1", "note": "correction"}, nil)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", "")); c.Status != 402 {
			t.Fatalf("status %d", c.Status)
		}
	})
}

func TestPrechargeRefusesWhatTheBalanceCannotCover(t *testing.T) {
	g := startGateway(t, testgw.Options{})
	acct := g.Account("0.001")
	_, key := g.Key(acct, nil)
	c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", `"max_tokens":1000000`))
	code, _, msg := c.errorOf(t)
	if c.Status != 402 || code != "quota_exceeded" {
		t.Fatalf("got %d %s %s", c.Status, code, msg)
	}
	bal, held := g.Balance(acct)
	if bal != "0.001" || held != "0" {
		t.Fatalf("balance %s held %s after a refused pre-charge", bal, held)
	}
	rows := logsOf(t, g, key)
	if len(rows) != 1 || rows[0]["status"] != "rejected" || rows[0]["error_code"] != "quota_exceeded" {
		t.Fatalf("rows %v", rows)
	}
	if rows[0]["attempts_count"] != nil {
		t.Fatalf("nothing should have been sent upstream: %v", rows[0])
	}
}

// A key's last use (the console's last_used_at) follows its calls, but not
// the balance and catalog endpoints, which the spec says leave it alone.
func TestKeyLastUsed(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{})
	acct := g.Account("")
	id, key := g.Key(acct, nil)
	lastUsed := func() any {
		var v map[string]any
		if st := g.Admin("GET", "/keys/"+id, nil, &v); st != 200 {
			t.Fatalf("GET key: %d", st)
		}
		return v["last_used_at"]
	}
	if u := lastUsed(); u != nil {
		t.Fatalf("a new key has last_used_at %v", u)
	}
	for _, path := range []string{"/v1/key/balance", "/v1/catalog"} {
		if c := do(t, "GET", g.URL+path, bearer(key), ""); c.Status != 200 {
			t.Fatalf("%s: %d %s", path, c.Status, c.Body)
		}
	}
	time.Sleep(300 * time.Millisecond) // a write would be in the background
	if u := lastUsed(); u != nil {
		t.Fatalf("balance and catalog set last_used_at to %v", u)
	}
	before := time.Now().Add(-time.Second)
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", "")); c.Status != 200 {
		t.Fatalf("chat: %d %s", c.Status, c.Body)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if u, ok := lastUsed().(string); ok {
			at, err := time.Parse(time.RFC3339Nano, u)
			if err != nil || at.Before(before) || at.After(time.Now()) {
				t.Fatalf("last_used_at %q after the call at %v", u, before)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("last_used_at not set 3 s after a chat call")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
