// Command tollgate-upstream runs the vendor simulators (internal/vendorsim)
// on one port: OpenAI, Anthropic and Gemini chat APIs answered by the sim
// engine, for manual tests, the agent end-to-end runs and benchmarks.
//
//	tollgate-upstream --listen 127.0.0.1:9999 --api-key X [--fault SPEC] [--latency DUR] [--slow DUR]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tollgate-upstream:", err)
		os.Exit(1)
	}
}

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("tollgate-upstream", flag.ContinueOnError)
	fs.SetOutput(log)
	listen := fs.String("listen", "127.0.0.1:9999", "address to listen on")
	key := fs.String("api-key", "", "API key every call must carry (empty: any key)")
	fault := fs.String("fault", "", "default sim knobs, marker syntax without brackets (e.g. \"slow=5ms,chunks=20\")")
	latency := fs.Duration("latency", 0, "wait before each answer")
	slow := fs.Duration("slow", 0, "wait between stream events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var k sim.Knobs
	if err := sim.ParseSpec(*fault, &k); err != nil {
		return err
	}
	if *latency > 0 {
		k.Latency = *latency
	}
	if *slow > 0 {
		k.Slow = *slow
	}
	srv := vendorsim.New(vendorsim.Options{APIKey: *key, Knobs: k})
	if err := srv.Start(*listen); err != nil {
		return err
	}
	fmt.Fprintf(log, "tollgate-upstream: serving OpenAI, Anthropic and Gemini chat APIs on %s\n", srv.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return srv.Close()
	}
	return nil
}
