// Package gateway assembles a running Tollgate from a config: the store,
// crash recovery, the plugins, hosted files, the task engine, the pipeline
// and the HTTP server. Each part is provisioned in order and cleaned up in
// reverse, even when a later part failed (Caddy's module lifecycle).
package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/billingcompat"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/core/server"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// Options start a gateway.
type Options struct {
	Config *config.Config
	Logger hclog.Logger
	// Stages extends the pipeline registry with an integrator's stages.
	Stages *pipeline.Registry
	// Out receives the first-start banner (the demo key and curl line).
	Out io.Writer
	// Ready, when set, is called with the bound address once serving.
	Ready func(addr string)
}

// Gateway is one running Tollgate.
type Gateway struct {
	o   Options
	cfg *config.Config
	log hclog.Logger
	now func() time.Time

	store     store.Store
	master    []byte
	svc       *admin.Service
	token     string
	tokenPath string
	plugins   *host.Host
	vendors   map[string]vendor.Vendor
	jobs      map[string]vendor.Jobs
	families  []*vendor.FamilySpec
	files     *files.Store
	engine    *tasks.Engine
	chains    *pipeline.Chains
	handler   http.Handler

	cleanups []func() error
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	g := New(o)
	defer g.Cleanup()
	if err := g.Provision(ctx); err != nil {
		return err
	}
	return g.Serve(ctx)
}

// New returns a gateway for o; Provision builds it.
func New(o Options) *Gateway {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Stages == nil {
		o.Stages = pipeline.NewRegistry()
	}
	return &Gateway{o: o, cfg: o.Config, log: o.Logger, now: time.Now}
}

