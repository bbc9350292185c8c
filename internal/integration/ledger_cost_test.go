package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// cachedConfig prices every part apart (testPrices repeats them): plain
// input, cached input, cache writes, output.
func cachedConfig(url string) string {
	return `
channel "cache-anthropic" {
  vendor    = "anthropic"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["anthropic_messages"]
  models    = ["cache-claude"]
}
channel "cache-openai" {
  vendor    = "openai"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat", "openai_responses"]
  models    = ["cache-gpt"]
}
model "cache-claude" {
  translate_from = ["openai_chat", "openai_responses", "gemini_native"]
  price {
    input        = "2"
    output       = "8"
    cached_input = "0.2"
    cache_write  = "2.5"
  }
}
model "cache-gpt" {
  price {
    input        = "2"
    output       = "8"
    cached_input = "0.5"
  }
}
`
}

// Each part of a price is billed at its own rate, to the nano, written
// out by hand here from the usage the client saw: cached input at
// cached_input, cache writes at cache_write, the rest of the input at
// input, output at output; the same calls translated and streamed are
// checked by the settlement helper against what the upstream reported.
func TestExactCostOfEachPricePart(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: cachedConfig(up.URL)})
	// Nano per token: 2 per million is 2000, and so on.
	const claudeIn, claudeCached, claudeWrite, claudeOut = 2000, 200, 2500, 8000
	const gptIn, gptCached, gptOut = 2000, 500, 8000

	for _, stream := range []bool{false, true} {
		mode := map[bool]string{false: "non-streaming", true: "streaming"}[stream]
		t.Run("messages: read, written and plain input/"+mode, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			body := `{"model":"cache-claude","max_tokens":100,"stream":` + map[bool]string{false: "false", true: "true"}[stream] +
				`,"messages":[{"role":"user","content":"a cached prompt [sim:cached=6,written=9]"}]}`
			var u gjson.Result
			if stream {
				st, _, evs, err := rawStream(t, g.URL+"/v1/messages", msgHeaders(w.key), body)
				if st != 200 || err != nil || len(evs) < 2 {
					t.Fatalf("%d %v", st, err)
				}
				// message_start has the input; message_delta the output.
				u = gjson.ParseBytes(evs[0].Data).Get("message.usage")
				out := gjson.ParseBytes(evs[len(evs)-2].Data).Get("usage.output_tokens")
				u = gjson.Parse(`{"input_tokens":` + u.Get("input_tokens").Raw + `,"cache_read_input_tokens":` +
					u.Get("cache_read_input_tokens").Raw + `,"cache_creation_input_tokens":` +
					u.Get("cache_creation_input_tokens").Raw + `,"output_tokens":` + out.Raw + `}`)
			} else {
				c := do(t, "POST", g.URL+"/v1/messages", msgHeaders(w.key), body)
				if c.Status != 200 {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
				u = gjson.GetBytes(c.Body, "usage")
			}
			if u.Get("cache_read_input_tokens").Int() != 6 || u.Get("cache_creation_input_tokens").Int() != 9 {
				t.Fatalf("usage %s", u.Raw)
			}
			want := money.Nano(u.Get("input_tokens").Int()*claudeIn + 6*claudeCached + 9*claudeWrite + u.Get("output_tokens").Int()*claudeOut)
			if got := checkCost(t, w.last(t, 1)); got != want {
				t.Fatalf("cost %s, want %s for usage %s", got, want, u.Raw)
			}
			w.settled(t, 1)
		})
		t.Run("completions: cached and plain input/"+mode, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			var u gjson.Result
			if stream {
				st, _, evs, err := rawStream(t, g.URL+"/v1/chat/completions", bearer(w.key),
					chatBody("cache-gpt", "a cached prompt [sim:cached=6]", `"stream":true,"stream_options":{"include_usage":true}`))
				if st != 200 || err != nil || len(evs) < 2 {
					t.Fatalf("%d %v", st, err)
				}
				u = gjson.ParseBytes(evs[len(evs)-2].Data).Get("usage")
			} else {
				c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("cache-gpt", "a cached prompt [sim:cached=6]", ""))
				if c.Status != 200 {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
				u = gjson.GetBytes(c.Body, "usage")
			}
			if u.Get("prompt_tokens_details.cached_tokens").Int() != 6 {
				t.Fatalf("usage %s", u.Raw)
			}
			want := money.Nano((u.Get("prompt_tokens").Int()-6)*gptIn + 6*gptCached + u.Get("completion_tokens").Int()*gptOut)
			if got := checkCost(t, w.last(t, 1)); got != want {
				t.Fatalf("cost %s, want %s for usage %s", got, want, u.Raw)
			}
			w.settled(t, 1)
		})
		// Translated: the client's shape has no cache writes; the bill
		// still has them, from what the upstream reported.
		t.Run("completions translated to messages, with cache writes/"+mode, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			extra := ""
			if stream {
				extra = `"stream":true,"stream_options":{"include_usage":true}`
			}
			body := chatBody("cache-claude", "translate me [sim:cached=4,written=5]", extra)
			if c := post(t, g.URL+"/v1/chat/completions", bearer(w.key), body, stream); c.Status != 200 || c.Header.Get("X-Protocol-Translation") == "" {
				t.Fatalf("%d %v %s", c.Status, c.Header, c.Body)
			}
			w.settled(t, 1)
		})
		t.Run("responses, cached input/"+mode, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			body := `{"model":"cache-gpt","input":"a cached prompt [sim:cached=6]","stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			if c := post(t, g.URL+"/v1/responses", bearer(w.key), body, stream); c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
			w.settled(t, 1)
		})
	}
}

// The embedded default bills cached input and cache writes of its Claude
// ids at their own rates (3.75 per million written, 0.30 read, 3 plain,
// 15 output for claude-sonnet-4-5).
func TestExactCostOfCacheWritesOnTheDefault(t *testing.T) {
	t.Parallel()
	g, acct, key := startDefault(t)
	w := wallet{g: g, acct: acct, key: key}
	c := do(t, "POST", g.URL+"/v1/messages", msgHeaders(key),
		`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"cache this [sim:cached=3,written=4]"}]}`)
	if c.Status != 200 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	u := gjson.GetBytes(c.Body, "usage")
	want := money.Nano(u.Get("input_tokens").Int()*3000 + 3*300 + 4*3750 + u.Get("output_tokens").Int()*15000)
	if u.Get("cache_creation_input_tokens").Int() != 4 || checkCost(t, w.last(t, 1)) != want {
		t.Fatalf("cost %v, want %s for usage %s", w.last(t, 1)["cost"], want, u.Raw)
	}
	w.settled(t, 1)
}

// post makes a call, streamed or not, and wants it whole: a stream's
// events must end cleanly.
func post(t *testing.T, url string, headers map[string]string, body string, stream bool) call {
	t.Helper()
	if !stream {
		return do(t, "POST", url, headers, body)
	}
	st, h, evs, err := rawStream(t, url, headers, body)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	c := call{Status: st, Header: h}
	if st != 200 && len(evs) == 1 {
		c.Body = evs[0].Data
	}
	return c
}

// Amounts beyond money's range are refused, never wrapped: an admin
// credit is a 400, a hold a 402, and a settlement the books cannot
// take (the account was corrected down to
// the floor of money's range while a call was in flight, and the call
// costs more than its hold) is refused by the store, not wrapped: the call
// is logged with cost 0 and the charge named in its technical view, its
// hold is released, the held-back answer becomes a 500, and the balance
// stays exactly what the admin left.
func TestMoneyOutOfRangeThroughTheBinary(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	// Not audited: its one row has usage and, on purpose, cost 0.
	g := testgw.Start(t, testgw.Options{Config: channelBlock("deep", up.URL, 0, "deep", "dear") + `
