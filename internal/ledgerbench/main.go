// Command ledgerbench measures the call-log API and the chat path's store
// operations against a Badger store holding a million rows (by default):
// it seeds the rows through store.Settle, measures /v1/logs pages, the
// summary and the CSV export through logsapi.Handler over HTTP, and
// PlaceHold+Settle at 10,000 and at the full row count. It prints Markdown;
// docs/performance-ledger.md holds a run's figures and the method.
//
//	go run ./internal/ledgerbench [-rows 1000000] [-dir DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
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
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := Run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerbench:", err)
		os.Exit(1)
	}
	writeMarkdown(os.Stdout, rep)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

// writeMarkdown prints the report as the tables of docs/performance-ledger.md.
func writeMarkdown(w io.Writer, r *Report) {
	fmt.Fprintf(w, "Rows seeded: %d over 30 days (%d stored at the reads); seeding took %s (%.0f rows/s); store on disk %.0f MB. %s, %d CPUs; load average %s at the start, %s at the end.\n\n",
		r.Rows, r.TotalRows, r.SeedTime.Round(time.Second), float64(r.Rows)/r.SeedTime.Seconds(), float64(r.DiskBytes)/1e6, r.GoVersion, r.CPUs, r.LoadStart, r.LoadEnd)
	fmt.Fprintln(w, "| request | p50 | p99 | samples | rows | body bytes | allocs/op | bytes/op |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range r.Reads {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %d | %d |\n",
			x.Name, ms(x.P50), ms(x.P99), x.Samples, x.RowsPerAnswer, x.BytesPerAnswer, x.AllocsPerOp, x.BytesPerOp)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| rows stored | PlaceHold+Settle pairs | CPU/op | wall/op | allocs/op | bytes/op | heap in use after |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range r.Chat {
		fmt.Fprintf(w, "| %d | %d | %s | %s | %d | %d | %.1f MB |\n",
			x.StoredRows, x.Ops, us(x.CPUPerOp), us(x.WallPerOp), x.AllocsPerOp, x.BytesPerOp, float64(x.HeapInuse)/1e6)
	}
}
