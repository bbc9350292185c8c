// Command tollgate is the gateway: `tollgate serve` runs it, `tollgate admin`
// manages accounts and keys, `tollgate version` says which build this is.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/pipeline"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := newApp(pipeline.NewRegistry()).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "tollgate:", err)
		os.Exit(1)
	}
}

func newApp(stages *pipeline.Registry) *cli.App {
	return &cli.App{
		Name:    "tollgate",
		Usage:   "a prepaid, pay-per-use API gateway in front of model providers",
		Version: version,
		Commands: []*cli.Command{
			serveCommand(stages),
			adminCommand(),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, "tollgate", version)
					return nil
				},
			},
		},
	}
}
