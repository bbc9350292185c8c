package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
)

// adminCommand is `tollgate admin ...`: a client of the admin API
// (/admin/v1) for accounts, credits, keys and agents.
func adminCommand() *cli.Command {
	keyFlags := []cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "key name"},
		&cli.StringFlag{Name: "allowed-models", Usage: "comma-separated model ids the key may call"},
		&cli.BoolFlag{Name: "allow-none", Usage: "the key may call no model (allowed_models = [])"},
		&cli.BoolFlag{Name: "allow-all", Usage: "the key may call every model (allowed_models = null)"},
		&cli.StringFlag{Name: "expires-at", Usage: `RFC 3339 expiry, or "never"`},
		&cli.BoolFlag{Name: "logs-account-scope", Usage: "the key may read the whole account's logs"},
		&cli.StringFlag{Name: "kind", Usage: "key kind: console, employee, desktop or agent"},
		&cli.StringFlag{Name: "spend-cap", Usage: `what the key may spend over its life, a decimal, or "none"`},
	}
	cmd := &cli.Command{
		Name:  "admin",
		Usage: "manage accounts, credits, keys, agents and console users through the admin API",
		Flags: adminGlobalFlags(true),
		Subcommands: []*cli.Command{
			{
				Name:    "account",
				Aliases: []string{"accounts"},
				Usage:   "create, list, inspect, disable and credit accounts",
				Subcommands: []*cli.Command{
					{
						Name: "create", Usage: "create an account", ArgsUsage: " ",
						Flags: []cli.Flag{
							&cli.StringFlag{Name: "name", Usage: "account name (required)"},
							&cli.StringFlag{Name: "initial-credit", Usage: `starting credit, a decimal (default: the sign-up credit; "0" for none)`},
						},
						Action: adminAccountCreate,
					},
					{Name: "list", Usage: "list accounts", ArgsUsage: " ", Action: adminAccountList},
					{Name: "get", Usage: "show an account", ArgsUsage: "ACCOUNT_ID", Action: adminAccountGet},
					{Name: "disable", Usage: "disable an account", ArgsUsage: "ACCOUNT_ID", Action: adminAccountStatus("disabled")},
					{Name: "enable", Usage: "enable an account", ArgsUsage: "ACCOUNT_ID", Action: adminAccountStatus("active")},
					{
						Name: "update", Usage: "rename an account or set its limits", ArgsUsage: "ACCOUNT_ID",
						Flags: []cli.Flag{
							&cli.StringFlag{Name: "name", Usage: "new name"},
							&cli.IntFlag{Name: "rpm", Usage: "requests per minute (0: the config's)"},
							&cli.IntFlag{Name: "concurrency", Usage: "requests in flight (0: the config's)"},
							&cli.StringFlag{Name: "allowed-models", Usage: "the organization allowlist its agents' models are checked against, comma-separated"},
							&cli.BoolFlag{Name: "allow-none", Usage: "its agents may use no model (allowed_models = [])"},
							&cli.BoolFlag{Name: "allow-all", Usage: "its agents may use every model (allowed_models = null)"},
						},
						Action: adminAccountUpdate,
					},
					{
						Name: "credit", Usage: "add credit (negative for a correction)", ArgsUsage: "ACCOUNT_ID",
						Flags: []cli.Flag{
							&cli.StringFlag{Name: "amount", Usage: "decimal amount, e.g. 25 or -1.50"},
							&cli.StringFlag{Name: "note", Usage: "ledger note"},
						},
						Action: adminAccountCredit,
					},
				},
			},
			{
				Name:    "key",
				Aliases: []string{"keys"},
				Usage:   "create, list, reveal, update and delete API keys",
				Subcommands: []*cli.Command{
					{
						Name: "create", Usage: "create a key; its raw value is printed once", ArgsUsage: "ACCOUNT_ID",
						Flags: append([]cli.Flag{
							&cli.BoolFlag{Name: "disabled", Usage: "create the key disabled"},
						}, keyFlags...),
						Action: adminKeyCreate,
					},
					{Name: "list", Usage: "list an account's keys", ArgsUsage: "ACCOUNT_ID", Action: adminKeyList},
					{Name: "get", Usage: "show a key, with what it spent and its spend cap", ArgsUsage: "KEY_ID", Action: adminKeyGet},
					{Name: "reveal", Usage: "print a key's raw value", ArgsUsage: "KEY_ID", Action: adminKeyReveal},
					{
						Name: "update", Usage: "change a key; only the flags given change", ArgsUsage: "KEY_ID",
						Flags: append([]cli.Flag{
							&cli.BoolFlag{Name: "enable", Usage: "enable the key"},
							&cli.BoolFlag{Name: "disable", Usage: "disable the key"},
						}, keyFlags...),
						Action: adminKeyUpdate,
					},
					{Name: "delete", Usage: "delete a key", ArgsUsage: "KEY_ID", Action: adminKeyDelete},
				},
			},
		},
	}
	cmd.Subcommands = append(cmd.Subcommands, adminAgentCommands()...)
	cmd.Subcommands = append(cmd.Subcommands, adminUserCommands()...)
	cmd.Subcommands = append(cmd.Subcommands, adminTopUpCommands()...)
	addGlobalFlags(cmd.Subcommands)
	return cmd
}

