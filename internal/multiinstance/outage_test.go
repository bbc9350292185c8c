package multiinstance

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
)

// The database goes away for a moment while a call is in flight (issue
// 22, item 1, on PostgreSQL): the call is served, its settlement waits in
// memory with its hold kept, /readyz says so and new calls are refused;
// within 5 s of the database coming back the settlement is written, at
// the call's real cost, with no restart.
func TestSettlementWaitsForTheDatabase(t *testing.T) {
	c := startCluster(t, 1, "15s")
	g := c.gws[0]
	acct, key := c.account("10")
	credited := money.MustParse("10")

	done := make(chan answer, 1)
	go func() {
		done <- send("POST", g.URL+"/v1/chat/completions", key, chat("in flight [sim:latency=1500ms,words=5]", 5), nil)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, held := g.Balance(acct); held != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never got under way")
		}
	}

	// The database refuses this gateway: its connections are ended and
	// new ones refused.
	db := strings.TrimPrefix(mustURL(t, c.dbURL).Path, "/")
	admin(t, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" ALLOW_CONNECTIONS false")
	admin(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+db+"' AND pid <> pg_backend_pid()")
	a := <-done
	if a.Status != 200 {
		t.Fatalf("the call in flight: %d %s", a.Status, a.Body)
	}
	st := send("GET", g.URL+"/readyz", "", "", nil)
	if st.Status != 503 || !strings.Contains(string(st.Body), "settlements") {
		t.Errorf("readyz while the settlement waits: %d %s", st.Status, st.Body)
	}
	if r := send("POST", g.URL+"/v1/chat/completions", key, chat("refused", 5), nil); r.Status != 500 || !strings.Contains(string(r.Body), "store is failing") {
		t.Errorf("a new call while the settlement waits: %d %s", r.Status, r.Body)
	}

	admin(t, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" ALLOW_CONNECTIONS true")
	back := time.Now()
	for {
		if _, held := g.Balance(acct); held == "0" {
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("still held 5 s after the database came back:\n%s", g.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	rs := audit(t, g, acct, key, credited)
	trace := a.Header.Get("x-gateway-trace")
	for _, r := range rs {
		if r.RequestID == trace {
			if r.Status != "success" || money.MustParse(r.Cost) <= 0 {
				t.Errorf("the row of the call served during the outage: %+v", r)
			}
			return
		}
	}
	t.Errorf("no row for the call served during the outage (%s): %+v", trace, rs)
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// admin runs sql on the test server as its owner.
func admin(t *testing.T, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testpg.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
