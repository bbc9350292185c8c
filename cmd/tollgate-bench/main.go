// Command tollgate-bench measures Tollgate's cost per request (`make
// bench`) as ratios to the plainest fair reverse proxy in front of the same
// upstream, beside a direct call. It starts the upstream simulator, the
// reference proxy and two gateways (the vendor in its plugin process, and
// in the gateway's) from --bin, runs interleaved closed-loop windows and
// writes latest.json, latest.md, latest.png and the profiles to --out.
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

	"github.com/tollgate-gw/tollgate/internal/bench"
	"github.com/tollgate-gw/tollgate/internal/testpg"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin", "directory holding tollgate, its tollgate-plugin-* and tollgate-upstream")
	window := fs.Duration("duration", 5*time.Second, "length of one measured window")
	rounds := fs.Int("rounds", 3, "rounds per case and concurrency, each one window of every target (at least 2)")
	out := fs.String("out", "bench-results", "directory for latest.json, latest.md and latest.png")
	profiles := fs.String("profiles", "", "directory for a CPU and an allocation profile of each case and gateway (default OUT/profiles)")
	noProfiles := fs.Bool("no-profiles", false, "take no profiles")
	seedRows := fs.Int("seed-rows", 0, "also measure completions at c=64 after writing this many log rows into the store")
	noProxy := fs.Bool("no-proxy-reference", false, "skip the reference proxy (and with it every ratio)")
	noInProcess := fs.Bool("no-in-process", false, "skip the gateway whose vendor runs in the gateway's process (transport = \"in-process\")")
	cases := fs.String("cases", "", "comma-separated case names to run (default: all)")
	logLevel := fs.String("gateway-log-level", "info", "the gateway's --log-level")
	noMetrics := fs.Bool("no-metrics", false, "run the gateways without /metrics (on by default, as in the budget's default configuration)")
	check := fs.Bool("check", false, "print PASS/FAIL against the performance budget; exit 1 on FAIL")
	fromJSON := fs.String("from-json", "", "render the table, chart and checks of an earlier results file instead of running")
	storeKind := fs.String("store", "badger", "the gateway's store: badger, or postgres (several instances' backend)")
	pgURL := fs.String("pg-url", "", "with --store postgres: an empty database; empty = start a local server (needs PostgreSQL's binaries)")
	noMedia := fs.Bool("no-media", false, "skip the media phase (a media job's gateway CPU, sync and async)")
	mediaJobs := fs.Int("media-jobs", 0, "jobs of each kind in the media phase (default 400)")
	onlyMedia := fs.Bool("only-media", false, "run the media phase alone (and profile its gateway unless --no-profiles); writes OUT/media.json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tollgate-bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *onlyMedia && (*noMedia || *storeKind != "badger" || *fromJSON != "") {
		fmt.Fprintln(stderr, "tollgate-bench: --only-media runs the media phase on badger: not with --no-media, --store or --from-json")
		return 2
	}

	// Made first, so a bad --out fails before minutes of measuring.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "tollgate-bench:", err)
		return 1
	}
	var res *bench.Results
	if *fromJSON != "" {
		r, err := bench.ReadJSON(*fromJSON)
		if err != nil {
			fmt.Fprintln(stderr, "tollgate-bench:", err)
			return 1
		}
		r.Evaluate()
		res = r
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		o := bench.Options{
			BinDir: *bin, Window: *window, Rounds: *rounds, SeedRows: *seedRows, LogLevel: *logLevel, Log: stderr,
			NoProxyReference: *noProxy, NoInProcess: *noInProcess, NoMetrics: *noMetrics, NoMedia: *noMedia,
			OnlyMedia: *onlyMedia, MediaJobs: *mediaJobs,
			ProfileDir: *profiles,
		}
		if o.ProfileDir == "" && !*noProfiles {
			o.ProfileDir = filepath.Join(*out, "profiles")
		}
		if *noProfiles {
			o.ProfileDir = ""
		}
		switch *storeKind {
		case "badger":
		case bench.StorePostgres:
			o.Store, o.PostgresURL = bench.StorePostgres, *pgURL
			if o.PostgresURL == "" {
				srv, err := startPostgres(ctx)
				if err != nil {
					fmt.Fprintln(stderr, "tollgate-bench: postgres:", err)
					return 1
				}
				defer srv.Stop()
				o.PostgresPID = srv.PID()
				if o.PostgresURL, err = srv.CreateDatabase(ctx, "tollgatebench"); err != nil {
					fmt.Fprintln(stderr, "tollgate-bench: postgres:", err)
					return 1
				}
			}
			if *seedRows > 0 {
				fmt.Fprintln(stderr, "tollgate-bench: --seed-rows is for the badger store (internal/ledgerbench measures PostgreSQL at a million rows)")
				return 2
			}
		default:
			fmt.Fprintf(stderr, "tollgate-bench: --store %q: want badger or postgres\n", *storeKind)
			return 2
		}
		if *cases != "" {
			o.Only = strings.Split(*cases, ",")
		}
		r, err := bench.Run(ctx, o)
		if err != nil {
			fmt.Fprintln(stderr, "tollgate-bench:", err)
			return 1
		}
		if *onlyMedia {
			// No chat cases: the media figures alone, beside (not over)
			// a full run's latest.*.
			if err := r.WriteJSON(filepath.Join(*out, "media.json")); err != nil {
				fmt.Fprintln(stderr, "tollgate-bench:", err)
				return 1
			}
			st := 0
			for _, m := range r.Media {
				fmt.Fprintf(stdout, "media %s (%s): gateway CPU %.0f µs/job, plugin %.0f µs/job, %d errors\n",
					m.Kind, m.Route, m.CPUPerJobUS, m.PluginCPUPerJobUS, m.Errors)
				if m.Errors > 0 {
					st = 1
				}
			}
			return st
		}
		res = r
	}

	if err := write(res, *out, stdout, *fromJSON == ""); err != nil {
		fmt.Fprintln(stderr, "tollgate-bench:", err)
		return 1
	}
	if res.Errors > 0 {
		fmt.Fprintf(stderr, "\n!!! %d REQUEST(S) FAILED during the run: the figures are not trustworthy !!!\n", res.Errors)
	}
	if *check {
		fmt.Fprintln(stdout)
		if err := res.WriteChecks(stdout); err != nil {
			fmt.Fprintln(stderr, "tollgate-bench:", err)
			return 1
		}
		if !res.Passed() {
			return 1
		}
	}
	if res.Errors > 0 {
		return 1
	}
	return 0
}

// write prints the table and writes latest.md, latest.png and, for a
// fresh run, latest.json.
func write(res *bench.Results, dir string, stdout io.Writer, withJSON bool) error {
	var md strings.Builder
	if err := res.WriteMarkdown(&md); err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, md.String()); err != nil {
		return err
	}
	if withJSON {
		if err := res.WriteJSON(filepath.Join(dir, "latest.json")); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	return bench.WriteChart(res, filepath.Join(dir, "latest.png"))
}

// startPostgres starts a local PostgreSQL as durable as Badger's default
// (the log written before a call returns, flushed soon after: fsync on,
// synchronous_commit off).
func startPostgres(context.Context) (*testpg.Server, error) {
	return testpg.Launch("fsync=on", "full_page_writes=on", "synchronous_commit=off", "shared_buffers=256MB")
}