// adminGlobalFlags are the flags every admin command takes, before or after
// its subcommand and arguments (`tollgate admin key list ID --json`). Only
// the `admin` level reads the environment, so a flag given anywhere on
// the command line wins over it.
func adminGlobalFlags(env bool) []cli.Flag {
	envs := func(name string) []string {
		if env {
			return []string{name}
		}
		return nil
	}
	const cat = "admin API"
	return []cli.Flag{
		&cli.StringFlag{Name: "url", Value: "http://127.0.0.1:8080", EnvVars: envs("TOLLGATE_URL"), Usage: "gateway address", Category: cat},
		&cli.StringFlag{Name: "token", EnvVars: envs("TOLLGATE_ADMIN_TOKEN"), Usage: "admin token (default: <data-dir>/admin.token)", Category: cat},
		&cli.StringFlag{Name: "data-dir", Value: "./data", EnvVars: envs("TOLLGATE_DATA_DIR"), Usage: "the gateway's data directory, where admin.token is when no token is given", Category: cat},
		&cli.BoolFlag{Name: "json", Usage: "print the API's JSON as it is", Category: cat},
	}
}

func addGlobalFlags(cmds []*cli.Command) {
	for _, c := range cmds {
		c.Flags = append(c.Flags, adminGlobalFlags(false)...)
		addGlobalFlags(c.Subcommands)
	}
}

// global reads an admin flag where it was given last on the command line
// (nearest the subcommand), else from the environment, else its default.
func global(c *cli.Context, name string) string {
	if x := givenAt(c, name); x != nil {
		return x.String(name)
	}
	return c.String(name)
}

func globalJSON(c *cli.Context) bool {
	if x := givenAt(c, "json"); x != nil {
		return x.Bool("json")
	}
	return false
}

// givenAt is the command, nearest the subcommand, at which an admin flag
// was given on the command line or by its environment variable; nil when
// it was not.
func givenAt(c *cli.Context, name string) *cli.Context {
	for _, x := range c.Lineage() {
		if x.Command != nil && x.IsSet(name) {
			return x
		}
	}
	return nil
}

// adminAccount, adminKey and adminWallet mirror the admin API's JSON, for the human output.
type adminAccount struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	RPM         int        `json:"rpm"`
	Concurrency int        `json:"concurrency"`
	Balance     money.Nano `json:"balance"`
	Held        money.Nano `json:"held"`
	Available   money.Nano `json:"available"`
	// AllowedModels is the organization allowlist (null: every model).
	AllowedModels []string `json:"allowed_models"`
}

type adminKey struct {
	ID               string     `json:"id"`
	Key              string     `json:"key"`
	AccountID        string     `json:"account_id"`
	Name             string     `json:"name"`
	Prefix           string     `json:"prefix"`
	AllowedModels    []string   `json:"allowed_models"`
	ExpiresAt        *time.Time `json:"expires_at"`
	Enabled          bool       `json:"enabled"`
	LogsAccountScope bool       `json:"logs_account_scope"`
	Kind             string     `json:"kind"`
	Revealable       bool       `json:"revealable"`
	CreatedAt        time.Time  `json:"created_at"`
	AgentID          *string    `json:"agent_id"`
	SpendCap         *string    `json:"spend_cap"`
	Spent            *string    `json:"spent"`
}

type adminWallet struct {
	AccountID string     `json:"account_id"`
	Balance   money.Nano `json:"balance"`
	Held      money.Nano `json:"held"`
	Available money.Nano `json:"available"`
}

