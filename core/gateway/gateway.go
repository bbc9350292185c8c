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
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/core/billing/stripesim"
	"github.com/tollgate-gw/tollgate/core/billingcompat"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/core/kb"
	"github.com/tollgate-gw/tollgate/core/kbapi"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/metrics"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/core/server"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/core/tlsserve"
	"github.com/tollgate-gw/tollgate/core/tracing"
	"github.com/tollgate-gw/tollgate/core/users"
	"github.com/tollgate-gw/tollgate/docs"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
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
	// Command is how the person who started the gateway runs the binary
	// again from where they stand ("bin/tollgate" after make run), for
	// the commands the banner prints; "tollgate" when empty.
	Command string
	// Ready, when set, is called with the bound address once serving.
	Ready func(addr string)
	// Reload delivers the requests to read the config again (SIGHUP);
	// LoadConfig reads it. Both optional (reload.go).
	Reload     <-chan struct{}
	LoadConfig func() (*config.Config, error)
	// Builtins are the vendors a channel may run in process (transport =
	// "in-process"); nil means those built into this binary
	// (core/gateway/builtin).
	Builtins map[string]host.Builtin
	// MemoryLimit, when set, is given the process's soft memory limit:
	// server.memory_limit plus the large request bodies held at the
	// moment (up to max_body_memory), so a burst of them is room for the
	// heap rather than a reason to collect without pause. Nil leaves the
	// runtime's limit alone (tests running gateways in one process).
	MemoryLimit func(bytes int64)
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
	users     *users.Service
	token     string
	tokenFrom tokenSource
	plugins   *host.Host
	vendors   map[string]vendor.Vendor
	jobs      map[string]vendor.Jobs
	families  []*vendor.FamilySpec
	files     *files.Store
	fileHost  *fileHost
	kb        *kb.Service
	kbAPI     *kbapi.API
	engine    *tasks.Engine
	topups    *billing.Service  // card top-ups; nil without a billing block
	paySim    *stripesim.Server // the simulated processor (billing { processor = "sim" })

	// Shared by every generation (generation.go).
	limits   limiter
	logLimit *ratelimit.PerKey
	health   *pipeline.Health
	settles  *pipeline.SettleQueue // settlements waiting for the store
	audits   *audit.Runner         // the periodic audit of the books (audit { every })
	ready    readiness             // the store's last check, for /readyz
	auth     *pipeline.Authenticator
	admin    http.Handler
	bodies   *server.Bodies // large request bodies held at once
	billing  *billingcompat.Handler
	finisher *lateFinisher
	gen      atomic.Pointer[generation]
	reloadMu sync.Mutex
	retiring sync.WaitGroup // generations replaced, until their calls end

	// Operations (ops.go): traces, metrics, HTTPS, draining.
	tracing  *tracing.Provider
	metrics  *metrics.Metrics
	tls      *tlsserve.TLS
	draining atomic.Bool
	// addr is the main listener's address once bound (the console's
	// examples name it when the console has a listener of its own).
	addr atomic.Pointer[string]

	cleanups []func() error
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	for _, w := range o.Config.Warnings() {
		o.Logger.Warn(w)
	}
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
// build, and Cleanup still releases what the earlier ones took. What the
// config cannot do is refused before the data directory is touched: the
// plugins start first.
func (g *Gateway) Provision(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		g.provisionPlugins, g.provisionStore, g.provisionKeys, g.provisionFiles, g.provisionKB,
		g.provisionBilling, g.provisionTelemetry, g.provisionTLS, g.provisionPipeline,
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
	var st store.Store
	var err error
	if g.cfg.Store.Postgres() {
		st, err = g.openPostgres(ctx)
	} else {
		st, err = badgerstore.Open(filepath.Join(dir, "badger"), badgerstore.Options{
			Logger: g.log.Named("store"), Strict: g.cfg.Server.Durability == "strict",
			Reserve: int64(g.cfg.Store.ReserveMB) << 20,
		})
	}
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return fmt.Errorf("the data directory %s is in use by another tollgate (its store is locked); stop that one, or give this one another --data-dir", dir)
		}
		var ce *config.Error
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("open store in %s: %w", dir, err)
	}
	g.store = st
	g.onCleanup(st.Close)
	// Closed before the store: the settlements still waiting get their
	// chance to be written first.
	g.settles = pipeline.NewSettleQueue(g.log.Named("ledger"), 0, g.now)
	g.onCleanup(func() error { g.settles.Close(settleWait); return nil })
	if n, err := Recover(ctx, st, g.now); err != nil {
		return fmt.Errorf("recover open holds: %w", err)
	} else if n > 0 {
		g.log.Warn("released holds left open by an earlier crash", "count", n)
	}
	if every := g.cfg.Audit.Every; every > 0 {
		g.audits = audit.NewRunner(st, every, g.log.Named("audit"), g.now)
	}
	if sh, ok := st.(store.Shared); ok {
		// A shared store outlives its instances: the holds of one that
		// dies are released by the others once its lease ends.
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); sweepHolds(st, sh, g.now, g.log.Named("store"), stop) }()
		g.onCleanup(func() error { close(stop); <-done; return nil })
	}
	return nil
}

