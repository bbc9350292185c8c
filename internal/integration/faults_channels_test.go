package integration

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// channelBlock is an openai channel at url serving models at a priority.
func channelBlock(name, url string, priority int, models ...string) string {
	return `
channel "` + name + `" {
  vendor    = "openai"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat"]
  models    = ["` + strings.Join(models, `", "`) + `"]
  priority  = ` + itoa(priority) + `
}
`
}

func modelBlock(id string) string {
	return `
model "` + id + `" {
  price {
    input  = "1"
    output = "2"
  }
}
`
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Channel failover before the first byte: a failing channel of higher
// priority is tried, recorded as an attempt (neither billed nor a row of its
// own), and the healthy one serves; when every channel fails, the last
// upstream status passes through; after three failures the breaker skips
// the failing channel.
func TestFaultsChannelFailover(t *testing.T) {
	t.Parallel()
	good := startUpstream(t, sim.Knobs{})
	bad500 := startUpstream(t, sim.Knobs{ErrorStatus: 500})
	bad429 := startUpstream(t, sim.Knobs{ErrorStatus: 429})
	closed := closedURL(t)
	cfg := channelBlock("good", good.URL, 5, "fo-500", "fo-closed", "fo-429") +
		channelBlock("bad-500", bad500.URL, 10, "fo-500") +
		channelBlock("bad-closed", closed, 10, "fo-closed") +
		channelBlock("bad-429", bad429.URL, 10, "fo-429") +
		channelBlock("all-429-a", bad429.URL, 10, "all-429") +
		channelBlock("all-429-b", bad429.URL, 5, "all-429") +
		channelBlock("all-500-a", bad500.URL, 10, "all-500") +
		channelBlock("all-500-b", bad500.URL, 5, "all-500") +
		channelBlock("brk-bad", bad500.URL, 10, "brk") +
		channelBlock("brk-good", good.URL, 5, "brk") +
		channelBlock("mixed-closed", closed, 10, "mixed") +
		channelBlock("mixed-good", good.URL, 5, "mixed")
	for _, m := range []string{"fo-500", "fo-closed", "fo-429", "all-429", "all-500", "brk", "mixed"} {
		cfg += modelBlock(m)
	}
	g := startGateway(t, testgw.Options{Config: cfg})

	failover := []struct {
		model, attemptCode string
	}{
		{"fo-500", "upstream_error"},
		{"fo-closed", "upstream_unreachable"},
		{"fo-429", "rate_limit_exceeded"},
	}
	for _, c := range failover {
		for _, stream := range []bool{false, true} {
			name := c.model + "/non-streaming"
			if stream {
				name = c.model + "/streaming"
			}
			t.Run("failover/"+name, func(t *testing.T) {
				t.Parallel()
				w := newWallet(g)
				if stream {
					status, _, evs, err := rawStream(t, g.URL+"/v1/chat/completions", bearer(w.key),
						chatBody(c.model, "fail over please", `"stream":true`))
					if err != nil || status != 200 || !hasDone(evs) {
						t.Fatalf("%d %v, %d events, done %v", status, err, len(evs), hasDone(evs))
					}
				} else {
					r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody(c.model, "fail over please", ""))
					if r.Status != 200 {
						t.Fatalf("%d %s", r.Status, r.Body)
					}
				}
				row := w.last(t, 1)
				checkRow(t, row, rowWant{status: "success", attempts: 2, failed: 1, billed: true})
				att := row["attempts"].([]any)[0].(map[string]any)
				if str(att["error_code"]) != c.attemptCode || num(att["seq"]) != 1 {
					t.Errorf("attempt %v, want error_code %s seq 1", att, c.attemptCode)
				}
				w.settled(t, 1)
				// The failed attempt is no request of the summary and no
				// error of its status_counts.
				s := do(t, "GET", g.URL+"/v1/logs/summary?period=today", bearer(w.key), "")
				if gjson.GetBytes(s.Body, "total.requests").Int() != 1 || gjson.GetBytes(s.Body, "status_counts.success").Int() != 1 ||
					gjson.GetBytes(s.Body, "status_counts.error").Int() != 0 || gjson.GetBytes(s.Body, "by_model.0.requests").Int() != 1 {
					t.Errorf("summary after a failover: %s", s.Body)
				}
				if p := getLogs(t, g, w.key, q("status", "error")); len(p.Data) != 0 {
					t.Errorf("status=error lists %d rows after a failover", len(p.Data))
				}
			})
		}
	}

	allFail := []struct {
		model, code, typ string
		status           int
	}{
		{"all-429", "rate_limit_exceeded", "rate_limit_error", 429},
		{"all-500", "upstream_error", "api_error", 500},
	}
	for _, c := range allFail {
		t.Run("all channels fail/"+c.model, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody(c.model, "nobody answers", ""))
			code, typ, _ := r.errorOf(t)
			if r.Status != c.status || code != c.code || typ != c.typ {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
					t.Errorf("an upstream %d leaked %s: %v", c.status, k, r.Header)
				}
			}
			row := w.last(t, 1)
			checkRow(t, row, rowWant{status: "error", code: c.code, attempts: 2, failed: 2})
			w.settled(t, 1)
		})
	}

	// A failover whose last channel answers with a final 4xx: both upstream
	// calls count, the first is listed as an attempt.
	t.Run("failover ending in an upstream 400", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("mixed", "refuse me [sim:error=400]", ""))
		if code, typ, _ := r.errorOf(t); r.Status != 400 || code != "invalid_request" || typ != "invalid_request_error" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		row := w.last(t, 1)
		checkRow(t, row, rowWant{status: "error", code: "invalid_request", attempts: 2, failed: 1})
		w.settled(t, 1)
	})

	// Sequential on purpose: the breaker counts consecutive failures.
	t.Run("circuit breaker skips a failing channel after three failures", func(t *testing.T) {
		w := newWallet(g)
		for i := 1; i <= 4; i++ {
			// The parallel cases wait until this one is done: the count is ours.
			badCalls := len(bad500.requests())
			r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("brk", "call "+itoa(i), ""))
			if r.Status != 200 {
				t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
			}
			row := w.last(t, i)
			if i <= 3 {
				checkRow(t, row, rowWant{status: "success", attempts: 2, failed: 1, billed: true})
			} else {
				checkRow(t, row, rowWant{status: "success", attempts: 1, failed: 0, billed: true})
				if n := len(bad500.requests()); n != badCalls {
					t.Errorf("the open breaker let %d calls reach the failing upstream", n-badCalls)
				}
			}
		}
		w.settled(t, 4)
	})

	// The failing upstreams were really called: the attempts are real.
	t.Cleanup(func() {
		if len(bad500.requests()) == 0 || len(bad429.requests()) == 0 {
			t.Errorf("the failing upstreams saw %d and %d calls", len(bad500.requests()), len(bad429.requests()))
		}
	})
}