func adminAccountCreate(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("account create takes no arguments, got %q", c.Args().Slice())
	}
	if strings.TrimSpace(c.String("name")) == "" {
		return errors.New("account create: --name is required")
	}
	body := map[string]any{"name": c.String("name")}
	if c.IsSet("initial-credit") {
		n, err := adminAmount("initial-credit", c.String("initial-credit"))
		if err != nil {
			return err
		}
		body["initial_credit"] = n
	}
	var a adminAccount
	return adminCall(c, http.MethodPost, "/accounts", body, &a, func(w io.Writer) { adminPrintAccount(w, a) })
}

func adminAccountList(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("account list takes no arguments, got %q", c.Args().Slice())
	}
	var list struct{ Data []adminAccount }
	return adminCall(c, http.MethodGet, "/accounts", nil, &list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tBALANCE\tAVAILABLE\tCREATED")
		for _, a := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Status, a.Balance, a.Available, adminStamp(a.CreatedAt))
		}
		_ = tw.Flush()
	})
}

func adminAccountGet(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	var a adminAccount
	return adminCall(c, http.MethodGet, "/accounts/"+id, nil, &a, func(w io.Writer) { adminPrintAccount(w, a) })
}

func adminAccountStatus(status string) cli.ActionFunc {
	return func(c *cli.Context) error {
		c, id, err := adminWithID(c, "ACCOUNT_ID")
		if err != nil {
			return err
		}
		var a adminAccount
		return adminCall(c, http.MethodPatch, "/accounts/"+id, map[string]any{"status": status}, &a, func(w io.Writer) { adminPrintAccount(w, a) })
	}
}

func adminAccountUpdate(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	body := map[string]any{}
	if c.IsSet("name") {
		body["name"] = c.String("name")
	}
	for _, f := range []string{"rpm", "concurrency"} {
		if c.IsSet(f) {
			body[f] = c.Int(f)
		}
	}
	if err := adminAllowlist(c, body); err != nil {
		return err
	}
	if len(body) == 0 {
		return errors.New("account update: give at least one of --name, --rpm, --concurrency, --allowed-models, --allow-none, --allow-all")
	}
	var a adminAccount
	return adminCall(c, http.MethodPatch, "/accounts/"+id, body, &a, func(w io.Writer) { adminPrintAccount(w, a) })
}

func adminAccountCredit(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	if !c.IsSet("amount") {
		return errors.New("account credit: --amount is required")
	}
	n, err := adminAmount("amount", c.String("amount"))
	if err != nil {
		return err
	}
	var wl adminWallet
	return adminCall(c, http.MethodPost, "/accounts/"+id+"/credits", map[string]any{"amount": n, "note": c.String("note")}, &wl,
		func(w io.Writer) {
			adminLines(w, "account_id", wl.AccountID, "balance", wl.Balance.String(), "held", wl.Held.String(), "available", wl.Available.String())
		})
}

func adminKeyCreate(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	if !c.IsSet("name") {
		return errors.New("key create: --name is required")
	}
	body, err := adminKeyBody(c)
	if err != nil {
		return err
	}
	// A new key states every field, so the server's defaults never surprise.
	if _, ok := body["allowed_models"]; !ok {
		body["allowed_models"] = nil
	}
	if _, ok := body["expires_at"]; !ok {
		body["expires_at"] = nil
	}
	body["enabled"] = !c.Bool("disabled")
	body["logs_account_scope"] = c.Bool("logs-account-scope")
	adminKeyWarnings(c, body)
	var k adminKey
	return adminCall(c, http.MethodPost, "/accounts/"+id+"/keys", body, &k, func(w io.Writer) {
		adminPrintKey(w, k, false)
		if k.Revealable {
			fmt.Fprintf(w, "\nThe raw key is shown once here; store it now (an admin can print it again with: %s admin key reveal %s).\n", self(c), k.ID)
		} else {
			fmt.Fprintln(w, "\nThe raw key is shown once; store it now.")
		}
	})
}

