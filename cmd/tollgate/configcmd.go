package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/gateway"
	"github.com/tollgate-gw/tollgate/pipeline"
)

// configCommand is `tollgate config check`: every check `serve` makes at
// start, without serving.
func configCommand(stages *pipeline.Registry) *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "check a config file",
		Subcommands: []*cli.Command{{
			Name:      "check",
			Usage:     "validate a config as serve would, and print the effective config with secrets masked",
			ArgsUsage: " ",
			Description: "Loads the file (or the embedded default without --config), starts and configures the\n" +
				"   vendor plugins it names, builds the pipeline, then stops: whatever serve would refuse\n" +
				"   at start is refused here, by file:line. The data directory is not touched.\n" +
				"   The effective config goes to stdout, warnings and the verdict to stderr.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "HCL config file (default: the embedded default)", EnvVars: []string{"TOLLGATE_CONFIG"}},
				&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only problems, not the effective config"},
			},
			Action: func(c *cli.Context) error { return configCheck(c, stages) },
		}},
	}
}

func configCheck(c *cli.Context, stages *pipeline.Registry) error {
	if c.NArg() > 0 {
		return fmt.Errorf("config check takes no arguments (give the file with --config), got %q", c.Args().Slice())
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "tollgate", Level: hclog.Error, Output: c.App.ErrWriter})
	cfg, err := loadConfig(c.String("config"))
	if err != nil {
		return gateway.Recheck(c.Context, gateway.Options{Logger: log, Stages: stages}, err)
	}
	for _, w := range cfg.Warnings() {
		warnf(c, "%s", w)
	}
	if err := gateway.Check(c.Context, gateway.Options{Config: cfg, Logger: log, Stages: stages}); err != nil {
		return err
	}
	name := cfg.Source
	if name == "" {
		name = "the embedded default"
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.App.Writer, "# The effective configuration of %s, secrets masked.\n", name)
		if len(cfg.Disabled) > 0 {
			fmt.Fprintf(c.App.Writer, "# Channels left out with enabled = false: %s.\n", strings.Join(cfg.Disabled, ", "))
		}
		fmt.Fprintf(c.App.Writer, "\n%s", config.Render(config.Masked(cfg)))
	}
	fmt.Fprintf(c.App.ErrWriter, "ok: %s is valid (%s, %s, vendors: %s)\n",
		name, english.Count(len(cfg.Models), "model"), english.Count(len(cfg.Channels), "channel"), strings.Join(cfg.PluginNames(), ", "))
	return nil
}

// loadConfig reads path, or the embedded default when path is empty.
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Default(os.Getenv), nil
	}
	return config.Load(path)
}
