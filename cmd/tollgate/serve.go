package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/gateway"
	"github.com/tollgate-gw/tollgate/core/loglimit"
	"github.com/tollgate-gw/tollgate/pipeline"
)

func serveCommand(stages *pipeline.Registry) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the gateway (the embedded default when no --config is given)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "HCL config file", EnvVars: []string{"TOLLGATE_CONFIG"}},
			&cli.StringFlag{Name: "data-dir", Usage: "data directory (overrides store.dir)", EnvVars: []string{"TOLLGATE_DATA_DIR"}},
			&cli.StringFlag{Name: "listen", Usage: "address to listen on (overrides server.listen)"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "address to serve GET /metrics on (overrides server.metrics_listen)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error", EnvVars: []string{"TOLLGATE_LOG_LEVEL"}},
			&cli.BoolFlag{Name: "log-json", Usage: "log as JSON"},
		},
		Action: func(c *cli.Context) error {
			// A warning or error repeated in a flood is written at most
			// 5 times a second, with the count of those held back.
			log := loglimit.Wrap(hclog.New(&hclog.LoggerOptions{
				Name: "tollgate", Level: hclog.LevelFromString(c.String("log-level")),
				JSONFormat: c.Bool("log-json"), Output: os.Stderr,
			}), 0)
			if c.NArg() > 0 {
				return fmt.Errorf("serve takes no arguments (give the config with --config), got %q", c.Args().Slice())
			}
			load := func() (*config.Config, error) {
				cfg, err := loadConfig(c.String("config"))
				if err != nil {
					return nil, err
				}
				if d := c.String("data-dir"); d != "" {
					cfg.Store.Dir = d
				}
				if l := c.String("listen"); l != "" {
					cfg.Server.Listen = l
				}
				if l := c.String("metrics-listen"); l != "" {
					if _, _, err := net.SplitHostPort(l); err != nil {
						return nil, fmt.Errorf("--metrics-listen %q is not host:port (%v)", l, err)
					}
					cfg.Server.MetricsListen = l
				}
				return cfg, nil
			}
			cfg, err := load()
			if err != nil {
				return gateway.Recheck(c.Context, gateway.Options{Logger: log}, err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// SIGHUP reads the config again (docs/operations.md).
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			reload := make(chan struct{}, 1)
			go func() {
				for {
					select {
					case <-hup:
						select {
						case reload <- struct{}{}:
						default: // one is already waiting
						}
					case <-ctx.Done():
						return
					}
				}
			}()
			return gateway.Run(ctx, gateway.Options{
				Config: cfg, Logger: log, Stages: stages, Out: c.App.Writer, Command: self(c),
				Reload: reload, LoadConfig: load, MemoryLimit: memoryLimit(),
			})
		},
	}
}

// memoryLimit is how the gateway sets its soft memory limit, unless
// GOMEMLIMIT does. GOGC stays Go's 100 unless set: between Badger's
// background jobs the live heap is small, so collecting at 2x it costs
// little memory; the limit collects the peak of a memtable flush meeting
// a compaction early instead of letting the heap grow to twice that peak.
func memoryLimit() func(int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return func(n int64) { debug.SetMemoryLimit(n) }
}