// adminKeyWarnings warns, before a key is created or changed, of what
// makes it useless: model ids this gateway does not serve (calls get
// model_not_found) and an expiry already past (calls get "api key
// expired"). The key is still written: the operator may know better.
func adminKeyWarnings(c *cli.Context, body map[string]any) {
	if exp, ok := body["expires_at"].(string); ok {
		if t, err := time.Parse(time.RFC3339, exp); err == nil && !t.After(time.Now()) {
			warnf(c, "--expires-at %s is in the past: the key is expired from the start (its calls get 401 api key expired)", exp)
		}
	}
	ids, _ := body["allowed_models"].([]string)
	if len(ids) == 0 {
		return
	}
	known, ok := adminModels(c)
	if !ok {
		return // an old or unreachable gateway: the create call will say more
	}
	for _, id := range ids {
		if !slices.Contains(known, id) {
			hint := ""
			if s := config.Suggest(id, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			warnf(c, "--allowed-models: %q is not a model of this gateway%s; the key may list it, but calls to it get model_not_found", id, hint)
		}
	}
}

// adminModels lists the gateway's model ids and aliases from its public
// registry (GET /api/v1/models/public, no key needed).
func adminModels(c *cli.Context) ([]string, bool) {
	base := strings.TrimRight(global(c, "url"), "/")
	req, err := http.NewRequestWithContext(c.Context, http.MethodGet, base+"/api/v1/models/public", nil)
	if err != nil {
		return nil, false
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&list) != nil {
		return nil, false
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(append(ids, m.ID), m.Aliases...)
	}
	return ids, true
}

func adminKeyList(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	var list struct{ Data []adminKey }
	return adminCall(c, http.MethodGet, "/accounts/"+id+"/keys", nil, &list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tENABLED\tMODELS\tEXPIRES\tKIND")
		for _, k := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.Enabled, adminModelList(k.AllowedModels), adminExpiry(k.ExpiresAt), k.Kind)
		}
		_ = tw.Flush()
	})
}

func adminKeyReveal(c *cli.Context) error {
	c, id, err := adminWithID(c, "KEY_ID")
	if err != nil {
		return err
	}
	var k adminKey
	return adminCall(c, http.MethodGet, "/keys/"+id+"/reveal", nil, &k, func(w io.Writer) { adminLines(w, "id", k.ID, "key", k.Key) })
}

func adminKeyUpdate(c *cli.Context) error {
	c, id, err := adminWithID(c, "KEY_ID")
	if err != nil {
		return err
	}
	body, err := adminKeyBody(c)
	if err != nil {
		return err
	}
	switch {
	case c.Bool("enable") && c.Bool("disable"):
		return errors.New("key update: --enable and --disable exclude each other")
	case c.Bool("enable"):
		body["enabled"] = true
	case c.Bool("disable"):
		body["enabled"] = false
	}
	if c.IsSet("logs-account-scope") {
		body["logs_account_scope"] = c.Bool("logs-account-scope")
	}
	if len(body) == 0 {
		return errors.New("key update: nothing to change; give at least one flag")
	}
	adminKeyWarnings(c, body)
	var k adminKey
	return adminCall(c, http.MethodPatch, "/keys/"+id, body, &k, func(w io.Writer) { adminPrintKey(w, k, true) })
}

func adminKeyDelete(c *cli.Context) error {
	c, id, err := adminWithID(c, "KEY_ID")
	if err != nil {
		return err
	}
	return adminCall(c, http.MethodDelete, "/keys/"+id, nil, nil, func(w io.Writer) { fmt.Fprintf(w, "deleted key %s\n", id) })
}

// adminKeyBody collects the key fields shared by create and update; only flags
// given appear.
func adminKeyBody(c *cli.Context) (map[string]any, error) {
	body := map[string]any{}
	if c.IsSet("name") {
		body["name"] = c.String("name")
	}
	if err := adminAllowlist(c, body); err != nil {
		return nil, err
	}
	if c.IsSet("spend-cap") {
		limit, err := adminSpendCap(c.String("spend-cap"))
		if err != nil {
			return nil, err
		}
		body["spend_cap"] = limit
	}
	if c.IsSet("expires-at") {
		switch v := strings.TrimSpace(c.String("expires-at")); v {
		case "", "never":
			body["expires_at"] = nil
		default:
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return nil, fmt.Errorf("--expires-at: %q is not an RFC 3339 time such as 2030-01-02T15:04:05Z (or \"never\")", v)
			}
			body["expires_at"] = t.Format(time.RFC3339)
		}
	}
	if c.IsSet("kind") {
		body["kind"] = c.String("kind")
	}
	return body, nil
}

