// Command ledgerbench measures the call-log API and the chat path's store
// operations against a store holding a million rows (by default), on
// Badger and on PostgreSQL (a server it starts, or -pg-url): it seeds the
// rows (store.Settle on Badger, COPY on PostgreSQL), measures /v1/logs
// pages, the summary and the CSV export through logsapi.Handler over HTTP,
// and PlaceHold+Settle at 10,000 and at the full row count. It prints
// Markdown; docs/performance-ledger.md holds a run's figures and the method.
//
//	go run ./internal/ledgerbench [-rows 1000000] [-backend both|badger|postgres] [-pg-url URL] [-dir DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testpg"
)

func main() {
	c := Config{Progress: os.Stderr}
	flag.IntVar(&c.Rows, "rows", 1_000_000, "rows to seed over 30 days")
	flag.IntVar(&c.SmallRows, "small-rows", 10_000, "rows stored at the first chat-path measurement")
	flag.StringVar(&c.Dir, "dir", "", "Badger directory (kept); empty = a temporary one, removed after")
	flag.IntVar(&c.Workers, "workers", 64, "concurrent seeding writers")
	flag.IntVar(&c.PageIters, "page-iters", 200, "samples per page shape")
	flag.IntVar(&c.ColdSummaries, "cold-summaries", 5, "cold summary samples")
	flag.IntVar(&c.WarmSummaries, "warm-summaries", 500, "cached summary samples")
	flag.IntVar(&c.ExportIters, "export-iters", 20, "CSV export samples")
	flag.IntVar(&c.ChatOps, "chat-ops", 20_000, "PlaceHold+Settle pairs per round")
	flag.IntVar(&c.ChatConcurrency, "chat-concurrency", 32, "goroutines making PlaceHold+Settle pairs")
	flag.IntVar(&c.ChatRounds, "chat-rounds", 3, "rounds per store size (the best is reported)")
	backends := flag.String("backend", "both", "badger, postgres or both")
	pgURL := flag.String("pg-url", "", "an empty PostgreSQL database; empty = start a server (needs PostgreSQL's binaries)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	reps, err := runAll(ctx, c, *backends, *pgURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerbench:", err)
		os.Exit(1)
	}
	for _, rep := range reps {
		writeMarkdown(os.Stdout, rep)
	}
	if len(reps) == 2 {
		writeComparison(os.Stdout, reps[0], reps[1])
	}
}

// runAll runs the benchmark on each backend asked for, Badger first.
func runAll(ctx context.Context, c Config, backends, pgURL string) ([]*Report, error) {
	var which []string
	switch backends {
	case "both":
		which = []string{Badger, Postgres}
	case Badger, Postgres:
		which = []string{backends}
	default:
		return nil, fmt.Errorf("-backend %q: want badger, postgres or both", backends)
	}
	var out []*Report
	for _, b := range which {
		c := c
		c.Backend = b
		if b == Postgres && pgURL == "" {
			// Durability as Badger's default: the log is written before a
			// call returns and flushed by the server soon after
			// (synchronous_commit off), with fsync on.
			srv, err := testpg.Launch("fsync=on", "full_page_writes=on", "synchronous_commit=off",
				"shared_buffers=256MB", "max_wal_size=4GB", "checkpoint_timeout=30min")
			if err != nil {
				return nil, err
			}
			defer srv.Stop()
			if c.PostgresURL, err = srv.CreateDatabase(ctx, "ledgerbench"); err != nil {
				return nil, err
			}
			c.PostgresPID = srv.PID()
		} else if b == Postgres {
			c.PostgresURL = pgURL
		}
		rep, err := Run(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		out = append(out, rep)
	}
	return out, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

// writeMarkdown prints the report as the tables of docs/performance-ledger.md.
func writeMarkdown(w io.Writer, r *Report) {
	fmt.Fprintf(w, "### %s\n\n", backendName(r.Backend))
	fmt.Fprintf(w, "Rows seeded: %d over 30 days (%d stored at the reads); seeding took %s (%.0f rows/s); store on disk %.0f MB. %s, %d CPUs; load average %s at the start, %s at the end.\n\n",
		r.Rows, r.TotalRows, r.SeedTime.Round(time.Second), float64(r.Rows)/r.SeedTime.Seconds(), float64(r.DiskBytes)/1e6, r.GoVersion, r.CPUs, r.LoadStart, r.LoadEnd)
	fmt.Fprintln(w, "| request | p50 | p99 | samples | rows | body bytes | allocs/op | bytes/op |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range r.Reads {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %d | %d |\n",
			x.Name, ms(x.P50), ms(x.P99), x.Samples, x.RowsPerAnswer, x.BytesPerAnswer, x.AllocsPerOp, x.BytesPerOp)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| rows stored | PlaceHold+Settle pairs | CPU/op | server CPU/op | wall/op | allocs/op | bytes/op | heap in use after |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range r.Chat {
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %d | %d | %.1f MB |\n",
			x.StoredRows, x.Ops, us(x.CPUPerOp), us(x.ServerCPUPerOp), us(x.WallPerOp), x.AllocsPerOp, x.BytesPerOp, float64(x.HeapInuse)/1e6)
	}
	fmt.Fprintln(w)
}

func backendName(b string) string {
	if b == Postgres {
		return "PostgreSQL"
	}
	return "Badger"
}

// writeComparison puts the two runs' medians side by side.
func writeComparison(w io.Writer, a, b *Report) {
	fmt.Fprintf(w, "### %s beside %s\n\n", backendName(b.Backend), backendName(a.Backend))
	fmt.Fprintf(w, "| request | %s p50 | %s p50 | %s p99 | %s p99 |\n", backendName(a.Backend), backendName(b.Backend), backendName(a.Backend), backendName(b.Backend))
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for i := range min(len(a.Reads), len(b.Reads)) {
		x, y := a.Reads[i], b.Reads[i]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", x.Name, ms(x.P50), ms(y.P50), ms(x.P99), ms(y.P99))
	}
	for i := range min(len(a.Chat), len(b.Chat)) {
		x, y := a.Chat[i], b.Chat[i]
		fmt.Fprintf(w, "| PlaceHold+Settle at %d rows, wall/op (CPU/op incl. server) | %s (%s) | %s (%s) | | |\n",
			x.StoredRows, us(x.WallPerOp), us(x.CPUPerOp+x.ServerCPUPerOp), us(y.WallPerOp), us(y.CPUPerOp+y.ServerCPUPerOp))
	}
	fmt.Fprintln(w)
}
