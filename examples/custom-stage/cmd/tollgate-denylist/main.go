// Command tollgate-denylist is Tollgate with one extra stage compiled in:
// the way an integrator ships a custom stage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/gateway"
	"github.com/tollgate-gw/tollgate/examples/custom-stage/denylist"
	"github.com/tollgate-gw/tollgate/pipeline"
)

func main() {
	path := flag.String("config", "", "HCL config naming prompt-denylist in pipeline.stages")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "usage: tollgate-denylist --config FILE")
		os.Exit(2)
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reg := pipeline.NewRegistry()
	reg.Register("prompt-denylist", denylist.New)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := hclog.New(&hclog.LoggerOptions{Name: "tollgate", Level: hclog.Info})
	if err := gateway.Run(ctx, gateway.Options{Config: cfg, Logger: log, Stages: reg}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
