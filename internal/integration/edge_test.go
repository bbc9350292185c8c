package integration

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// Item 6 of issue 22: bodies were read before the key was checked, and
// nothing timed out after the headers. The server's timeouts and caps are
// set short here; docs/operations.md lists their defaults.

const edgeServer = `
server {
  header_timeout  = "2s"
  body_timeout    = "2s"
  idle_timeout    = "2s"
  max_body_memory = "24MB"
}
channel "h-long" {
  vendor    = "openai"
  base_url  = "@HOSTILE@"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat"]
  models    = ["h-long"]
}
model "h-long" {
  timeout            = "3s"
  default_max_tokens = 1000000
  price {
    input  = "1"
    output = "2"
  }
}
`

// startEdge starts a gateway with short timeouts and caps; audited says
// whether its books are audited against its upstream's reports (a call
// whose client read nothing is billed what reached the client's buffers,
// which no test can know).
func startEdge(t *testing.T, audited bool) (*testgw.Gateway, *vendorsim.Hostile) {
	t.Helper()
	h, url := hostileUpstream(t, vendorsim.HostileOptions{MaxEvents: 2_000_000, MaxTime: 30 * time.Second})
	o := testgw.Options{Config: hostileConfig(url, strings.ReplaceAll(edgeServer, "@HOSTILE@", url))}
	if !audited {
		return testgw.Start(t, o), h
	}
	return startGateway(t, o), h
}

// rawConn dials the gateway.
func rawConn(t *testing.T, g *testgw.Gateway, rcvbuf int) net.Conn {
	t.Helper()
	d := net.Dialer{}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	c, err := d.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// head writes a request's head, its body to follow.
func head(t *testing.T, c net.Conn, method, path, key string, length int) {
	t.Helper()
	h := method + " " + path + " HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
	if key != "" {
		h += "Authorization: Bearer " + key + "\r\n"
	}
	if length >= 0 {
		h += "Content-Length: " + strconv.Itoa(length) + "\r\n"
	}
	if _, err := io.WriteString(c, h+"\r\n"); err != nil {
		t.Fatal(err)
	}
}

// answer reads one response from c, within d.
func answer(t *testing.T, c net.Conn, d time.Duration) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %s: %v", d, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// closedWithin reports whether the gateway closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// chatPayload is a valid chat body of about n bytes.
func chatPayload(model string, n int) string {
	pre := `{"model":"` + model + `","messages":[{"role":"user","content":"`
	post := `"}]}`
	return pre + strings.Repeat("x", max(n-len(pre)-len(post), 1)) + post
}

func TestEdgeBodies(t *testing.T) {
	t.Parallel()
	g, _ := startEdge(t, true)

	t.Run("a keyless body is not read", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/v1/chat/completions", "/v1/images/edits"} {
			c := rawConn(t, g, 0)
			head(t, c, "POST", path, "", 40<<20)
			_, _ = c.Write(make([]byte, 64<<10)) // then the client stalls
			resp, body := answer(t, c, 2*time.Second)
			if resp.StatusCode != 401 || !strings.Contains(string(body), "invalid_api_key") {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
			// What it sends is read away, unkept, for 5 s at most.
			if !closedWithin(c, 8*time.Second) {
				t.Fatalf("%s: the connection of a refused body stays open", path)
			}
		}
		// A client that writes its whole body before it reads (Go's, most
		// SDKs') sees the refusal, not a reset connection.
		r := do(t, "POST", g.URL+"/v1/chat/completions", bearer("sk-tollgate-"+strings.Repeat("0", 64)), chatPayload("h-chat", 40<<20))
		if r.Status != 401 {
			t.Fatalf("a whole keyless body: %d %s", r.Status, r.Body)
		}
	})

	t.Run("a body too large is refused by its length, unread, and logged", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := rawConn(t, g, 0)
		head(t, c, "POST", "/v1/chat/completions", w.key, 40<<20)
		resp, body := answer(t, c, 2*time.Second)
		if resp.StatusCode != 413 || gjson.GetBytes(body, "error.code").Str != "invalid_request" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		// Sent whole by a client that writes before it reads, the same.
		r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatPayload("h-chat", 40<<20))
		if r.Status != 413 {
			t.Fatalf("a whole body too large: %d %s", r.Status, r.Body)
		}
		rows := w.rows(t, 2)
		checkRow(t, rows[0], rowWant{status: "rejected", code: "invalid_request"})
		checkRow(t, rows[1], rowWant{status: "rejected", code: "invalid_request"})
		w.settled(t, 2)
	})

	t.Run("a trickled body times out", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := rawConn(t, g, 0)
		head(t, c, "POST", "/v1/chat/completions", w.key, 1000)
		start := time.Now()
		go func() {
			for i := 0; i < 10; i++ {
				if _, err := c.Write([]byte{' '}); err != nil {
					return
				}
				time.Sleep(400 * time.Millisecond)
			}
		}()
		resp, body := answer(t, c, 6*time.Second)
		if took := time.Since(start); resp.StatusCode != 408 || took > 5*time.Second || !strings.Contains(string(body), "did not arrive within 2s") {
			t.Fatalf("after %s: %d %s", took, resp.StatusCode, body)
		}
		checkRow(t, w.last(t, 1), rowWant{status: "rejected", code: "invalid_request"})
		w.settled(t, 1)
		// Keyless, a trickle is not waited for at all.
		keyless := rawConn(t, g, 0)
		head(t, keyless, "POST", "/v1/chat/completions", "", 1000)
		_, _ = keyless.Write([]byte{' '})
		if resp, body := answer(t, keyless, time.Second); resp.StatusCode != 401 {
			t.Fatalf("keyless trickle: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("idle and silent connections close", func(t *testing.T) {
		t.Parallel()
		c := rawConn(t, g, 0)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if resp, _ := answer(t, c, 2*time.Second); resp.StatusCode != 200 {
			t.Fatalf("healthz %d", resp.StatusCode)
		}
		if !closedWithin(c, 5*time.Second) {
			t.Fatal("an idle kept-alive connection stays open past idle_timeout")
		}
		silent := rawConn(t, g, 0)
		if !closedWithin(silent, 5*time.Second) {
			t.Fatal("a connection that sends nothing stays open past header_timeout")
		}
	})

	t.Run("large bodies share a budget", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		big := chatPayload("h-chat", 20<<20)
		a := rawConn(t, g, 0)
		head(t, a, "POST", "/v1/chat/completions", w.key, len(big))
		if _, err := io.WriteString(a, big[:2<<20]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // a holds 20 MB of the 24 MB budget now
		other := chatPayload("h-chat", 8<<20)
		r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), other)
		if r.Status != 429 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("a body past the budget: %d %s", r.Status, r.Body)
		}
		if _, err := io.WriteString(a, big[2<<20:]); err != nil {
			t.Fatal(err)
		}
		if resp, body := answer(t, a, 10*time.Second); resp.StatusCode != 200 {
			t.Fatalf("the first body: %d %s", resp.StatusCode, body)
		}
		if r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), other); r.Status != 200 {
			t.Fatalf("once the budget is free again: %d %s", r.Status, r.Body)
		}
		rows := w.rows(t, 3)
		checkRow(t, rows[1], rowWant{status: "success", attempts: 1, billed: true})
		checkRow(t, rows[2], rowWant{status: "rejected", code: "rate_limit_exceeded"})
		w.settled(t, 3)
	})
}

