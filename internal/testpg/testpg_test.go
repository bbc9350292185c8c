package testpg

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestSchema(t *testing.T) {
	for range 2 {
		u := Schema(t)
		c, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		var sp string
		if err := c.QueryRow(context.Background(), "SELECT current_schema()").Scan(&sp); err != nil || sp == "public" {
			t.Fatalf("schema %q, %v", sp, err)
		}
		c.Close(context.Background())
	}
	if u := Database(t); u == "" {
		t.Fatal("no database")
	}
}

// Diagnose shows a session waiting on a lock, and the server's log.
func TestDiagnose(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock(4242)"); err != nil {
		t.Fatal(err)
	}
	waiter, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(ctx)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = waiter.Exec(wctx, "SELECT pg_advisory_lock(4242)")
	}()
	defer func() { cancel(); <-done }()
	var d string
	for range 100 {
		if d = s.Diagnose(); strings.Contains(d, "wait=Lock/advisory") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(d, "wait=Lock/advisory") || !strings.Contains(d, "SELECT pg_advisory_lock(4242)") || !strings.Contains(d, "server log:") {
		t.Errorf("the diagnosis misses the waiting session or the log:\n%s", d)
	}
}