model "dear" {
  price {
    input  = "1"
    output = "9223372036"
  }
}
model "deep" {
  default_max_tokens = 1
  max_output_tokens  = 1000
  price {
    input  = "0"
    output = "1000000"
  }
}
`})
	for _, body := range []map[string]any{
		{"name": "wrap", "initial_credit": "9223372036.9"},          // once wrapped to a negative balance
		{"name": "wrap", "initial_credit": "-9223372036.999999999"}, // once wrapped to a positive one
	} {
		var e struct {
			Error struct{ Code, Message string }
		}
		if st := g.AdminStatus("POST", "/accounts", body, &e); st != 400 || e.Error.Code != "invalid_request" ||
			!strings.Contains(e.Error.Message, "out of range") {
			t.Fatalf("initial_credit %v: %d %+v", body["initial_credit"], st, e)
		}
	}
	rich := g.Account("9223372000")
	var e struct {
		Error struct{ Code, Message string }
	}
	if st := g.AdminStatus("POST", "/accounts/"+rich+"/credits", map[string]any{"amount": "100"}, &e); st != 400 ||
		!strings.Contains(e.Error.Message, "9223372036.854775807") {
		t.Fatalf("a credit past the maximum: %d %+v", st, e)
	}
	if bal, _ := g.Balance(rich); bal != "9223372000" {
		t.Fatalf("a refused credit changed the balance to %s", bal)
	}

	// The hold is one output token at one credit: the whole balance.
	acct := g.Account("1")
	_, key := g.Key(acct, nil)

	// A hold beyond the range (two million tokens at 9223372036 a
	// million) is refused as more than any balance, not wrapped to a
	// small or negative hold.
	c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("dear", "hi", `"max_tokens":2000000`))
	if code, _, msg := c.errorOf(t); c.Status != 402 || code != "quota_exceeded" || !strings.Contains(msg, "9223372036.854775807") {
		t.Fatalf("a hold beyond the range: %d %s", c.Status, c.Body)
	}

	done := make(chan call, 1)
	go func() {
		c, err := tryDo("POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("deep", "slowly [sim:latency=1500ms]", ""))
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, held := g.Balance(acct); held == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hold never appeared")
		}
	}
	// Down to the floor: available = balance − held = money.Min exactly.
	g.Admin("POST", "/accounts/"+acct+"/credits", map[string]any{"amount": money.Min.String(), "note": "deep correction"}, nil)
	floor := (money.Min + money.Credits(1)).String()

	c = <-done
	if code, _, _ := c.errorOf(t); c.Status != 500 || code != "internal_error" {
		t.Fatalf("the answer the gateway could not bill: %d %s", c.Status, c.Body)
	}
	rows := logsOf(t, g, key) // newest first: the call, then the 402
	if len(rows) != 2 || rows[1]["status"] != "rejected" || rows[1]["cost"] != "0" || rows[0]["status"] != "error" || rows[0]["cost"] != "0" || rows[0]["output_tokens"] != float64(20) {
		t.Fatalf("rows %v", rows)
	}
	view := do(t, "GET", g.URL+"/v1/logs/"+idStr(uint64(rows[0]["id"].(float64))), bearer(key), "")
	if got := gjson.GetBytes(view.Body, `gateway.#(k=="charge_not_booked").v`).String(); !strings.HasPrefix(got, "20 ") {
		t.Fatalf("charge_not_booked %q: %s", got, view.Body)
	}
	if bal, held := g.Balance(acct); bal != floor || held != "0" {
		t.Fatalf("balance %s held %s, want %s and 0", bal, held, floor)
	}
}