// adminAllowlist reads --allowed-models, --allow-none and --allow-all
// into body's allowed_models (a key's, or an organization's).
func adminAllowlist(c *cli.Context, body map[string]any) error {
	n := 0
	for _, f := range []string{"allowed-models", "allow-none", "allow-all"} {
		if c.IsSet(f) {
			n++
		}
	}
	if n > 1 {
		return errors.New("--allowed-models, --allow-none and --allow-all exclude each other")
	}
	switch {
	case c.IsSet("allowed-models"):
		var ids []string
		for _, m := range strings.Split(c.String("allowed-models"), ",") {
			if m = strings.TrimSpace(m); m != "" {
				ids = append(ids, m)
			}
		}
		if len(ids) == 0 {
			return errors.New("--allowed-models: give model ids separated by commas (or --allow-none)")
		}
		body["allowed_models"] = ids
	case c.Bool("allow-none"):
		body["allowed_models"] = []string{}
	case c.Bool("allow-all"):
		body["allowed_models"] = nil
	}
	return nil
}

// adminWithID takes the command's one positional argument, an id, and
// lets flags follow it (`account credit ID --amount 5`).
func adminWithID(c *cli.Context, what string) (*cli.Context, string, error) {
	c, id, err := positional(c, what)
	if err != nil {
		return nil, "", err
	}
	if strings.TrimSpace(id) == "" || strings.Contains(id, "/") {
		return nil, "", fmt.Errorf("%s: %q is not a valid %s", cmdPath(c), id, what)
	}
	return c, id, nil
}

// positional takes the command's one positional argument and lets flags
// follow it (`kb import ./notes --kb team`): urfave/cli stops at the first
// argument, so the rest is parsed here over the flags already given. That
// is also why no flag after it can be marked Required.
func positional(c *cli.Context, what string) (*cli.Context, string, error) {
	if c.NArg() == 0 {
		return nil, "", fmt.Errorf("%s: missing %s", cmdPath(c), what)
	}
	arg, rest := c.Args().First(), c.Args().Tail()
	if len(rest) == 0 {
		return c, arg, nil
	}
	set := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(set); err != nil {
			return nil, "", err
		}
	}
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if c.IsSet(name) {
			if err := set.Set(name, fmt.Sprint(c.Value(name))); err != nil {
				return nil, "", err
			}
		}
	}
	err := set.Parse(rest)
	// -h after the argument: ErrHelp, or the help flag set when urfave added it.
	if h := set.Lookup("help"); errors.Is(err, flag.ErrHelp) || (err == nil && h != nil && h.Value.String() == "true") {
		if err := cli.ShowCommandHelp(c.Lineage()[1], c.Command.Name); err != nil {
			return nil, "", err
		}
		return nil, "", cli.Exit("", 0) // help printed, nothing else to do
	}
	if err != nil {
		return nil, "", flagError("tollgate "+cmdPath(c), c.Command.Flags, err)
	}
	if set.NArg() > 0 {
		return nil, "", fmt.Errorf("%s: unexpected argument %q (it takes one %s)", cmdPath(c), set.Arg(0), what)
	}
	c2 := cli.NewContext(c.App, set, c)
	c2.Command = c.Command
	return c2, arg, nil
}

func adminAmount(flagName, s string) (string, error) {
	n, err := money.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--%s: %v", flagName, err)
	}
	return n.String(), nil
}

// adminAPIError is the admin API's error body.
type adminAPIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

// adminCall sends one admin request. On success it prints the body verbatim with
// --json, else decodes into out and runs human. A non-2xx answer prints the
// API's message to stderr and exits 1.
func adminCall(c *cli.Context, method, path string, body, out any, human func(io.Writer)) error {
	base, token, err := adminEndpoint(c)
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.Context, method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("no gateway answers at %s (%v); is "+self(c)+" serve running? Point --url (or $TOLLGATE_URL) at its listen address", strings.TrimSuffix(base, adminPrefix), op.Err)
		}
		return fmt.Errorf("admin API at %s: %w", base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("admin API at %s: reading the answer: %w", base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e adminAPIError
		msg := strings.TrimSpace(string(raw))
		full := adminPrefix + path
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = strings.TrimSuffix(e.Error.Message, " ("+method+" "+full+")") // the path is said once
			if e.Error.Code != "" {
				msg += " (" + e.Error.Code + ")"
			}
		}
		if msg == "" {
			msg = resp.Status
		}
		return cli.Exit(fmt.Sprintf("%s %s: %d: %s", method, full, resp.StatusCode, msg), 1)
	}
	if globalJSON(c) {
		_, _ = c.App.Writer.Write(raw)
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			_, _ = io.WriteString(c.App.Writer, "\n")
		}
		return nil
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("admin API answered %s %s with unreadable JSON: %w", method, path, err)
		}
	}
	human(c.App.Writer)
	return nil
}

