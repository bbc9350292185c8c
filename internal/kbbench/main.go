// Command kbbench measures the knowledge base at scale: it generates a
// corpus (100,000 pages by default), imports it through the knowledge-base
// service (Badger writes and the bleve index, a batch of 1,000 pages per
// write as the admin API takes them), measures searches by query class
// (p50 and p99, limit 20, pages read and snippets made as the REST search
// does), the index's size, and the rebuild of the index from the store.
// It prints Markdown; docs/performance.md holds a run's figures.
//
//	go run ./internal/kbbench [-pages 100000] [-queries 200] [-dir DIR]
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
	flag.IntVar(&c.Pages, "pages", 100_000, "pages in the generated corpus")
	flag.IntVar(&c.Batch, "batch", 1000, "pages per write")
	flag.IntVar(&c.Queries, "queries", 200, "queries per query class")
	flag.StringVar(&c.Dir, "dir", "", "data directory (kept); empty = a temporary one, removed after")
	flag.Uint64Var(&c.Seed, "seed", 1, "corpus seed")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the queries to this file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := Run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbbench:", err)
		os.Exit(1)
	}
	writeMarkdown(os.Stdout, rep)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func writeMarkdown(w io.Writer, r *Report) {
	fmt.Fprintf(w, "Pages: %d (%.0f MB of Markdown bodies), one base. Import: %s, %.0f pages/s (store and index, 1,000 pages a write). "+
		"Index on disk (kb.bleve): %.0f MB; store: %.0f MB. Index rebuilt from the store: %s (%.0f pages/s); reopened when current: %s. "+
		"%s, %d CPUs; load average %s at the start, %s at the end.\n\n",
		r.Pages, float64(r.BodyBytes)/1e6, r.ImportTime.Round(time.Second), float64(r.Pages)/r.ImportTime.Seconds(),
		float64(r.IndexBytes)/1e6, float64(r.StoreBytes)/1e6, r.RebuildTime.Round(time.Second),
		float64(r.Pages)/r.RebuildTime.Seconds(), ms(r.ReopenTime), r.GoVersion, r.CPUs, r.LoadStart, r.LoadEnd)
	fmt.Fprintln(w, "| query (limit 20) | p50 | p99 | samples | hits (mean) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, q := range r.Queries {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %.0f |\n", q.Name, ms(q.P50), ms(q.P99), q.Samples, q.AvgHits)
	}
}