func (g *Gateway) provisionKeys(context.Context) error {
	masterHex := g.cfg.Server.MasterKey
	if masterHex == "" {
		masterHex = os.Getenv("TOLLGATE_MASTER_KEY")
	}
	keyFile := g.cfg.Server.MasterKeyFile
	if keyFile == "" {
		keyFile = os.Getenv("TOLLGATE_MASTER_KEY_FILE")
	}
	master, err := keys.LoadMaster(masterHex, g.cfg.Store.Dir, keyFile)
	if err != nil {
		return err
	}
	sealer, err := keys.NewSealer(master)
	if err != nil {
		return err
	}
	g.master = master
	g.svc = admin.NewService(g.store, sealer, g.now, g.cfg.Accounts.SignupCredit)
	g.users = users.New(users.Options{Store: g.store, Admin: g.svc, Signup: g.cfg.Accounts.Signup,
		SessionTTL: g.cfg.Console.SessionTTL, Now: g.now, Logger: g.log.Named("users")})
	g.token, g.tokenFrom, err = adminToken(g.cfg, g.cfg.Store.Dir)
	return err
}

// provisionPlugins runs the checks that need nothing running, starts the
// plugins the channels use, and reads the endpoint families they serve;
// every problem is reported at its place in the file, all at once.
func (g *Gateway) provisionPlugins(ctx context.Context) error {
	g.plugins = host.New(g.log.Named("plugin"))
	g.plugins.SetRestartWait(g.cfg.Server.PluginRestartWait)
	g.onCleanup(func() error { g.plugins.Close(); return nil })
	vendors, err := preflight(ctx, g.cfg, g.o.Stages, g.plugins, builtins(g.o), g.log)
	if err != nil {
		return err
	}
	g.vendors = vendors
	g.jobs, g.families, err = describeFamilies(ctx, g.cfg, vendors)
	return err
}

// provisionFiles opens the hosted-files store (a directory under the data
// dir); links are signed with a key derived from the master key, so they
// survive a restart.
func (g *Gateway) provisionFiles(ctx context.Context) error {
	mac := hmac.New(sha256.New, g.master)
	mac.Write([]byte("tollgate hosted files v1"))
	fs, err := files.Open(ctx, files.Options{
		Dir: filepath.Join(g.cfg.Store.Dir, "files"), Secret: mac.Sum(nil), Logger: g.log.Named("files"),
		SweepEvery: g.cfg.Server.SweepEvery,
	})
	if err != nil {
		return fmt.Errorf("hosted files: %w", err)
	}
	g.files = fs
	g.onCleanup(fs.Close)
	g.fileHost = &fileHost{fs: fs}
	g.fileHost.setPolicy(g.cfg.Server.AllowPrivateURLs)
	stop, err := g.fileHost.serveUploads(g.log.Named("uploads"))
	if err != nil {
		return err
	}
	g.onCleanup(stop)
	return nil
}

