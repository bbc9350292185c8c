package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// The demo account of the embedded default, found again on later starts
// by these names.
const (
	demoAccount = "demo"
	demoKey     = "demo key"
)

// banner is what the gateway prints once it listens: its first line,
// "Tollgate listening on http://ADDR", is what scripts wait for.
type banner struct {
	cfg       *config.Config
	addr      string
	tokenFrom tokenSource
	plugins   []string
	specs     []*vendor.FamilySpec // the families the plugins serve: their examples
	scheme    string               // http, or https with TLS
	command   string               // the binary as the person runs it: bin/tollgate
	extra     [][2]string          // more listeners: label, what
	// console is the web console's address on its own listener; "" when
	// it is on the main one (or off).
	console string
	metrics string // the /metrics URL when it is served

	demoFirst  *demoKeyShown // the demo account was made now
	demoAcct   string        // an existing demo account's id
	demoKeyID  string        // its key's id, when it still has it
	noAccounts bool          // a config file, and no account yet
}

type demoKeyShown struct {
	raw, keyID string
	credit     string
}

// demo makes the embedded default's demo account on its first start, or
// finds it again on a later one; with a config file it notes an empty store.
func (b *banner) demo(ctx context.Context, st store.Store, svc *admin.Service) error {
	accts, err := st.ListAccounts(ctx)
	if err != nil {
		return err
	}
	if b.cfg.Source != "" {
		b.noAccounts = len(accts) == 0
		return nil
	}
	for _, a := range accts {
		if a.Name != demoAccount {
			continue
		}
		b.demoAcct = a.ID
		keys, err := st.ListKeys(ctx, a.ID)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.Name == demoKey {
				b.demoKeyID = k.ID
			}
		}
		return nil
	}
	if len(accts) > 0 {
		return nil // the operator's own accounts: no demo
	}
	a, err := svc.CreateAccount(ctx, demoAccount, nil)
	if err != nil {
		return err
	}
	name := demoKey
	k, raw, err := svc.CreateKey(ctx, a.ID, admin.KeySpec{Name: &name})
	if err != nil {
		return err
	}
	b.demoFirst = &demoKeyShown{raw: raw, keyID: k.ID, credit: svc.SignupCredit().String()}
	return nil
}

// signupLine says how people get into the console.
func (b *banner) signupLine() string {
	switch b.cfg.Accounts.Signup {
	case config.SignupOpen:
		return "sign up there: a new account holds " + b.cfg.Accounts.SignupCredit.String() + " credits"
	case config.SignupInvite:
		return "sign-up by invitation; " + b.adminCmd("user create") + " adds people"
	}
	return b.adminCmd("user create") + " adds people"
}

// reach is the address this machine reaches the gateway at: the bound
// one, or loopback when it listens on every interface.
func (b *banner) reach() string {
	host, port, err := net.SplitHostPort(b.addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return b.addr
}

// print writes the banner once. Its last line, "Tollgate listening on
// http://ADDR", says the gateway is ready: scripts wait for it, and by then
// the rest of the banner is out.
func (b *banner) print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if b.cfg.Source == "" {
		fmt.Fprintf(tw, "config:\tembedded default (the sim upstream; %s serve --config FILE runs your own)\n", b.cmd())
	} else {
		fmt.Fprintf(tw, "config:\t%s\n", b.cfg.Source)
	}
	fmt.Fprintf(tw, "data:\t%s\n", b.cfg.Store.Dir)
	if b.cfg.Store.Postgres() {
		fmt.Fprintf(tw, "store:\tpostgres %s (shared with the other instances)\n", config.Masked(b.cfg).Store.URL)
	}
	fmt.Fprintf(tw, "admin token:\t%s\n", b.tokenLine())
	fmt.Fprintf(tw, "vendors:\t%s\n", strings.Join(b.plugins, ", "))
	for _, f := range b.families() {
		fmt.Fprintf(tw, "%s:\t%s\n", f.name, strings.Join(f.models, ", "))
	}
	fmt.Fprintf(tw, "knowledge:\tGET /api/v1/ext/wiki/search?q=..., MCP at POST /mcp (any key of the account)\n")
	if c := b.cfg.Console; c.Enabled {
		at := b.scheme + "://" + b.reach() + "/console/"
		if b.console != "" {
			at = b.scheme + "://" + b.console + "/console/"
		}
		fmt.Fprintf(tw, "console:\t%s (%s)\n", at, b.signupLine())
	}
	for _, e := range b.extra {
		fmt.Fprintf(tw, "%s\t%s\n", e[0], e[1])
	}
	switch {
	case b.demoAcct != "" && b.demoKeyID != "":
		fmt.Fprintf(tw, "demo account:\t%s exists; print its key again with: %s\n", b.demoAcct, b.adminCmd("key reveal "+b.demoKeyID))
	case b.demoAcct != "":
		fmt.Fprintf(tw, "demo account:\t%s exists; make it a key with: %s\n", b.demoAcct, b.adminCmd("key create "+b.demoAcct+" --name "+"'"+demoKey+"'"))
	case b.noAccounts:
		fmt.Fprintf(tw, "accounts:\tnone yet; create one with: %s\n", b.adminCmd("account create --name NAME"))
	}
	_ = tw.Flush()
	if d := b.demoFirst; d != nil {
		fmt.Fprintf(out, `
A demo account holds %s trial credit. Its API key (print it again with
%s):

    %s

Try it:

    curl -s http://%s/v1/chat/completions \
      -H "Authorization: Bearer %s" \
      -H "Content-Type: application/json" \
      -d '{"model": "%s", "messages": [{"role": "user", "content": "Hello!"}]}'
`, d.credit, b.adminCmd("key reveal "+d.keyID), d.raw, b.reach(), d.raw, b.demoModel())
		for _, t := range b.tries() {
			if t.Method == http.MethodGet {
				fmt.Fprintf(out, `
    curl -s "http://%s%s" -H "Authorization: Bearer %s"%s
`, b.reach(), t.Path, d.raw, t.Note)
				continue
			}
			fmt.Fprintf(out, `
    curl -s http://%s%s \
      -H "Authorization: Bearer %s" \
      -H "Content-Type: application/json" \
      -d '{"model": "%s", %s}'%s
`, b.reach(), t.Path, d.raw, t.model, t.Body, t.Note)
		}
		fmt.Fprintf(out, `
    curl -s "http://%s/api/v1/ext/wiki/search?q=idempotency" -H "Authorization: Bearer %s"
`, b.reach(), d.raw)
		if b.metrics != "" {
			fmt.Fprintf(out, "\n    curl -s %s | grep ^tollgate_requests_total\n", b.metrics)
		}
	}
	fmt.Fprintln(out)
	if b.scheme == "" {
		b.scheme = "http"
	}
	if r := b.reach(); r != b.addr {
		_, port, _ := net.SplitHostPort(b.addr)
		fmt.Fprintf(out, "Tollgate listening on %s://0.0.0.0:%s (every interface; from this machine %s://%s)\n", b.scheme, port, b.scheme, r)
	} else {
		fmt.Fprintf(out, "Tollgate listening on %s://%s\n", b.scheme, b.addr)
	}
}

