package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestBodiesBudget(t *testing.T) {
	b := NewBodies(10)
	if !b.take(6) || b.take(6) || !b.take(4) || b.InUse() != 10 {
		t.Fatalf("in use %d", b.InUse())
	}
	b.give(10)
	// Larger than the whole budget: only alone.
	if !b.take(30) || b.take(1<<20) {
		t.Fatalf("in use %d", b.InUse())
	}
	b.give(30)
	if b.InUse() != 0 {
		t.Fatalf("in use %d", b.InUse())
	}
	var none *Bodies
	if !none.take(1 << 40) {
		t.Fatal("no budget refused a body")
	}
}

// A watcher sees the bytes held after every change, in order, so the
// last value it is told is what is held now.
func TestBodiesWatch(t *testing.T) {
	b := NewBodies(100)
	var seen []int64
	b.Watch(func(n int64) { seen = append(seen, n) })
	b.take(30)
	b.take(90) // refused: no change
	b.take(20)
	b.give(30)
	b.give(20)
	if want := []int64{30, 50, 20, 0}; !slices.Equal(seen, want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
}

// guarded serves a refusal that never reads the body, as the key check
// does, on a server whose read-away lasts timeout.
func guarded(t *testing.T, timeout time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, end := guardBody(w, r, timeout)
		defer end()
		if r.URL.Path == "/ok" {
			return
		}
		apierr.Write(w, protocol.OpenAIChat, apierr.New(apierr.InvalidAPIKey, "no"))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A small body that came whole is read away before the answer and its
// connection kept; a client that waits for 100 Continue is refused and
// let go at once, as its body never comes; a chunked body's connection
// closes after the answer.
func TestGuardBody(t *testing.T) {
	addr := guarded(t, 200*time.Millisecond)
	exchange := func(t *testing.T, req string) (net.Conn, *bufio.Reader, *http.Response) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(c)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		return c, rd, resp
	}
	post := "POST /x HTTP/1.1\r\nHost: t\r\n"
	next := "GET /ok HTTP/1.1\r\nHost: t\r\n\r\n"

	t.Run("kept", func(t *testing.T) {
		c, rd, resp := exchange(t, post+"Content-Length: 5\r\n\r\nhello")
		if resp.StatusCode != 401 || resp.Close {
			t.Fatalf("%d, closes %v", resp.StatusCode, resp.Close)
		}
		_, _ = io.WriteString(c, next)
		if resp, err := http.ReadResponse(rd, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("the kept connection: %v %v", resp, err)
		}
	})
	for name, req := range map[string]string{
		"expect":  post + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n",
		"chunked": post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"partial": post + "Content-Length: 10\r\n\r\nhello",
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			c, rd, resp := exchange(t, req)
			if resp.StatusCode != 401 || !resp.Close {
				t.Fatalf("%d, closes %v", resp.StatusCode, resp.Close)
			}
			_, _ = io.WriteString(c, next)
			if b, err := io.ReadAll(rd); len(b) > 0 || err != nil {
				t.Fatalf("after the refusal: %q %v", b, err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("closed after %s", took)
			}
		})
	}
}
