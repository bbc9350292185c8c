package integration

import (
	"strconv"
	"testing"
	"time"
)

// TestLogsRateLimit: 60 logs requests per minute per key, shared by the
// logs endpoints; the 61st is 429 logs_rate_limited with Retry-After and
// x-ratelimit-*; another key, and the key's inference calls, are untouched.
func TestLogsRateLimit(t *testing.T) {
	g, acct, key := startDefault(t)
	_, other := g.Key(acct, nil)
	trace := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "one row", "")).Header.Get("x-gateway-trace")
	if p := getLogs(t, g, other, ""); len(p.Data) != 0 { // spends one of other's 60
		t.Fatalf("other key sees %d rows", len(p.Data))
	}
	row := logsOf(t, g, key)[0] // request 1 of key's window
	if row["request_id"] != trace {
		t.Fatalf("row %v", row)
	}
	rowPath := "/v1/logs/" + idStr(uint64(row["id"].(float64)))

	// The window is a fixed minute: start the 60 requests early in one.
	c := do(t, "GET", g.URL+rowPath, bearer(key), "") // request 2
	reset, err := strconv.Atoi(c.Header.Get("x-ratelimit-reset"))
	if err != nil || reset < 1 || reset > 60 {
		t.Fatalf("x-ratelimit-reset %q", c.Header.Get("x-ratelimit-reset"))
	}
	used, otherRemaining := 2, "58"
	if reset < 20 {
		time.Sleep(time.Duration(reset)*time.Second + 200*time.Millisecond)
		used, otherRemaining = 0, "59" // a new window for both keys
	}
	paths := []string{"/v1/logs", "/v1/logs/summary", "/v1/logs/export.csv", rowPath, "/v1/logs?status=failed"}
	for i := used; i < 60; i++ {
		c := do(t, "GET", g.URL+paths[i%len(paths)], bearer(key), "")
		if c.Status == 429 {
			t.Fatalf("request %d refused: %s", i+1, c.Body)
		}
		if c.Header.Get("x-ratelimit-limit") != "60" || c.Header.Get("x-ratelimit-remaining") != strconv.Itoa(59-i) ||
			c.Header.Get("x-ratelimit-reset") == "" {
			t.Fatalf("request %d: limit %q remaining %q reset %q", i+1, c.Header.Get("x-ratelimit-limit"),
				c.Header.Get("x-ratelimit-remaining"), c.Header.Get("x-ratelimit-reset"))
		}
	}
	for _, p := range paths {
		c := do(t, "GET", g.URL+p, bearer(key), "")
		msg := wantErr(t, c, 429, "logs_rate_limited", "rate_limit_error")
		ra, err := strconv.Atoi(c.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 || c.Header.Get("x-ratelimit-remaining") != "0" ||
			c.Header.Get("x-ratelimit-limit") != "60" || c.Header.Get("x-ratelimit-reset") != c.Header.Get("Retry-After") {
			t.Fatalf("%s: headers %v", p, c.Header)
		}
		if msg == "" {
			t.Fatal("empty message")
		}
	}
	t.Run("per key", func(t *testing.T) {
		if c := do(t, "GET", g.URL+"/v1/logs", bearer(other), ""); c.Status != 200 || c.Header.Get("x-ratelimit-remaining") != otherRemaining {
			t.Fatalf("another key: %d remaining %q", c.Status, c.Header.Get("x-ratelimit-remaining"))
		}
	})
	t.Run("inference is not limited by the logs limit", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "still works", ""))
			if c.Status != 200 {
				t.Fatalf("chat after the logs limit: %d %s", c.Status, c.Body)
			}
		}
		if c := do(t, "GET", g.URL+"/v1/key/balance", bearer(key), ""); c.Status != 200 {
			t.Fatalf("balance after the logs limit: %d %s", c.Status, c.Body)
		}
	})
}
