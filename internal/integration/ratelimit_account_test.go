package integration

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

const limitsConfig = `
server {
  allow_private_urls = true
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat", "anthropic_messages"]
  models    = ["limit-chat"]
}
model "limit-chat" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
limits {
  rpm         = 5
  concurrency = 2
}
`

// checkLimitHeaders checks the x-ratelimit-* headers of an account-limit
// refusal and returns Retry-After in seconds.
func checkLimitHeaders(t *testing.T, c call, limit string) int {
	t.Helper()
	ra, err := strconv.Atoi(c.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 61 {
		t.Fatalf("Retry-After %q", c.Header.Get("Retry-After"))
	}
	if c.Header.Get("x-ratelimit-limit") != limit || c.Header.Get("x-ratelimit-remaining") != "0" ||
		c.Header.Get("x-ratelimit-reset") != c.Header.Get("Retry-After") {
		t.Fatalf("headers: limit %q remaining %q reset %q retry-after %q", c.Header.Get("x-ratelimit-limit"),
			c.Header.Get("x-ratelimit-remaining"), c.Header.Get("x-ratelimit-reset"), c.Header.Get("Retry-After"))
	}
	return ra
}

// TestAccountRateLimits runs `limits { rpm = 5 concurrency = 2 }` on the
// real binary. The minute is a real 60-second sliding window; instead of
// waiting for it to slide, the test checks that Retry-After and
// x-ratelimit-reset name the instant the oldest request leaves it.
func TestAccountRateLimits(t *testing.T) {
	t.Parallel() // it waits out a minute's window
	g := startGateway(t, testgw.Options{Config: limitsConfig})
	chat := func(key, prompt string) call {
		return do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("limit-chat", prompt, ""))
	}

	t.Run("requests per minute across two keys of one account", func(t *testing.T) {
		acct := g.Account("")
		_, k1 := g.Key(acct, nil)
		_, k2 := g.Key(acct, nil)
		before1 := time.Now()
		if c := chat(k1, "first"); c.Status != 200 {
			t.Fatalf("first: %d %s", c.Status, c.Body)
		}
		after1 := time.Now()
		// The other four arrive 2 s later, so a window that slides frees
		// the first slot 2 s before the others.
		time.Sleep(2100 * time.Millisecond)
		for i, k := range []string{k1, k2, k1, k2} {
			if c := chat(k, "within the limit"); c.Status != 200 {
				t.Fatalf("request %d: %d %s", i+2, c.Status, c.Body)
			}
		}
		before6 := time.Now()
		c := chat(k2, "one too many")
		after6 := time.Now()
		msg := wantErr(t, c, 429, "rate_limit_exceeded", "rate_limit_error")
		if !strings.Contains(msg, "requests per minute") {
			t.Fatalf("message %q does not name the dimension", msg)
		}
		ra := checkLimitHeaders(t, c, "5")
		// The first request's one-second bucket leaves the window 61
		// buckets after it began (see core/ratelimit): that is Retry-After.
		lo := int(math.Ceil(float64(before1.Unix()+61) - float64(after6.UnixNano())/1e9))
		hi := int(math.Ceil(float64(after1.Unix()+61) - float64(before6.UnixNano())/1e9))
		if ra < lo || ra > hi || ra > 59 {
			t.Fatalf("Retry-After %d, want %d..%d (the first request's slot)", ra, lo, hi)
		}

		t.Run("messages shape on /v1/messages", func(t *testing.T) {
			c := do(t, "POST", g.URL+"/v1/messages", map[string]string{"x-api-key": k1, "anthropic-version": "2023-06-01"},
				`{"model":"limit-chat","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`)
			m := c.json(t)
			e, _ := m["error"].(map[string]any)
			if c.Status != 429 || m["type"] != "error" || e == nil || e["type"] != "rate_limit_error" ||
				!strings.Contains(e["message"].(string), "requests per minute") {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
			checkLimitHeaders(t, c, "5")
		})
		t.Run("the logs API does not count against it", func(t *testing.T) {
			if c := do(t, "GET", g.URL+"/v1/logs", bearer(k1), ""); c.Status != 200 || c.Header.Get("x-ratelimit-limit") != "60" {
				t.Fatalf("%d %v", c.Status, c.Header)
			}
		})
		t.Run("another account is not affected", func(t *testing.T) {
			_, other := g.Key(g.Account(""), nil)
			if c := chat(other, "independent"); c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
		})
		t.Run("released when the window slides past the first request", func(t *testing.T) {
			time.Sleep(time.Until(after6.Add(time.Duration(ra) * time.Second)))
			if c := chat(k1, "the first slot is free again"); c.Status != 200 {
				t.Fatalf("after Retry-After: %d %s", c.Status, c.Body)
			}
			// The other four are still in the window, 2 s younger.
			c := chat(k2, "but only that one")
			wantErr(t, c, 429, "rate_limit_exceeded", "rate_limit_error")
			if ra := checkLimitHeaders(t, c, "5"); ra < 1 || ra > 3 {
				t.Fatalf("Retry-After %d, want about the 2 s between the first request and the others", ra)
			}
		})
	})

	t.Run("concurrency", func(t *testing.T) {
		acct := g.Account("")
		_, k := g.Key(acct, nil)
		var wg sync.WaitGroup
		slow := make([]call, 2)
		for i := range slow {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slow[i] = chat(k, "take your time [sim:latency=1s]")
			}()
		}
		time.Sleep(400 * time.Millisecond) // both are in flight at the sim
		c := chat(k, "a third at once [sim:latency=1s]")
		msg := wantErr(t, c, 429, "rate_limit_exceeded", "rate_limit_error")
		if !strings.Contains(msg, "concurrency") {
			t.Fatalf("message %q does not name concurrency", msg)
		}
		if ra := checkLimitHeaders(t, c, "2"); ra != 1 {
			t.Fatalf("Retry-After %d, want 1", ra)
		}
		wg.Wait()
		for i, s := range slow {
			if s.Status != 200 {
				t.Fatalf("slow request %d: %d %s", i, s.Status, s.Body)
			}
		}
		if c := chat(k, "after they finished"); c.Status != 200 {
			t.Fatalf("slots not released: %d %s", c.Status, c.Body)
		}
	})

	t.Run("per-account override", func(t *testing.T) {
		acct := g.Account("")
		_, k := g.Key(acct, nil)
		if st := g.Admin("PATCH", "/accounts/"+acct, map[string]any{"rpm": 2}, nil); st != 200 {
			t.Fatalf("PATCH rpm: %d", st)
		}
		for i := 0; i < 2; i++ {
			if c := chat(k, "under the override"); c.Status != 200 {
				t.Fatalf("request %d: %d %s", i+1, c.Status, c.Body)
			}
		}
		c := chat(k, "over the override")
		if msg := wantErr(t, c, 429, "rate_limit_exceeded", "rate_limit_error"); !strings.Contains(msg, "requests per minute") {
			t.Fatalf("message %q", msg)
		}
		checkLimitHeaders(t, c, "2")

		// A concurrency override of 1 refuses a second request in flight.
		acct2 := g.Account("")
		_, k2 := g.Key(acct2, nil)
		if st := g.Admin("PATCH", "/accounts/"+acct2, map[string]any{"concurrency": 1}, nil); st != 200 {
			t.Fatalf("PATCH concurrency: %d", st)
		}
		done := make(chan call)
		go func() { done <- chat(k2, "slow [sim:latency=1s]") }()
		time.Sleep(400 * time.Millisecond)
		c = chat(k2, "second in flight")
		wantErr(t, c, 429, "rate_limit_exceeded", "rate_limit_error")
		checkLimitHeaders(t, c, "1")
		if s := <-done; s.Status != 200 {
			t.Fatalf("slow: %d %s", s.Status, s.Body)
		}
	})
}