// Provision builds every part in order: a part that fails stops the
// build, and Cleanup still releases what the earlier ones took.
func (g *Gateway) Provision(ctx context.Context) error {
	if g.cfg.Server.TLS != nil {
		// Refuse rather than serve plain HTTP to an operator who asked for HTTPS.
		return fmt.Errorf("%s: server.tls: automatic HTTPS is not available in this version; terminate TLS in front of Tollgate and remove the tls block", configName(g.cfg))
	}
	for _, step := range []func(context.Context) error{
		g.provisionStore, g.provisionKeys, g.provisionPlugins, g.provisionFiles, g.provisionPipeline,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup releases every part, the last provisioned first.
func (g *Gateway) Cleanup() {
	for i := len(g.cleanups) - 1; i >= 0; i-- {
		if err := g.cleanups[i](); err != nil && !errors.Is(err, store.ErrClosed) {
			g.log.Warn("cleanup", "error", err)
		}
	}
	g.cleanups = nil
}

func (g *Gateway) onCleanup(fn func() error) { g.cleanups = append(g.cleanups, fn) }

func (g *Gateway) provisionStore(ctx context.Context) error {
	dir := g.cfg.Store.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	st, err := badgerstore.Open(filepath.Join(dir, "badger"), badgerstore.Options{
		Logger: g.log.Named("store"), Strict: g.cfg.Server.Durability == "strict",
	})
	if err != nil {
		return fmt.Errorf("open store in %s: %w", dir, err)
	}
	g.store = st
	g.onCleanup(st.Close)
	if n, err := Recover(ctx, st, g.now); err != nil {
		return fmt.Errorf("recover open holds: %w", err)
	} else if n > 0 {
		g.log.Warn("released holds left open by an earlier crash", "count", n)
	}
	return nil
}

func (g *Gateway) provisionKeys(context.Context) error {
	masterHex := g.cfg.Server.MasterKey
	if masterHex == "" {
		masterHex = os.Getenv("TOLLGATE_MASTER_KEY")
	}
	master, err := keys.LoadMaster(masterHex, g.cfg.Store.Dir)
	if err != nil {
		return err
	}
	sealer, err := keys.NewSealer(master)
	if err != nil {
		return err
	}
	g.master = master
	g.svc = admin.NewService(g.store, sealer, g.now)
	g.token, g.tokenPath, err = adminToken(g.cfg, g.cfg.Store.Dir)
	return err
}

// provisionPlugins starts the plugins the channels use and reads the
// endpoint families they serve.
func (g *Gateway) provisionPlugins(ctx context.Context) error {
	g.plugins = host.New(g.log.Named("plugin"))
	g.onCleanup(func() error { g.plugins.Close(); return nil })
	vendors, err := startVendors(ctx, g.cfg, g.plugins, g.log)
	if err != nil {
		return err
	}
	g.vendors = vendors
	g.jobs = map[string]vendor.Jobs{}
	byFamily := map[string]string{} // family -> the plugin that first described it
	specs := map[string]*vendor.FamilySpec{}
	for _, name := range g.cfg.PluginNames() {
		v := vendors[name]
		d, err := v.Describe(ctx)
		if err != nil {
			return fmt.Errorf("plugin %q: describe: %w", name, err)
		}
		if len(d.Specs) == 0 {
			continue
		}
		j, ok := v.(vendor.Jobs)
		if !ok {
			return fmt.Errorf("plugin %q describes endpoint families but cannot serve them", name)
		}
		g.jobs[name] = j
		for i := range d.Specs {
			sp := d.Specs[i]
			if prev, ok := specs[sp.Name]; ok {
				if !sameSpec(prev, &sp) {
					return fmt.Errorf("plugins %q and %q describe the %s family differently (routes or limits); build them from the same version", byFamily[sp.Name], name, sp.Name)
				}
				continue
			}
			specs[sp.Name], byFamily[sp.Name] = &sp, name
		}
	}
	// A media model must have a plugin of its family on some channel.
	for i := range g.cfg.Models {
		m := &g.cfg.Models[i]
		if m.Family == "" || m.Family == config.DefaultFamily {
			continue
		}
		served := false
		for _, ch := range g.cfg.ChannelsFor(m.ID) {
			if _, ok := g.jobs[ch.Vendor]; ok && specs[m.Family] != nil && slices.Contains(ch.Families, m.Family) {
				served = true
			}
		}
		if !served {
			return fmt.Errorf("%s: model %q is of family %q, but no plugin of its channels serves that family", configName(g.cfg), m.ID, m.Family)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		g.families = append(g.families, specs[name])
	}
	return nil
}

// provisionFiles opens the hosted-files store (a directory under the data
// dir); links are signed with a key derived from the master key, so they
// survive a restart.
func (g *Gateway) provisionFiles(ctx context.Context) error {
	mac := hmac.New(sha256.New, g.master)
	mac.Write([]byte("tollgate hosted files v1"))
	fs, err := files.Open(ctx, files.Options{
		Dir: filepath.Join(g.cfg.Store.Dir, "files"), Secret: mac.Sum(nil), Logger: g.log.Named("files"),
	})
	if err != nil {
		return fmt.Errorf("hosted files: %w", err)
	}
	g.files = fs
	g.onCleanup(fs.Close)
	return nil
}

// provisionPipeline builds the chains, the task engine and the HTTP server.
func (g *Gateway) provisionPipeline(ctx context.Context) error {
	cfg, log, now := g.cfg, g.log, g.now
	limits := ratelimit.NewAccount(cfg.Limits.RPM, cfg.Limits.Concurrency, now)
	auth := pipeline.NewAuthenticator(g.store, now)
	specs := map[string]*vendor.FamilySpec{}
	for _, sp := range g.families {
		specs[sp.Name] = sp
	}
	finisher := &lateFinisher{}
	g.engine = tasks.New(tasks.Options{
		Store: g.store, Specs: specs, Finisher: finisher, Logger: log, Now: now,
		Owner:     newOwnerID(),
		Exclusive: true, // Badger: one process per store
		Plugins: func(name string) vendor.Jobs {
			if j, ok := g.jobs[name]; ok {
				return j
			}
			return nil
		},
	})
	// One Redactor for the log rows and the upstream errors clients see.
	red := pipeline.RedactorFor(cfg)
	deps := &pipeline.Deps{
		Config: cfg, Store: g.store, Vendors: g.vendors, Jobs: g.jobs, Logger: log, Now: now,
		Limits: limits, Health: pipeline.NewHealth(now), Auth: auth, Redact: red,
		Files: fileHost{g.files}, Tasks: g.engine,
	}
	chains, err := pipeline.Build(g.o.Stages, deps, cfg.Pipeline.Stages, cfg.Pipeline.Settings)
	if err != nil {
		return err
	}
	g.chains = chains
	finisher.f = pipeline.NewTaskFinisher(chains, deps, specs)
	log.Debug("pipeline", "stages", strings.Join(chains.Stages(), " → "))

	logs := logsapi.New(g.store, ratelimit.NewPerKey(60, time.Minute, now), now, log.Named("logs"), logsapi.WithRedactor(red))
	billing := billingcompat.New(g.store, now)
	g.handler = server.New(server.Options{
		Config: cfg, Store: g.store, Chains: chains, Logger: log, Now: now,
		Vendors: g.vendors, Families: g.families, Logs: logs.Serve, Billing: billing.Serve,
		Admin: admin.NewHandler(g.svc, g.store, g.token, log), Files: g.files.Handler(),
		TLSDomains: nil,
	})
	return nil
}

// Serve listens, runs the task engine and the file sweep, and serves until
// ctx ends; then it drains: no new calls, calls under way finish (up to 10
// seconds), the engine stops.
func (g *Gateway) Serve(ctx context.Context) error {
	cfg := g.cfg
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	addr := ln.Addr().String()
	if err := firstStart(ctx, cfg, g.store, g.svc, g.o.Out, addr, g.tokenPath); err != nil {
		ln.Close()
		return err
	}
	if pp := os.Getenv("TOLLGATE_PPROF_ADDR"); pp != "" {
		stopProfiling, err := servePprof(pp, g.log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopProfiling()
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	if err := g.engine.Start(bg); err != nil {
		ln.Close()
		return err
	}
	defer g.engine.Wait()
	go g.files.Run(bg)

	hs := &http.Server{Handler: g.handler, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	g.log.Info("serving", "addr", "http://"+addr, "config", configName(cfg))
	fmt.Fprintf(g.o.Out, "Tollgate listening on http://%s\n", addr)
	if g.o.Ready != nil {
		g.o.Ready(addr)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return nil
}

// lateFinisher lets the engine be built before the chains that end its
// tasks (the dispatch stage hands tasks to the engine).
type lateFinisher struct{ f tasks.Finisher }

func (l *lateFinisher) FinishTask(ctx context.Context, t store.Task, end tasks.End) error {
	return l.f.FinishTask(ctx, t, end)
}

// fileHost hosts job results in the files store.
type fileHost struct{ fs *files.Store }

func (h fileHost) Host(ctx context.Context, owner string, f vendor.ResultFile, retention time.Duration, base string) (string, time.Time, error) {
	info, err := h.fs.Put(ctx, files.File{Data: f.Data, ContentType: f.ContentType, Name: f.Name, Owner: owner, Retention: retention})
	if err != nil {
		return "", time.Time{}, err
	}
	return h.fs.Link(base, info.ID, 0)
}

// newOwnerID names this process in task leases.
func newOwnerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return host + "-" + hex.EncodeToString(b[:])
}

// sameSpec reports whether two plugins describe a family alike.
func sameSpec(a, b *vendor.FamilySpec) bool {
	return fmt.Sprintf("%+v", *a) == fmt.Sprintf("%+v", *b)
}

func configName(cfg *config.Config) string {
	if cfg.Source == "" {
		return "embedded default"
	}
	return cfg.Source
}

// Recover closes every chat hold a crash left open: released in full, with
// a row of status interrupted and cost 0 (PRODUCT.md §7). A hold owned by
// a task that exists is left to the task engine; one whose task was never
// written is released like a chat hold. A hold settled meanwhile is skipped
// by the store, so nothing is charged twice.
func Recover(ctx context.Context, st store.Store, now func() time.Time) (int, error) {
	holds, err := st.OpenHolds(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range holds {
		if h.TaskID != "" {
			_, err := st.GetTask(ctx, h.TaskID)
			if err == nil {
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				return n, err
			}
		}
		row := &store.LogRow{
			AccountID: h.AccountID, CreatedAt: now(), SubmittedAt: h.SubmittedAt,
			KeyID: h.KeyID, KeyName: h.KeyName, KeyPrefix: h.KeyPrefix, Model: h.Model,
			Status: store.StatusInterrupted, UnitType: h.UnitType, RequestID: h.ID,
			LatencyMS: now().Sub(h.SubmittedAt).Milliseconds(),
		}
		err := st.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: 0, Row: row})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// adminToken is server.admin_token, else TOLLGATE_ADMIN_TOKEN, else a token
// generated into the data dir (its path is printed).
func adminToken(cfg *config.Config, dir string) (token, path string, err error) {
	if cfg.Server.AdminToken != "" {
		return cfg.Server.AdminToken, "", nil
	}
	if t := os.Getenv("TOLLGATE_ADMIN_TOKEN"); t != "" {
		return t, "", nil
	}
	path = filepath.Join(dir, "admin.token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), path, nil
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = "tga_" + hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return token, path, nil
}

// startVendors launches each vendor plugin the channels use, handing each
// only its own channels and secrets.
func startVendors(ctx context.Context, cfg *config.Config, h *host.Host, log hclog.Logger) (map[string]vendor.Vendor, error) {
	out := map[string]vendor.Vendor{}
	for _, name := range cfg.PluginNames() {
		var explicit string
		var settings map[string]string
		for _, p := range cfg.Plugins {
			if p.Name == name {
				explicit, settings = p.Path, p.Settings
			}
		}
		path, err := host.Find(name, explicit)
		if err != nil {
			return nil, err
		}
		vc := vendor.Config{Settings: settings}
		for _, ch := range cfg.Channels {
			if ch.Vendor == name {
				vc.Channels = append(vc.Channels, vendor.Channel{
					Name: ch.Name, BaseURL: ch.BaseURL, APIKey: ch.APIKey,
					Protocols: ch.Protocols, Settings: ch.Settings,
				})
			}
		}
		v, err := h.Start(ctx, name, path, vc)
		if err != nil {
			return nil, fmt.Errorf("start plugin %q (%s): %w", name, path, err)
		}
		out[name] = v
		log.Debug("plugin started", "name", name, "path", path)
	}
	return out, nil
}

// firstStart creates the demo account on the embedded default's first start
// and prints its key once, with a ready curl line.
func firstStart(ctx context.Context, cfg *config.Config, st store.Store, svc *admin.Service, out io.Writer, addr, tokenPath string) error {
	if tokenPath != "" {
		fmt.Fprintf(out, "Admin token: %s\n", tokenPath)
	}
	if cfg.Source != "" {
		return nil
	}
	accts, err := st.ListAccounts(ctx)
	if err != nil || len(accts) > 0 {
		return err
	}
	a, err := svc.CreateAccount(ctx, "demo", nil)
	if err != nil {
		return err
	}
	name := "demo key"
	_, raw, err := svc.CreateKey(ctx, a.ID, admin.KeySpec{Name: &name})
	if err != nil {
		return err
	}
	model := "sim-chat"
	if len(cfg.Models) > 0 {
		if _, ok := cfg.Model(model); !ok {
			model = cfg.Models[0].ID
		}
	}
	fmt.Fprintf(out, `
Tollgate is running on the embedded default (sim upstream, data in %s).
A demo account holds %s trial credit. Its API key, shown this once:

    %s

Try it:

    curl -s http://%s/v1/chat/completions \
      -H "Authorization: Bearer %s" \
      -H "Content-Type: application/json" \
      -d '{"model": "%s", "messages": [{"role": "user", "content": "Hello!"}]}'

`, cfg.Store.Dir, admin.SignupCredit, raw, addr, raw, model)
	return nil
}
