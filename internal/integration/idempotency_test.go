package integration

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// Idempotency-Key on the four chat endpoints (spec: Idempotency; PRODUCT
// §7), against the real binary: a retried call is answered from the first
// one's answer, with no second upstream call and no second charge.
func TestChatIdempotencyKey(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: channelBlock("idem", up.URL, 0, "idem-chat") + `
model "idem-chat" {
  translate_from = ["gemini_native"]
  price {
    input  = "1"
    output = "2"
  }
}
`})
	upstreamCalls := func() int { return len(up.requests()) }
	withKey := func(key, k string) map[string]string {
		h := bearer(key)
		h["Idempotency-Key"] = k
		return h
	}

	t.Run("same key and body replays the answer without a second charge", func(t *testing.T) {
		w := newWallet(g)
		body := chatBody("idem-chat", "hello [sim:words=5]", "")
		first := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-1"), body)
		if first.Status != 200 || first.Header.Get("Idempotency-Replayed") != "" {
			t.Fatalf("%d %v %s", first.Status, first.Header, first.Body)
		}
		balance, _ := g.Balance(w.acct)
		calls := upstreamCalls()
		again := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-1"), body)
		if again.Status != 200 || again.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("replay: %d %v %s", again.Status, again.Header, again.Body)
		}
		if !bytes.Equal(again.Body, first.Body) || again.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
			t.Fatalf("replay differs:\n%s\n%s", first.Body, again.Body)
		}
		if again.Header.Get("x-request-id") == first.Header.Get("x-request-id") {
			t.Fatal("the replay reuses the first call's request id")
		}
		if n := upstreamCalls(); n != calls {
			t.Fatalf("the replay reached the upstream (%d calls, want %d)", n, calls)
		}
		if b, _ := g.Balance(w.acct); b != balance {
			t.Fatalf("balance %s after the replay, want %s", b, balance)
		}
		// The key is per account: another key of the account replays too.
		_, other := g.Key(w.acct, nil)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", withKey(other, "k-1"), body); c.Status != 200 || c.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("another key of the account: %d %v", c.Status, c.Header)
		}
		rows := w.rows(t, 2)
		if checkCost(t, rows[0]) != 0 || rows[0]["status"] != "success" || checkCost(t, rows[1]) == 0 {
			t.Fatalf("rows: %v", rows)
		}
		w.settled(t, 2)
		view := do(t, "GET", g.URL+"/v1/logs/"+strconv.FormatInt(int64(rows[0]["id"].(float64)), 10), bearer(w.key), "")
		if got := gjson.GetBytes(view.Body, `gateway.#(k=="idempotent_replay_of").v`).String(); got != rows[1]["request_id"] {
			t.Fatalf("replay row names %q, want %v: %s", got, rows[1]["request_id"], view.Body)
		}
	})

	t.Run("same key with another body is 409 idempotency_key_reuse", func(t *testing.T) {
		w := newWallet(g)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-2"), chatBody("idem-chat", "one", "")); c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		c := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-2"), chatBody("idem-chat", "two", ""))
		if code, typ, _ := c.errorOf(t); c.Status != 409 || code != "idempotency_key_reuse" || typ != "invalid_request_error" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		// Another endpoint with the same body is another request too.
		m := do(t, "POST", g.URL+"/v1/messages", map[string]string{"x-api-key": w.key, "anthropic-version": "2023-06-01", "Idempotency-Key": "k-2"},
			`{"model":"idem-chat","max_tokens":5,"messages":[{"role":"user","content":"one"}]}`)
		if m.Status != 409 || gjson.GetBytes(m.Body, "type").String() != "error" || gjson.GetBytes(m.Body, "error.type").String() != "invalid_request_error" {
			t.Fatalf("messages: %d %s", m.Status, m.Body)
		}
	})

	t.Run("a stream is replayed as its recorded events", func(t *testing.T) {
		w := newWallet(g)
		body := chatBody("idem-chat", "stream me [sim:words=8]", `"stream":true,"stream_options":{"include_usage":true}`)
		first := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-3"), body)
		if first.Status != 200 || !bytes.Contains(first.Body, []byte("data: [DONE]")) {
			t.Fatalf("%d %s", first.Status, first.Body)
		}
		again := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-3"), body)
		if again.Status != 200 || again.Header.Get("Idempotency-Replayed") != "true" ||
			again.Header.Get("Content-Type") != first.Header.Get("Content-Type") || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("replay %d %v:\n%s\nwant\n%s", again.Status, again.Header, again.Body, first.Body)
		}
	})

	t.Run("a failed call frees the key", func(t *testing.T) {
		w := newWallet(g)
		body := chatBody("idem-chat", "fail [sim:error=400]", "")
		calls := upstreamCalls()
		for i := range 2 {
			if c := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-4"), body); c.Status != 400 || c.Header.Get("Idempotency-Replayed") != "" {
				t.Fatalf("call %d: %d %s", i, c.Status, c.Body)
			}
		}
		if n := upstreamCalls() - calls; n != 2 {
			t.Fatalf("%d upstream calls, want 2 (a failure is not remembered)", n)
		}
	})

	t.Run("of simultaneous calls with one key exactly one runs; the others are 409 idempotency_in_flight", func(t *testing.T) {
		w := newWallet(g)
		body := chatBody("idem-chat", "slow [sim:latency=1500ms]", "")
		calls := upstreamCalls()
		const n = 6
		results := make([]call, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := tryDo("POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-5"), body)
				if err != nil {
					t.Error(err)
				}
				results[i] = c
			}()
		}
		wg.Wait()
		ok := 0
		for _, c := range results {
			switch {
			case c.Status == 200 && c.Header.Get("Idempotency-Replayed") == "":
				ok++
			case c.Status == 409:
				if code, _, _ := c.errorOf(t); code != "idempotency_in_flight" {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
			default:
				t.Fatalf("%d %v %s", c.Status, c.Header, c.Body)
			}
		}
		if ok != 1 || upstreamCalls()-calls != 1 {
			t.Fatalf("%d calls ran, %d reached the upstream; want 1 and 1", ok, upstreamCalls()-calls)
		}
		w.rows(t, n)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", withKey(w.key, "k-5"), body); c.Status != 200 || c.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("after the run: %d %v", c.Status, c.Header)
		}
	})

	t.Run("generate-content: the model in the path is part of the request", func(t *testing.T) {
		w := newWallet(g)
		h := map[string]string{"x-goog-api-key": w.key, "Idempotency-Key": "k-6"}
		body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
		if c := do(t, "POST", g.URL+"/v1beta/models/idem-chat:generateContent", h, body); c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if c := do(t, "POST", g.URL+"/v1beta/models/idem-chat:generateContent", h, body); c.Status != 200 || c.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("replay: %d %v %s", c.Status, c.Header, c.Body)
		}
		c := do(t, "POST", g.URL+"/v1beta/models/idem-chat:streamGenerateContent?alt=sse", h, body)
		if c.Status != 409 || gjson.GetBytes(c.Body, "error.status").String() != "ALREADY_EXISTS" {
			t.Fatalf("other method: %d %s", c.Status, c.Body)
		}
	})
}

// An answer above the stage's max_response_bytes is not kept: a retry is
// 409 idempotency_response_not_cached, and still not a second charge.
func TestChatIdempotencyAnswerTooLarge(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: channelBlock("idem", up.URL, 0, "idem-chat") + modelBlock("idem-chat") + `
stage "idempotency" {
  settings = { max_response_bytes = "64" }
}
`})
	w := newWallet(g)
	h := bearer(w.key)
	h["Idempotency-Key"] = "big"
	body := chatBody("idem-chat", "long [sim:words=50]", "")
	if c := do(t, "POST", g.URL+"/v1/chat/completions", h, body); c.Status != 200 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	// The record is kept before the first answer ends (the handler
	// returns after it), so the retry sees it at once.
	c := do(t, "POST", g.URL+"/v1/chat/completions", h, body)
	if code, _, msg := c.errorOf(t); c.Status != 409 || code != "idempotency_response_not_cached" || !strings.Contains(msg, "/v1/logs") {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if n := len(up.requests()); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
	if rows := w.rows(t, 2); rows[0]["cost"] != "0" || rows[0]["status"] != "rejected" {
		t.Fatalf("the refused retry's row: %v", rows[0])
	}
}
