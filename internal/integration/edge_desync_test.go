package integration

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A request refused on its headers (a wrong key, a declared length over
// the cap) has its body read away after the answer, within a bound. What
// the bound leaves unread is still that request's body: were the
// connection kept, it would be parsed as the next request, and a body
// carrying one would have it served (a desync; behind a front proxy that
// pools connections across clients, request smuggling). Each case here
// sends the part of a body that ends where a request begins only once
// the read-away is over, and checks that nothing answers it.

// smuggled is a whole request, as a refused body's tail carries it.
const smuggled = "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"

// pastDrain is how long after the refusal's head the tail is sent: past
// the read-away of the edge gateway (its body_timeout, 2 s), within its
// idle_timeout after that (2 s), when a kept connection would still wait
// for a next request.
const pastDrain = 2700 * time.Millisecond

// refusal reads the answer to a refused request and checks it says the
// connection closes (part of its body was not read) and comes whole at
// once, not once the gateway gave up waiting for the body. It returns when
// the answer's head came.
func refusal(t *testing.T, c net.Conn, status int) time.Time {
	t.Helper()
	sent := time.Now()
	_ = c.SetReadDeadline(sent.Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	came := time.Now()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != status || err != nil {
		t.Fatalf("%d %s %v", resp.StatusCode, body, err)
	}
	if took := time.Since(sent); took > 1500*time.Millisecond {
		t.Errorf("the whole refusal took %s", took)
	}
	if !resp.Close {
		t.Errorf("the refusal of a body not read to its end keeps the connection: %v", resp.Header)
	}
	return came
}

// noAnswerTo sends tail once the read-away after the refusal that came at
// came is over and checks that the connection is closed without another
// answer.
func noAnswerTo(t *testing.T, c net.Conn, came time.Time, tail string) {
	t.Helper()
	time.Sleep(time.Until(came.Add(pastDrain)))
	_, _ = io.WriteString(c, tail) // the gateway may have closed it: a reset is fine
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	got, err := io.ReadAll(c)
	if len(got) > 0 {
		t.Fatalf("a request in a refused body was answered:\n%s", got)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection of a refused body stays open past the read-away")
	}
}

// refusedHead writes a request's head with a key the gateway does not
// know and the framing given (a Content-Length, or chunked when length
// is negative).
func refusedHead(t *testing.T, c net.Conn, key string, length int) {
	t.Helper()
	h := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nAuthorization: Bearer " + key + "\r\n"
	if length >= 0 {
		h += "Content-Length: " + strconv.Itoa(length) + "\r\n"
	} else {
		h += "Transfer-Encoding: chunked\r\n"
	}
	if _, err := io.WriteString(c, h+"\r\n"); err != nil {
		t.Fatal(err)
	}
}

func TestEdgeRefusedBodyDesync(t *testing.T) {
	t.Parallel()
	g, _ := startEdge(t, false)
	wrong := "sk-tollgate-" + strings.Repeat("0", 64)

	// A body declared under and over the 256 KB the server reads away
	// before it answers: part of it, then, past the read-away, the rest,
	// which is a request.
	for _, n := range []int{64 << 10, 300 << 10} {
		t.Run("a partial body of "+strconv.Itoa(n>>10)+" KB", func(t *testing.T) {
			t.Parallel()
			c := rawConn(t, g, 0)
			refusedHead(t, c, wrong, n+len(smuggled))
			if _, err := c.Write(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
			noAnswerTo(t, c, refusal(t, c, 401), smuggled)
		})
	}

	t.Run("a chunked body", func(t *testing.T) {
		t.Parallel()
		c := rawConn(t, g, 0)
		refusedHead(t, c, wrong, -1)
		const size = 64 << 10
		if _, err := io.WriteString(c, strconv.FormatInt(size, 16)+"\r\n"+strings.Repeat("x", size-len(smuggled))); err != nil {
			t.Fatal(err)
		}
		came := refusal(t, c, 401)
		// The chunk ends with the request, then the body ends.
		noAnswerTo(t, c, came, smuggled+"\r\n0\r\n\r\n")
	})

	t.Run("a slow sender", func(t *testing.T) {
		t.Parallel()
		c := rawConn(t, g, 0)
		const n = 1000
		refusedHead(t, c, wrong, n+len(smuggled))
		if _, err := io.WriteString(c, strings.Repeat(" ", 10)); err != nil {
			t.Fatal(err)
		}
		came := refusal(t, c, 401)
		// A byte every 100 ms while the gateway reads the body away, then
		// nothing until it has given up.
		for i := 10; i < n; i++ {
			if i < 20 {
				time.Sleep(100 * time.Millisecond)
			}
			if _, err := c.Write([]byte{' '}); err != nil {
				t.Fatal(err)
			}
		}
		noAnswerTo(t, c, came, smuggled)
	})

	t.Run("a body over the cap by its length", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		c := rawConn(t, g, 0)
		head(t, c, "POST", "/v1/chat/completions", w.key, 40<<20)
		if _, err := c.Write(make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		noAnswerTo(t, c, refusal(t, c, 413), smuggled)
	})

	// A small body sent whole is read away before the answer: the
	// connection stays for the next request.
	t.Run("a small body sent whole keeps the connection", func(t *testing.T) {
		t.Parallel()
		c := rawConn(t, g, 0)
		body := chatPayload("h-chat", 8<<10)
		refusedHead(t, c, wrong, len(body))
		if _, err := io.WriteString(c, body); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 401 || resp.Close {
			t.Fatalf("%d, closes: %v", resp.StatusCode, resp.Close)
		}
		if _, err := io.WriteString(c, smuggled); err != nil {
			t.Fatal(err)
		}
		resp, err = http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("the kept connection: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the next request on the kept connection: %d", resp.StatusCode)
		}
	})
}
