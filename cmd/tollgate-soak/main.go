// Command tollgate-soak runs the gateway from --bin under a long mixed
// load (`make soak`) and writes soak.md and soak.json to --out: memory,
// goroutines, open files and p99 per interval, and whether they stayed
// flat. It exits 1 when a check fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-gw/tollgate/internal/soak"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate-soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin", "directory holding tollgate, its tollgate-plugin-* and tollgate-upstream")
	duration := fs.Duration("duration", 30*time.Minute, "length of the load")
	interval := fs.Duration("interval", time.Minute, "time between samples")
	conc := fs.Int("c", 64, "concurrent closed-loop clients")
	out := fs.String("out", "bench-results", "directory for soak.md and soak.json")
	fromJSON := fs.String("from-json", "", "render an earlier soak.json instead of running")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "tollgate-soak:", err)
		return 1
	}
	var rep *soak.Report
	var err error
	if *fromJSON != "" {
		rep, err = soak.ReadJSON(*fromJSON)
		if err == nil {
			rep.Evaluate()
		}
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		fmt.Fprintf(stderr, "soak: %s at c=%d, a sample every %s\n", *duration, *conc, *interval)
		rep, err = soak.Run(ctx, soak.Options{BinDir: *bin, Duration: *duration, Interval: *interval, Concurrency: *conc, Log: stderr})
		if err == nil {
			err = rep.WriteJSON(filepath.Join(*out, "soak.json"))
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tollgate-soak:", err)
		return 1
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		fmt.Fprintln(stderr, "tollgate-soak:", err)
		return 1
	}
	fmt.Fprint(stdout, md.String())
	if err := os.WriteFile(filepath.Join(*out, "soak.md"), []byte(md.String()), 0o644); err != nil {
		fmt.Fprintln(stderr, "tollgate-soak:", err)
		return 1
	}
	if !rep.Passed() {
		return 1
	}
	return 0
}
