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
	"syscall"
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
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// Options start a gateway.
type Options struct {
	Config *config.Config
	Logger hclog.Logger
	// Stages extends the pipeline registry with an integrator's stages.
	Stages *pipeline.Registry
	// Out receives the start-up banner (what listens, the config, where the
	// admin token is; on the first start the demo key and a curl line).
	Out io.Writer
	// Ready, when set, is called with the bound address once serving.
	Ready func(addr string)
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	cfg, log := o.Config, o.Logger
	now := time.Now
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	reg := o.Stages
	if reg == nil {
		reg = pipeline.NewRegistry()
	}
	// What the config cannot do is refused before the data directory is
	// touched: TLS, unknown stages, vendors and channels their plugins refuse.
	plugins := host.New(log.Named("plugin"))
	defer plugins.Close()
	vendors, err := preflight(ctx, cfg, reg, plugins, log)
	if err != nil {
		return err
	}
	dataDir := cfg.Store.Dir
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	st, err := badgerstore.Open(filepath.Join(dataDir, "badger"), badgerstore.Options{
		Logger: log.Named("store"), Strict: cfg.Server.Durability == "strict",
	})
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return fmt.Errorf("the data directory %s is in use by another tollgate (its store is locked); stop that one, or give this one another --data-dir", dataDir)
		}
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
	svc := admin.NewService(st, sealer, now, cfg.Accounts.SignupCredit)

	adminToken, tokenFrom, err := adminToken(cfg, dataDir)
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
	chain, err := buildChain(reg, deps, cfg)
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
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen on %s: the address is in use (another tollgate?); stop it, or choose another with --listen or server { listen }", cfg.Server.Listen)
		}
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	addr := ln.Addr().String()
	b := banner{cfg: cfg, addr: addr, tokenFrom: tokenFrom, plugins: cfg.PluginNames()}
	if err := b.demo(ctx, st, svc); err != nil {
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
	// The banner says it on stdout; the log line is for --log-level debug.
	log.Debug("serving", "addr", "http://"+addr, "config", configName(cfg))
	b.print(o.Out)
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

// tokenSource says where the admin token came from, for the banner.
type tokenSource struct {
	config bool   // server.admin_token
	env    bool   // $TOLLGATE_ADMIN_TOKEN
	file   string // the token file in the data dir
	made   bool   // the file was written at this start
}

// adminToken is server.admin_token, else TOLLGATE_ADMIN_TOKEN, else a token
// generated into the data dir (its path is printed, never the token).
func adminToken(cfg *config.Config, dir string) (string, tokenSource, error) {
	if cfg.Server.AdminToken != "" {
		return cfg.Server.AdminToken, tokenSource{config: true}, nil
	}
	if t := os.Getenv("TOLLGATE_ADMIN_TOKEN"); t != "" {
		return t, tokenSource{env: true}, nil
	}
	path := filepath.Join(dir, "admin.token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), tokenSource{file: path}, nil
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", tokenSource{}, err
	}
	token := "tga_" + hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", tokenSource{}, err
	}
	return token, tokenSource{file: path, made: true}, nil
}