// adminEndpoint resolves the API root and the admin token: --token or
// TOLLGATE_ADMIN_TOKEN, else the token file the gateway writes.
func adminEndpoint(c *cli.Context) (string, string, error) {
	base := strings.TrimRight(global(c, "url"), "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return "", "", fmt.Errorf("--url %q: want http:// or https://", base)
	}
	token := strings.TrimSpace(global(c, "token"))
	if token == "" {
		var err error
		if token, err = adminTokenFile(c); err != nil {
			return "", "", err
		}
	}
	return base + adminPrefix, token, nil
}

// adminTokenFile reads the admin token the gateway wrote into its data
// directory: --data-dir (or TOLLGATE_DATA_DIR), else ./data, else the
// data folder beside the binary's own folder (make run's bin/ and data/),
// so the CLI finds it from any folder.
func adminTokenFile(c *cli.Context) (string, error) {
	dirs := []string{global(c, "data-dir")}
	if givenAt(c, "data-dir") == nil {
		if exe, err := os.Executable(); err == nil {
			beside := filepath.Join(filepath.Dir(filepath.Dir(exe)), "data")
			if abs, _ := filepath.Abs(dirs[0]); abs != beside {
				dirs = append(dirs, beside)
			}
		}
	}
	var tried []string
	for _, d := range dirs {
		path := filepath.Join(d, "admin.token")
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			tried = append(tried, path)
			continue
		case err != nil:
			return "", fmt.Errorf("no admin token: reading %s: %v; pass --token (or TOLLGATE_ADMIN_TOKEN)", path, err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("no admin token: %s is empty", path)
	}
	missing := tried[0] + " does not exist"
	if len(tried) > 1 {
		missing = "neither " + strings.Join(tried, " nor ") + " exists"
	}
	return "", fmt.Errorf("no admin token: %s (%s serve writes admin.token into its data directory); "+
		"point --data-dir or TOLLGATE_DATA_DIR at the gateway's data directory, or pass --token (or TOLLGATE_ADMIN_TOKEN)",
		missing, self(c))
}

// adminPrefix is where the admin API is mounted.
const adminPrefix = "/admin/v1"

func adminPrintAccount(w io.Writer, a adminAccount) {
	kv := []string{"id", a.ID, "name", a.Name, "status", a.Status,
		"balance", a.Balance.String(), "held", a.Held.String(), "available", a.Available.String(),
		"rpm", adminLimit(a.RPM), "concurrency", adminLimit(a.Concurrency)}
	if a.AllowedModels != nil {
		// The organization allowlist, shown when it restricts.
		kv = append(kv, "allowed_models", adminModelList(a.AllowedModels))
	}
	adminLines(w, append(kv, "created_at", adminStamp(a.CreatedAt))...)
}

// adminPrintKey prints a key; revealable only where it informs (a new
// key's answer says it in words).
func adminPrintKey(w io.Writer, k adminKey, revealable bool) {
	kv := []string{"id", k.ID}
	if k.Key != "" {
		kv = append(kv, "key", k.Key)
	}
	kv = append(kv, "account_id", k.AccountID, "name", k.Name, "prefix", k.Prefix,
		"enabled", fmt.Sprint(k.Enabled), "allowed_models", adminModelList(k.AllowedModels),
		"expires_at", adminExpiry(k.ExpiresAt), "logs_account_scope", fmt.Sprint(k.LogsAccountScope),
		"kind", k.Kind)
	if k.AgentID != nil {
		kv = append(kv, "agent_id", *k.AgentID)
	}
	if k.SpendCap != nil || k.AgentID != nil {
		kv = append(kv, "spend_cap", adminOr(k.SpendCap, "none"))
	}
	if k.Spent != nil {
		kv = append(kv, "spent", *k.Spent)
	}
	if revealable {
		kv = append(kv, "revealable", fmt.Sprint(k.Revealable))
	}
	kv = append(kv, "created_at", adminStamp(k.CreatedAt))
	adminLines(w, kv...)
}

// adminLines prints key: value pairs with the values aligned.
func adminLines(w io.Writer, kv ...string) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	_ = tw.Flush()
}

func adminModelList(ids []string) string {
	switch {
	case ids == nil:
		return "all"
	case len(ids) == 0:
		return "none"
	}
	return strings.Join(ids, ",")
}

func adminExpiry(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return adminStamp(*t)
}

func adminLimit(n int) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprint(n)
}

func adminStamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