// provisionKB opens the knowledge base and its search index
// (<data dir>/kb.bleve, one per instance on a shared store, rebuilt from
// the store when missing or of an older schema), then seeds the config's
// bases (the embedded default's docs).
func (g *Gateway) provisionKB(ctx context.Context) error {
	path, err := g.kbIndexPath()
	if err != nil {
		return fmt.Errorf("knowledge base: %w", err)
	}
	svc, err := kb.Open(ctx, kb.Options{
		Store: g.store, Files: g.files, IndexPath: path,
		Logger: g.log.Named("kb"), Now: g.now,
	})
	if err != nil {
		return fmt.Errorf("knowledge base: %w", err)
	}
	g.kb = svc
	g.onCleanup(svc.Close)
	for _, b := range g.cfg.KnowledgeBases {
		var fsys fs.FS = docs.FS
		if b.Docs != config.BuiltinDocs {
			fsys = os.DirFS(b.Docs)
		}
		res, err := svc.SeedBase(ctx, b.ID, b.Name, fsys)
		if err != nil {
			return fmt.Errorf("knowledge base %q from %s: %w", b.ID, b.Docs, err)
		}
		g.log.Debug("knowledge base seeded", "kb_id", b.ID, "created", res.Created, "updated", res.Updated, "unchanged", res.Unchanged)
	}
	g.kbAPI = kbapi.New(svc, kbapi.Options{LinkBase: g.linkBase, Logger: g.log.Named("kb")})
	return nil
}

// provisionPipeline builds the chains, the task engine and the HTTP server.
// provisionPipeline builds the task engine and the first generation: the
// chains and the HTTP server.
func (g *Gateway) provisionPipeline(ctx context.Context) error {
	cfg, log, now := g.cfg, g.log, g.now
	g.limits = g.limiter()
	g.logLimit = ratelimit.NewPerKey(60, time.Minute, now)
	g.bodies = server.NewBodies(cfg.Server.MaxBodyMemoryOrDefault())
	if set := g.o.MemoryLimit; set != nil {
		base := cfg.Server.MemoryLimitOrDefault()
		set(base)
		g.bodies.Watch(func(held int64) { set(base + held) })
	}
	g.auth = pipeline.NewAuthenticator(g.store, now)
	g.health = pipeline.NewHealth(now)
	g.billing = billingcompat.New(g.store, now)
	adm := admin.NewHandler(g.svc, g.store, g.token, log)
	for _, rt := range g.kbAPI.AdminRoutes() {
		adm.Handle(rt.Pattern, rt.Handler)
	}
	for _, rt := range g.users.AdminRoutes() {
		adm.Handle(rt.Pattern, rt.Handler)
	}
	if g.topups != nil {
		for _, rt := range g.topups.AdminRoutes() {
			adm.Handle(rt.Pattern, rt.Handler)
		}
	}
	g.admin = adm
	g.finisher = &lateFinisher{}
	specs := map[string]*vendor.FamilySpec{}
	for _, sp := range g.families {
		specs[sp.Name] = sp
	}
	g.engine = tasks.New(tasks.Options{
		Store: g.store, Specs: specs, Finisher: g.finisher, Logger: log, Now: now,
		Owner: newOwnerID(),
		// Badger: one process per store, so every task left unfinished at
		// start belongs to a process that is gone. Not a shared store.
		Exclusive: taskLease(g.store) == 0,
		Lease:     taskLease(g.store),
		Plugins: func(name string) vendor.Jobs {
			if j, ok := g.gen.Load().jobs[name]; ok {
				return j
			}
			return nil
		},
	})
	adm.TaskRoutes(g.engine)
	gen, err := g.buildGeneration(cfg, g.vendors, g.jobs, g.families)
	if err != nil {
		return err
	}
	g.gen.Store(gen)
	g.finisher.set(gen.finisher)
	log.Debug("pipeline", "stages", strings.Join(gen.chains.Stages(), " → "))
	return nil
}

