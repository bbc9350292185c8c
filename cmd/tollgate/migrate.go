package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/store/pgstore"
)

// migrateCommand is `tollgate migrate`: the postgres store's schema
// migrations alone, for operators who migrate before rolling out (serve
// applies them at start too, under the same lock).
func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "apply the postgres store's schema migrations and exit",
		ArgsUsage: " ",
		Description: "Applies the schema migrations embedded in this binary that the database of the config's\n" +
			"   store \"postgres\" block lacks, under the same advisory lock serve takes at start, so it is\n" +
			"   safe while instances run or start. A database migrated by a newer tollgate is refused.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "HCL config file with a store \"postgres\" block", EnvVars: []string{"TOLLGATE_CONFIG"}},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("migrate takes no arguments (give the config with --config), got %q", c.Args().Slice())
			}
			cfg, err := loadConfig(c.String("config"))
			if err != nil {
				return err
			}
			if !cfg.Store.Postgres() {
				return fmt.Errorf("the config's store is %q, which has no schema to migrate; migrate is for a store \"postgres\" block", cfg.Store.Kind)
			}
			log := hclog.New(&hclog.LoggerOptions{Name: "tollgate", Level: hclog.Warn, Output: os.Stderr})
			applied, err := pgstore.Migrate(c.Context, cfg.Store.URL, log)
			for _, name := range applied {
				fmt.Fprintln(c.App.Writer, "applied", name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "schema at version %d (%s applied now)\n", pgstore.SchemaVersion(), english.Count(len(applied), "migration"))
			return nil
		},
	}
}
