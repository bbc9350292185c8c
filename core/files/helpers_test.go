package files

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

var secret = []byte("test-secret-0123456789abcdef")

// clock is an injected clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 250_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// backends are the bucket kinds every round-trip test runs on.
func backends(t *testing.T) map[string]Options {
	return map[string]Options{
		"dir":     {Dir: t.TempDir()},
		"fileurl": {URL: "file://" + t.TempDir() + "/nested/files"},
		"mem":     {URL: "mem://"},
	}
}

func open(t testing.TB, o Options, c *clock) *Store {
	t.Helper()
	o.Secret = secret
	if c != nil {
		o.Now = c.Now
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// serve runs the handler on 127.0.0.1 the way the gateway mounts it.
func serve(t testing.TB, s *Store) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/files/{id}", s.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t testing.TB, method, url string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, string(b)}
}
