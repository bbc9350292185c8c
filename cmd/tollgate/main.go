// Command tollgate is the gateway: `tollgate serve` runs it, `tollgate admin`
// manages accounts and keys, `tollgate config check` validates a config,
// `tollgate kb` imports knowledge bases, `tollgate migrate` migrates a
// postgres store's schema, `tollgate audit` proves the books, `tollgate
// version` says which build this is.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/pipeline"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr, pipeline.NewRegistry()))
}

// run is the whole command line: every failure of every command reaches
// the operator here, once, as "error: ..." on stderr (one line per problem
// of a config), and sets the exit status.
func run(args []string, stdout, stderr io.Writer, stages *pipeline.Registry) int {
	app := newApp(stages)
	app.Writer, app.ErrWriter = stdout, stderr
	if len(args) > 0 {
		app.Metadata = map[string]any{metaSelf: selfOf(args[0])}
	}
	err := app.Run(args)
	if err == nil {
		return 0
	}
	code := 1
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if msg := err.Error(); msg != "" {
		for _, line := range strings.Split(msg, "\n") {
			fmt.Fprintln(stderr, "error:", line)
		}
	}
	return code
}

func newApp(stages *pipeline.Registry) *cli.App {
	app := &cli.App{
		Name:                 "tollgate",
		Usage:                "a prepaid, pay-per-use API gateway in front of model providers",
		Version:              versionLine(),
		EnableBashCompletion: true,
		// Errors are printed once by run, not by urfave/cli.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			serveCommand(stages),
			adminCommand(),
			kbCommand(),
			configCommand(stages),
			migrateCommand(),
			auditCommand(),
			completionCommand(),
			{
				Name:      "version",
				Usage:     "print the version, the commit and the build date",
				ArgsUsage: " ",
				Action: func(c *cli.Context) error {
					if c.NArg() > 0 {
						return fmt.Errorf("version takes no arguments, got %q", c.Args().Slice())
					}
					fmt.Fprintln(c.App.Writer, "tollgate", versionLine())
					return nil
				},
			},
		},
	}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, "tollgate", c.App.Version) }
	app.Action = groupAction
	guide(app.Commands, "tollgate")
	return app
}

// guide gives every command the same usage errors: a bad flag or an
// unknown subcommand answers what was wrong, a near name, and where help is.
func guide(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		path := parent + " " + c.Name
		c.OnUsageError = usageError(path)
		if len(c.Subcommands) > 0 {
			if c.Action == nil {
				c.Action = groupAction
			}
			guide(c.Subcommands, path)
		}
	}
}

func usageError(path string) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, _ bool) error { return flagError(path, c.Command.Flags, err) }
}

// flagError words a flag parse error: the flag, a near name, where help is.
func flagError(path string, flags []cli.Flag, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		msg = "unknown flag --" + name
		if s := config.Suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	}
	return fmt.Errorf("%s: %s; see %s --help", path, msg, path)
}

// groupAction runs for a command that only groups others: without
// arguments it shows help, with an unknown one it says so.
func groupAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	name := c.Args().First()
	var names []string
	subs := c.App.Commands
	path := c.App.Name
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		subs = c.Command.Subcommands
		path = "tollgate " + cmdPath(c)
	}
	for _, s := range subs {
		names = append(names, s.Names()...)
	}
	msg := fmt.Sprintf("%s: unknown command %q", path, name)
	if s := config.Suggest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Errorf("%s; the commands are %s; see %s --help", msg, strings.Join(visibleNames(subs), ", "), path)
}

func visibleNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c.Name)
		}
	}
	return out
}

// cmdPath names the running command, as "admin key delete".
func cmdPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" && x.Command.Name != c.App.Name {
			names = append([]string{x.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// warnf prints a warning: the command goes on.
func warnf(c *cli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.ErrWriter, "warning: "+format+"\n", args...)
}
