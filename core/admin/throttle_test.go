package admin

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// An address that sends maxFailures wrong tokens is refused with 429,
// even with the right token, until its window ends; the ceiling is logged
// once; other addresses are not affected.
func TestFailedAdminAttemptsAreThrottled(t *testing.T) {
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer, _ := keys.NewSealer(make([]byte, 32))
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	var logs bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	h := NewHandler(NewService(st, sealer, clock.now, money.MustParse("1")), st, "tok", log)

	try := func(addr, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/admin/v1/accounts", nil)
		r.RemoteAddr = addr + ":40000"
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := range maxFailures {
		if w := try("192.0.2.7", "wrong"); w.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i+1, w.Code)
		}
	}
	w := try("192.0.2.7", "tok")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), "rate_limit_exceeded") {
		t.Fatalf("past the ceiling: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if w := try("192.0.2.8", "tok"); w.Code != http.StatusOK {
		t.Fatalf("another address: %d", w.Code)
	}
	if n := strings.Count(logs.String(), "too many failed admin attempts"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.String())
	}
	clock.add(failureWindow)
	if w := try("192.0.2.7", "tok"); w.Code != http.StatusOK {
		t.Fatalf("after the window: %d %s", w.Code, w.Body)
	}
}
