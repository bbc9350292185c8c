// Package gateway assembles a running Tollgate from a config: the store,
// crash recovery, the vendor plugins, the pipeline and the HTTP server.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/billingcompat"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/core/server"
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

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	cfg, log := o.Config, o.Logger
	now := time.Now
	if cfg.Server.TLS != nil {
		// Refuse rather than serve plain HTTP to an operator who asked for HTTPS.
		return fmt.Errorf("%s: server.tls: automatic HTTPS is not available in this version; terminate TLS in front of Tollgate and remove the tls block", configName(cfg))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	dataDir := cfg.Store.Dir
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	st, err := badgerstore.Open(filepath.Join(dataDir, "badger"), badgerstore.Options{
		Logger: log.Named("store"), Strict: cfg.Server.Durability == "strict",
	})
	if err != nil {
		return fmt.Errorf("open store in %s: %w", dataDir, err)
	}
	defer st.Close()

	if n, err := Recover(ctx, st, now); err != nil {
		return fmt.Errorf("recover open holds: %w", err)
	} else if n > 0 {
		log.Warn("released holds left open by an earlier crash", "count", n)
	}

	masterHex := cfg.Server.MasterKey
	if masterHex == "" {
		masterHex = os.Getenv("TOLLGATE_MASTER_KEY")
	}
	master, err := keys.LoadMaster(masterHex, dataDir)
	if err != nil {
		return err
	}
	sealer, err := keys.NewSealer(master)
	if err != nil {
		return err
	}
	svc := admin.NewService(st, sealer, now)

	adminToken, tokenPath, err := adminToken(cfg, dataDir)
	if err != nil {
		return err
	}

	plugins := host.New(log.Named("plugin"))
	defer plugins.Close()
	vendors, err := startVendors(ctx, cfg, plugins, log)
	if err != nil {
		return err
	}

	limits := ratelimit.NewAccount(cfg.Limits.RPM, cfg.Limits.Concurrency, now)
	auth := pipeline.NewAuthenticator(st, now)
	// One Redactor for the log rows and the upstream errors clients see.
	red := pipeline.RedactorFor(cfg)
	deps := &pipeline.Deps{
		Config: cfg, Store: st, Vendors: vendors, Logger: log, Now: now,
		Limits: limits, Health: pipeline.NewHealth(now), Auth: auth, Redact: red,
	}
	reg := o.Stages
	if reg == nil {
		reg = pipeline.NewRegistry()
	}
	chain, err := pipeline.Build(reg, deps, cfg.Pipeline.Stages, stageSettings(cfg))
	if err != nil {
		return err
	}
	log.Debug("pipeline", "stages", strings.Join(chain.Stages(), " → "))

	logs := logsapi.New(st, ratelimit.NewPerKey(60, time.Minute, now), now, log.Named("logs"), logsapi.WithRedactor(red))
	billing := billingcompat.New(st, now)
	srv := server.New(server.Options{
		Config: cfg, Store: st, Chain: chain, Auth: auth, Limits: limits, Logger: log, Now: now,
		Vendors: vendors, Logs: logs.Serve, Billing: billing.Serve,
		Admin: admin.NewHandler(svc, st, adminToken, log),
	})

	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	addr := ln.Addr().String()
	if err := firstStart(ctx, cfg, st, svc, o.Out, addr, tokenPath); err != nil {
		ln.Close()
		return err
	}
	if pp := os.Getenv("TOLLGATE_PPROF_ADDR"); pp != "" {
		stopProfiling, err := servePprof(pp, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopProfiling()
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("serving", "addr", "http://"+addr, "config", configName(cfg))
	fmt.Fprintf(o.Out, "Tollgate listening on http://%s\n", addr)
	if o.Ready != nil {
		o.Ready(addr)
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

func configName(cfg *config.Config) string {
	if cfg.Source == "" {
		return "embedded default"
	}
	return cfg.Source
}

// Recover closes every hold a crash left open: released in full, with a
// row of status interrupted and cost 0 (PRODUCT.md §7). A hold settled
// meanwhile is skipped by the store, so nothing is charged twice.
func Recover(ctx context.Context, st store.Store, now func() time.Time) (int, error) {
	holds, err := st.OpenHolds(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range holds {
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

// stageSettings returns each stage's settings from the config.
func stageSettings(cfg *config.Config) map[string]map[string]string {
	return cfg.Pipeline.Settings
}
