package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
	"github.com/tollgate-gw/tollgate/store/pgstore"
)

// Exit statuses of `tollgate audit` beside 0 (every rule holds).
const (
	exitViolations = 1 // a rule is broken
	exitNoAudit    = 2 // the audit could not run
)

// auditCommand is `tollgate audit`: the books proved, of a running
// gateway through its admin API (GET /admin/v1/audit), of a stopped
// gateway's data directory, or of a PostgreSQL database directly.
func auditCommand() *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "prove the books: every balance, hold, task and log row from the journal of money moves",
		ArgsUsage: " ",
		Description: "Reads the store's journal of money moves in one consistent snapshot, without pausing any\n" +
			"   call, and proves from it alone, for every account: the balance is its credits less its\n" +
			"   settled charges; the held sum is its open holds; every open hold is a call in flight or an\n" +
			"   unfinished task's; every ended task has one settlement and one log row; every row costs\n" +
			"   what its settlement charged; every settlement closes a hold. It names each account and\n" +
			"   entry that breaks a rule and exits 1 when one does (2 when it cannot audit).\n\n" +
			"   Without --data-dir, --config or --database it asks the gateway at --url. --data-dir audits\n" +
			"   a stopped gateway's Badger store; --config the store its config names (a PostgreSQL\n" +
			"   database may be audited while its instances serve); --database a PostgreSQL URL.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Value: "http://127.0.0.1:8080", EnvVars: []string{"TOLLGATE_URL"}, Usage: "the running gateway to audit"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"TOLLGATE_ADMIN_TOKEN"}, Usage: "its admin token (default: ./data/admin.token)"},
			&cli.StringFlag{Name: "data-dir", Usage: "audit the Badger store of a stopped gateway's data directory instead"},
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "audit the store this HCL config names instead"},
			&cli.StringFlag{Name: "database", Usage: "audit the PostgreSQL database at this URL instead"},
			&cli.IntFlag{Name: "max", Usage: fmt.Sprintf("violations to list (all are counted; default %d)", audit.DefaultMax)},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON (GET /admin/v1/audit's answer)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("audit takes no arguments, got %q", c.Args().Slice())
			}
			rep, err := auditReport(c)
			if err != nil {
				return cli.Exit("audit: "+err.Error(), exitNoAudit)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printAudit(c.App.Writer, rep)
			}
			if !rep.OK {
				return cli.Exit("", exitViolations)
			}
			return nil
		},
	}
}

// auditReport audits what the flags name.
func auditReport(c *cli.Context) (audit.Report, error) {
	var direct []string
	for _, f := range []string{"data-dir", "config", "database"} {
		if c.IsSet(f) {
			direct = append(direct, "--"+f)
		}
	}
	o := audit.Options{Max: c.Int("max")}
	switch {
	case len(direct) > 1:
		return audit.Report{}, fmt.Errorf("%s name two stores; give one", strings.Join(direct, " and "))
	case len(direct) == 0:
		return auditLive(c)
	case c.IsSet("database"):
		return auditDatabase(c, c.String("database"), o)
	case c.IsSet("data-dir"):
		return auditDataDir(c, c.String("data-dir"), o)
	}
	cfg, err := loadConfig(c.String("config"))
	if err != nil {
		return audit.Report{}, err
	}
	if cfg.Store.Postgres() {
		return auditDatabase(c, cfg.Store.URL, o)
	}
	return auditDataDir(c, cfg.Store.Dir, o)
}

func auditDatabase(c *cli.Context, url string, o audit.Options) (audit.Report, error) {
	b, err := pgstore.OpenBooks(c.Context, url)
	if err != nil {
		return audit.Report{}, err
	}
	defer b.Close()
	return audit.Run(c.Context, b, o)
}

// auditDataDir opens the Badger store of a data directory, as a start
// would (its journal replayed), without recovering its holds: a hold a
// crash left open is named, not released.
func auditDataDir(c *cli.Context, dir string, o audit.Options) (audit.Report, error) {
	path := filepath.Join(dir, "badger")
	if _, err := os.Stat(path); err != nil {
		return audit.Report{}, fmt.Errorf("no store in %s (%v): give the data directory a gateway served with (--data-dir)", dir, err)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "store", Level: hclog.Warn, Output: c.App.ErrWriter})
	st, err := badgerstore.Open(path, badgerstore.Options{Logger: log})
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return audit.Report{}, fmt.Errorf("a gateway is serving from %s (its store is locked): audit it live with --url", dir)
		}
		return audit.Report{}, fmt.Errorf("open the store in %s: %w", dir, err)
	}
	rep, err := audit.Run(c.Context, st, o)
	if cerr := st.Close(); cerr != nil && !errors.Is(cerr, store.ErrClosed) && err == nil {
		err = cerr
	}
	return rep, err
}

// auditLive asks the gateway at --url.
func auditLive(c *cli.Context) (audit.Report, error) {
	var rep audit.Report
	if c.String("data-dir") == "" {
		_ = c.Set("data-dir", "./data") // where the token file is, as for `tollgate admin`
	}
	base, token, err := adminEndpoint(c)
	if err != nil {
		return rep, err
	}
	path := "/audit"
	if n := c.Int("max"); n > 0 {
		path += "?max=" + strconv.Itoa(n)
	}
	req, err := http.NewRequestWithContext(c.Context, http.MethodGet, base+path, nil)
	if err != nil {
		return rep, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return rep, fmt.Errorf("no gateway answers at %s (%v); point --url at a running one, or audit a stopped one's store with --data-dir, --config or --database", strings.TrimSuffix(base, adminPrefix), op.Err)
		}
		return rep, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return rep, err
	}
	if resp.StatusCode != http.StatusOK {
		var e adminAPIError
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return rep, fmt.Errorf("GET %s%s: %d: %s", adminPrefix, path, resp.StatusCode, msg)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, fmt.Errorf("GET %s%s answered unreadable JSON: %w", adminPrefix, path, err)
	}
	return rep, nil
}

// printAudit writes a report for a person: one line when it passed, the
// counts and each violation listed when it did not.
func printAudit(w io.Writer, rep audit.Report) {
	what := fmt.Sprintf("%s, %s, %s, %s, %s", english.Count(rep.Accounts, "account"),
		english.Count(int(rep.Entries), "entry", "entries"), english.Count(int(rep.Rows), "log row"),
		english.Count(int(rep.Tasks), "task"), english.Count(rep.OpenHolds, "open hold"))
	when := fmt.Sprintf("snapshot of %s, %.2f s", rep.At.UTC().Format(time.RFC3339), float64(rep.TookMS)/1000)
	if rep.OK {
		fmt.Fprintf(w, "the books hold: %s proved (%s)\n", what, when)
		return
	}
	var rules []string
	for _, r := range audit.Rules {
		if n := rep.ByRule[r]; n > 0 {
			rules = append(rules, fmt.Sprintf("%s %d", r, n))
		}
	}
	fmt.Fprintf(w, "the books fail: %s (%s) over %s (%s)\n", english.Count(rep.Count, "violation"), strings.Join(rules, ", "), what, when)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tACCOUNT\tENTRY\tWHAT")
	for _, v := range rep.Violations {
		entry := "-"
		if v.Entry != 0 {
			entry = strconv.FormatUint(v.Entry, 10)
		}
		account := v.AccountID
		if account == "" {
			account = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Rule, account, entry, v.Message)
	}
	tw.Flush()
	if n := rep.Count - len(rep.Violations); n > 0 {
		fmt.Fprintf(w, "... and %s more (--max to list them)\n", english.Count(n, "violation"))
	}
}