// Serve listens, runs the task engine and the file sweep, and serves until
// ctx ends, reloading the config on each Options.Reload; then it drains:
// no new connections, calls under way finish (up to server.drain_timeout,
// then they are cut and still settled), the engine stops.
func (g *Gateway) Serve(ctx context.Context) error {
	cfg := g.cfg
	if err := g.checkAdmin(); err != nil {
		return err
	}
	ln, err := listen(cfg.Server.Listen, "listen", "--listen or server { listen }")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	g.addr.Store(&addr)
	b := banner{cfg: cfg, addr: addr, tokenFrom: g.tokenFrom, plugins: cfg.PluginNames(), specs: g.families,
		scheme: "http", command: g.o.Command}
	if err := b.demo(ctx, g.store, g.svc); err != nil {
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
	side, err := g.sideServers(addr, &b)
	if err != nil {
		ln.Close()
		return err
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	if err := g.engine.Start(bg); err != nil {
		stopBG()
		ln.Close()
		side.close()
		return err
	}
	// On the way out: the engine's calls under way end, then the parts are
	// cleaned up.
	defer func() { stopBG(); g.engine.Wait() }()
	go g.files.Run(bg)
	sweep := cfg.Server.SweepEvery
	if sweep <= 0 {
		sweep = files.DefaultSweepEvery
	}
	go g.engine.Expire(bg, sweep) // beside the files sweep
	go g.kb.Run(bg)               // follows page changes other instances make
	if g.audits != nil {
		done := make(chan struct{})
		go func() { defer close(done); g.audits.Run(bg) }()
		defer func() { stopBG(); <-done }()
	}
	if cfg.Console.Enabled {
		go g.users.Sweep(bg, time.Hour)
	}

	adm, err := g.adminServer(&b)
	if err != nil {
		stopBG()
		ln.Close()
		side.close()
		return err
	}
	defer adm.close()
	hs := &http.Server{Handler: g, ReadHeaderTimeout: cfg.Server.HeaderTimeoutOrDefault(),
		IdleTimeout: cfg.Server.IdleTimeoutOrDefault(),
		ErrorLog:    g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	errc := make(chan error, 1)
	if g.tls != nil {
		b.scheme = "https"
		hs.TLSConfig = g.tls.Config()
		go func() { errc <- hs.ServeTLS(ln, "", "") }()
		if err := g.tls.Start(ctx); err != nil {
			g.log.Error("managing certificates", "error", err)
		}
	} else {
		go func() { errc <- hs.Serve(ln) }()
	}
	side.serve(errc)
	g.startPaySim(addr, &b)
	adm.serve(errc)
	// The banner says it on stdout; the log line is for --log-level debug.
	g.log.Debug("serving", "addr", b.scheme+"://"+addr, "config", configName(cfg))
	b.print(g.o.Out)
	if g.o.Ready != nil {
		g.o.Ready(addr)
	}
	for {
		select {
		case err := <-errc:
			side.close()
			return err
		case <-g.o.Reload:
			_ = g.Reload(ctx)
			continue
		case <-ctx.Done():
		}
		break
	}
	g.drain(hs, side)
	return nil
}

// newOwnerID names this process in task leases.
func newOwnerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return host + "-" + hex.EncodeToString(b[:])
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
// by the store, so nothing is charged twice. On a shared store only the
// holds of instances whose lease has ended are released, by one instance at
// a time: a restarting instance never settles another's live calls.
func Recover(ctx context.Context, st store.Store, now func() time.Time) (int, error) {
	if sh, ok := st.(store.Shared); ok {
		n := 0
		_, err := sh.SweepExpiredHolds(ctx, func(ctx context.Context, holds []store.Hold) (err error) {
			n, err = release(ctx, st, holds, now)
			return err
		})
		return n, err
	}
	holds, err := st.OpenHolds(ctx)
	if err != nil {
		return 0, err
	}
	return release(ctx, st, holds, now)
}

// release settles each hold as interrupted, at no charge.
func release(ctx context.Context, st store.Store, holds []store.Hold, now func() time.Time) (int, error) {
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