// A streaming client that reads nothing held its call, its hold and the
// plugin's upstream stream for 60 s with a 20 s timeout: a write blocked
// when the call's time is up now fails, so the call ends at its deadline.
func TestEdgeClientThatReadsNothing(t *testing.T) {
	t.Parallel()
	g, h := startEdge(t, false)
	w := newWallet(g)
	c := rawConn(t, g, 4096)
	body := `{"model":"h-long","stream":true,"messages":[{"role":"user","content":"[hostile:silent] go"}]}`
	head(t, c, "POST", "/v1/chat/completions", w.key, len(body))
	if _, err := io.WriteString(c, body); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for h.OpenStreams() == 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the call did not reach the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The client reads nothing; the model's timeout is 3 s.
	deadline := start.Add(8 * time.Second)
	for {
		_, held := g.Balance(w.acct)
		if held == "0" && h.OpenStreams() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the call still holds %s and %d upstream streams are open", time.Since(start), held, h.OpenStreams())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("the call ended after %s, before its 3s timeout: did the client read?", took)
	}
	// Billed for what reached the client's buffers, from its characters.
	row := w.last(t, 1)
	if str(row["status"]) != "interrupted" || str(row["error_code"]) != "client_closed" || num(row["output_tokens"]) == 0 {
		t.Fatalf("row %v", row)
	}
	in, out := int64(num(row["input_tokens"])), int64(num(row["output_tokens"]))
	want := per("1", "2", "", "").cost(t, usage{in: in, out: out})
	if got := money.MustParse(str(row["cost"])); got != want {
		t.Fatalf("row cost %s, want %s for %d in and %d out", got, want, in, out)
	}
	if bal, held := g.Balance(w.acct); held != "0" || money.MustParse(bal) != money.MustParse(signupCredit)-want {
		t.Fatalf("balance %s held %s, want %s", bal, held, money.MustParse(signupCredit)-want)
	}
}

// The gateway's soft memory limit makes room for the large bodies it
// holds (up to max_body_memory): without it, a burst of uploads larger
// than memory_limit would keep the collector running without pause.
func TestMemoryLimitFollowsLargeBodies(t *testing.T) {
	t.Parallel()
	_, url := hostileUpstream(t, vendorsim.HostileOptions{MaxEvents: 1000, MaxTime: 10 * time.Second})
	server := strings.ReplaceAll(edgeServer, `max_body_memory = "24MB"`, `max_body_memory = "24MB"
  memory_limit    = "40MB"`)
	g := testgw.Start(t, testgw.Options{Config: hostileConfig(url, strings.ReplaceAll(server, "@HOSTILE@", url)),
		Env: []string{"GOMEMLIMIT="}, Args: []string{"--metrics-listen", "127.0.0.1:0"}})
	murl := metricsURL(t, g)
	limitIs := func(want float64) {
		t.Helper()
		var got float64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			fams, _ := scrape(t, murl)
			if got = value(series(t, fams, "go_gc_gomemlimit_bytes", nil)); got == want {
				return
			}
		}
		t.Fatalf("memory limit %v bytes, want %v", got, want)
	}
	limitIs(40 << 20)
	w := newWallet(g)
	big := chatPayload("h-chat", 20<<20)
	c := rawConn(t, g, 0)
	head(t, c, "POST", "/v1/chat/completions", w.key, len(big))
	if _, err := io.WriteString(c, big[:2<<20]); err != nil {
		t.Fatal(err)
	}
	limitIs(float64(40<<20 + len(big))) // held while it arrives
	if _, err := io.WriteString(c, big[2<<20:]); err != nil {
		t.Fatal(err)
	}
	if resp, body := answer(t, c, 10*time.Second); resp.StatusCode != 200 {
		t.Fatalf("the body: %d %s", resp.StatusCode, body)
	}
	limitIs(40 << 20)
}
