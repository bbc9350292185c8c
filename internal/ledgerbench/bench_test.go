package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testpg"

	"github.com/tollgate-gw/tollgate/internal/ledgerseed"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// TestRunSmall runs the whole benchmark on 10,000 rows, so it cannot rot:
// Run checks every answer it measures (full pages in order and matching
// their filter, a cursor walk without repeats, summary totals equal to the
// rows stored, the export's row count and x-truncated).
func TestRunSmall(t *testing.T) {
	for _, backend := range []string{Badger, Postgres} {
		t.Run(backend, func(t *testing.T) { runSmall(t, backend) })
	}
}

func runSmall(t *testing.T, backend string) {
	c := Config{
		Rows: 10_000, SmallRows: 4_000, Dir: t.TempDir(), Workers: 16,
		PageIters: 5, ColdSummaries: 2, WarmSummaries: 5, ExportIters: 2,
		ChatOps: 500, ChatConcurrency: 8, ChatRounds: 2, NoSettle: true, Backend: backend,
	}
	if backend == Postgres {
		c.PostgresURL = testpg.Database(t)
		c.PostgresPID = testpg.Start(t).PID()
	}
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TotalRows != 10_000+2*2*500 { // the seeded rows and the chat-path rows
		t.Errorf("total rows %d", rep.TotalRows)
	}
	if len(rep.Reads) != 12 || len(rep.Chat) != 2 {
		t.Fatalf("reads %d, chat %d", len(rep.Reads), len(rep.Chat))
	}
	for _, r := range rep.Reads {
		if r.P50 <= 0 || r.P99 < r.P50 || r.AllocsPerOp == 0 {
			t.Errorf("%s: p50 %s p99 %s allocs %d", r.Name, r.P50, r.P99, r.AllocsPerOp)
		}
	}
	if rep.Chat[0].StoredRows != 4_000 || rep.Chat[1].StoredRows != 10_000+1_000 {
		t.Errorf("chat path sizes %d, %d", rep.Chat[0].StoredRows, rep.Chat[1].StoredRows)
	}
	if rep.DiskBytes <= 0 {
		t.Error("no disk usage measured")
	}
	var out bytes.Buffer
	writeMarkdown(&out, rep)
	if !strings.Contains(out.String(), "| CSV export, 10,000 rows |") || strings.Count(out.String(), "\n|") < 14 {
		t.Errorf("markdown:\n%s", out.String())
	}
	if backend == Postgres && rep.Chat[0].ServerCPUPerOp <= 0 {
		t.Error("no server CPU measured")
	}
	writeComparison(&out, rep, rep)
}

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		desc string
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{desc: "empty", in: nil, p: 50, want: 0},
		{desc: "one", in: ms(7), p: 99, want: 7 * time.Millisecond},
		{desc: "median of unsorted", in: ms(5, 1, 3, 2, 4), p: 50, want: 3 * time.Millisecond},
		{desc: "p99 of 100 is the 99th", in: ms(seq(100)...), p: 99, want: 99 * time.Millisecond},
		{desc: "p99 of 10 is the max", in: ms(seq(10)...), p: 99, want: 10 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestRowAtMix(t *testing.T) {
	keys := benchKeys()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(30 * 24 * time.Hour)
	const n = 20_000
	status := map[string]int{}
	reqIDs := map[string]bool{}
	rare := 0
	for i := 0; i < n; i++ {
		r := ledgerseed.RowAt(i, n, start, end, acctID, keys)
		status[r.Status]++
		reqIDs[r.RequestID] = true
		if r.Model == ledgerseed.RareModel {
			rare++
		}
		if r.CreatedAt.Before(start.Add(-time.Second)) || !r.CreatedAt.Before(end.Add(time.Second)) {
			t.Fatalf("row %d at %s outside the span", i, r.CreatedAt)
		}
		if r.Status == "rejected" && r.Cost != 0 {
			t.Fatalf("rejected row %d costs %s", i, r.Cost)
		}
	}
	if len(reqIDs) != n {
		t.Errorf("%d distinct request ids for %d rows", len(reqIDs), n)
	}
	near := func(got int, pct float64) bool { return float64(got) > n*pct*0.8 && float64(got) < n*pct*1.2 }
	if !near(status["success"], 0.90) || !near(status["error"], 0.06) || !near(status["rejected"], 0.02) || !near(rare, 0.01) {
		t.Errorf("mix %v, rare model %d", status, rare)
	}
}