// tokenLine says where the admin token is, never the token itself.
func (b *banner) tokenLine() string {
	t := b.tokenFrom
	switch {
	case t.config:
		return "server.admin_token in " + b.cfg.Source
	case t.env:
		return "from $TOLLGATE_ADMIN_TOKEN"
	case t.made:
		return "generated into the file " + t.file + " (" + b.cmd() + " admin reads it there)"
	}
	return "in the file " + t.file + " (" + b.cmd() + " admin reads it there)"
}

// cmd is the binary as the person who started it runs it.
func (b *banner) cmd() string {
	if b.command == "" {
		return "tollgate"
	}
	return b.command
}

// adminCmd is a `tollgate admin` command line that reaches this gateway,
// run from where the gateway was started: --url and --data-dir only where
// they differ from the CLI's defaults.
func (b *banner) adminCmd(args string) string {
	cmd := b.cmd() + " admin"
	if r := b.reach(); r != "127.0.0.1:8080" {
		cmd += " --url http://" + r
	}
	if dir := filepath.Clean(b.cfg.Store.Dir); b.tokenFrom.file != "" && dir != "data" {
		cmd += " --data-dir " + b.cfg.Store.Dir
	}
	return cmd + " " + args
}

// try is a family's example call with the model it names.
type try struct {
	vendor.Example
	model string
}

// tries are the lines to try each configured family with, in the order
// the config first names the family: the examples its plugins describe
// (FamilySpec.Examples), each while its family has a model configured.
func (b *banner) tries() []try {
	specs := map[string]*vendor.FamilySpec{}
	for _, sp := range b.specs {
		specs[sp.Name] = sp
	}
	var out []try
	for _, f := range b.families() {
		sp := specs[f.name]
		if sp == nil {
			continue
		}
		for _, e := range sp.Examples {
			family := e.Family
			if family == "" {
				family = sp.Name
			}
			if m := b.firstOf(family); m != "" {
				out = append(out, try{Example: e, model: m})
			}
		}
	}
	return out
}

type familyModels struct {
	name   string
	models []string
}

// families lists the configured models by family, in config order.
func (b *banner) families() []familyModels {
	var out []familyModels
	at := map[string]int{}
	for _, m := range b.cfg.Models {
		i, ok := at[m.Family]
		if !ok {
			i = len(out)
			at[m.Family] = i
			out = append(out, familyModels{name: m.Family})
		}
		out[i].models = append(out[i].models, m.ID)
	}
	return out
}

// firstOf is the first configured model of a family, or "".
func (b *banner) firstOf(family string) string {
	for _, m := range b.cfg.Models {
		if m.Family == family {
			return m.ID
		}
	}
	return ""
}

func (b *banner) demoModel() string {
	model := "sim-chat"
	if _, ok := b.cfg.Model(model); !ok && len(b.cfg.Models) > 0 {
		model = b.cfg.Models[0].ID
	}
	return model
}
