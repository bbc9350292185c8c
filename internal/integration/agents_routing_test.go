package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// msgBody is a minimal messages request.
func msgBody(model, prompt, extra string) string {
	s := `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":` + strings.TrimSpace(mustJSON(prompt)) + `}]`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// Issue 6, point 1: what Claude Code's routing needs.
func TestAgentsRouting(t *testing.T) {
	t.Parallel()
	g, up := startAgents(t, "")

	t.Run("query string ignored on /v1/messages", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := do(t, "POST", g.URL+"/v1/messages?beta=true", msgHeaders(w.key), msgBody("ag-claude", "Hello", ""))
		if c.Status != 200 {
			t.Fatalf("status %d: %s", c.Status, c.Body)
		}
		if m := c.json(t); m["type"] != "message" {
			t.Fatalf("not a message: %s", c.Body)
		}
		w.settled(t, 1)
	})

	t.Run("count_tokens forwarded to a native channel and free", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		before := callsTo(up, "/v1/messages/count_tokens")
		body := msgBody("ag-claude", "How many tokens is this prompt?", `"system":"be brief"`)
		for _, h := range []map[string]string{msgHeaders(w.key), {"Authorization": "Bearer " + w.key, "anthropic-version": "2023-06-01"}} {
			c := do(t, "POST", g.URL+"/v1/messages/count_tokens", h, body)
			if c.Status != 200 {
				t.Fatalf("status %d: %s", c.Status, c.Body)
			}
			if n, _ := c.json(t)["input_tokens"].(float64); n <= 0 {
				t.Fatalf("input_tokens: %s", c.Body)
			}
		}
		if got := callsTo(up, "/v1/messages/count_tokens") - before; got < 2 {
			t.Fatalf("the upstream saw %d count_tokens calls, want 2", got)
		}
		sent := lastTo(t, up, "/v1/messages/count_tokens")
		if m := decode(t, sent.Body); m["model"] != "ag-claude" || sent.Header.Get("X-Api-Key") != upstreamKey {
			t.Fatalf("upstream count_tokens: %s %v", sent.Body, sent.Header)
		}
		checkFree(t, w)
	})

	t.Run("count_tokens estimated without a native channel", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		before := len(up.requests())
		prompt := strings.Repeat("word ", 400)
		c := do(t, "POST", g.URL+"/v1/messages/count_tokens", msgHeaders(w.key), msgBody("ag-chat", prompt, ""))
		if c.Status != 200 {
			t.Fatalf("status %d: %s", c.Status, c.Body)
		}
		n, _ := c.json(t)["input_tokens"].(float64)
		if n < 400 || n > 1000 {
			t.Fatalf("estimate %v for a 2000-byte prompt (bytes/4 wanted): %s", n, c.Body)
		}
		for _, r := range up.requests()[before:] {
			if strings.Contains(string(r.Body), "word word word") {
				t.Fatalf("the estimate called the upstream: %s %s", r.Method, r.Path)
			}
		}
		checkFree(t, w)
	})

	t.Run("count_tokens needs the same auth", func(t *testing.T) {
		t.Parallel()
		c := do(t, "POST", g.URL+"/v1/messages/count_tokens", msgHeaders("sk-tollgate-nope"), msgBody("ag-claude", "hi", ""))
		if c.Status != 401 {
			t.Fatalf("status %d, want 401: %s", c.Status, c.Body)
		}
		if m := c.json(t); m["type"] != "error" {
			t.Fatalf("not the messages error shape: %s", c.Body)
		}
	})

	t.Run("chat body of 20 MB accepted", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		big := strings.Repeat("abcdefghij ", 20<<20/11)
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("ag-gpt", big+" [sim:words=3]", ""))
		if c.Status != 200 {
			t.Fatalf("status %d: %.300s", c.Status, c.Body)
		}
		w.settled(t, 1)
	})

	for _, tc := range []struct {
		name, path string
		headers    func(key string) map[string]string
		body       func(pad string) string
		check      func(t *testing.T, c call)
	}{
		{"completions", "/v1/chat/completions", bearer,
			func(pad string) string { return chatBody("ag-gpt", pad, "") },
			func(t *testing.T, c call) {
				if code, _, _ := c.errorOf(t); code == "" {
					t.Fatalf("no error code: %s", c.Body)
				}
			}},
		{"messages", "/v1/messages", msgHeaders,
			func(pad string) string { return msgBody("ag-claude", pad, "") },
			func(t *testing.T, c call) {
				m := c.json(t)
				e, _ := m["error"].(map[string]any)
				if m["type"] != "error" || e == nil || e["type"] == "" {
					t.Fatalf("not the messages error shape: %s", c.Body)
				}
			}},
	} {
		t.Run("chat body over 32 MB is 413 in the "+tc.name+" shape", func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			body := tc.body(strings.Repeat("x", 33<<20))
			req, _ := http.NewRequest("POST", g.URL+tc.path, bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.headers(w.key) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 413 {
				t.Fatalf("status %d, want 413: %.300s", resp.StatusCode, b)
			}
			tc.check(t, call{Status: resp.StatusCode, Header: resp.Header, Body: b})
			// Refused, not billed, but logged: the key was known.
			bal, held := w.g.Balance(w.acct)
			if bal != signupCredit || held != "0" {
				t.Fatalf("balance %s held %s, want %s and 0", bal, held, signupCredit)
			}
			row := w.last(t, 1)
			if row["status"] != "rejected" || row["cost"] != "0" || row["error_code"] != "invalid_request" ||
				row["request_id"] != resp.Header.Get("x-gateway-trace") {
				t.Fatalf("row %v, want a rejected invalid_request row of cost 0 for this request", row)
			}
		})
	}
}

// HEAD / answers 200 and is neither billed nor rate-limited.
func TestAgentsHeadRoot(t *testing.T) {
	t.Parallel()
	g, _ := startAgents(t, "\nlimits {\n  rpm = 1\n}\n")
	w := newWallet(g)
	for i := 0; i < 5; i++ {
		for _, h := range []map[string]string{nil, bearer(w.key)} {
			c := do(t, "HEAD", g.URL+"/", h, "")
			if c.Status != 200 {
				t.Fatalf("HEAD / #%d: %d", i, c.Status)
			}
		}
	}
	checkFree(t, w)
	c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("ag-gpt", "Hello", ""))
	if c.Status != 200 {
		t.Fatalf("the first chat call after HEADs: %d %s", c.Status, c.Body)
	}
	// The limit is live: the second call in the minute is refused.
	c = do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("ag-gpt", "Hello", ""))
	if c.Status != 429 {
		t.Fatalf("the second chat call: %d, want 429 (rpm = 1): %s", c.Status, c.Body)
	}
}

// checkFree checks a wallet that made only free calls: full balance, no
// hold, no row.
func checkFree(t *testing.T, w wallet) {
	t.Helper()
	bal, held := w.g.Balance(w.acct)
	if bal != signupCredit || held != "0" {
		t.Fatalf("balance %s held %s, want %s and 0", bal, held, signupCredit)
	}
	if rows := logsOf(t, w.g, w.key); len(rows) != 0 {
		t.Fatalf("%d rows for free calls: %v", len(rows), rows)
	}
}
