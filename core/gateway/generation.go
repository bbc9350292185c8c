package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/server"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// A generation is what one config serves: the chains built from it and
// the server over them. The gateway serves through an atomic pointer to
// the current one; a reload (SIGHUP) builds the next beside it and swaps
// the pointer, so a call keeps the generation it started on until it
// ends, and no connection is dropped. The store, the task engine, hosted
// files, the limits, the breakers and the plugin processes are shared by
// every generation.
type generation struct {
	cfg      *config.Config
	vendors  map[string]vendor.Vendor
	jobs     map[string]vendor.Jobs
	families []*vendor.FamilySpec
	specs    map[string]*vendor.FamilySpec
	chains   *pipeline.Chains
	finisher tasks.Finisher
	handler  http.Handler
	// console is the web console when it has a listener of its own.
	console http.Handler

	inflight atomic.Int64 // requests being served on it
}

// buildGeneration builds the chains and the server of cfg over the
// gateway's shared parts; a stage refusing its settings is a config
// error at its place in the file.
func (g *Gateway) buildGeneration(cfg *config.Config, vendors map[string]vendor.Vendor, jobs map[string]vendor.Jobs, families []*vendor.FamilySpec) (*generation, error) {
	specs := map[string]*vendor.FamilySpec{}
	for _, sp := range families {
		specs[sp.Name] = sp
	}
	// One Redactor for the log rows and the upstream errors clients see.
	red := pipeline.RedactorFor(cfg)
	deps := &pipeline.Deps{
		Config: cfg, Store: g.store, Vendors: vendors, Jobs: jobs, Families: families, Logger: g.log, Now: g.now,
		Limits: g.limits, Health: g.health, Settlements: g.settles, Auth: g.auth, Redact: red,
		Files: g.fileHost, Tasks: g.engine, Retriever: kbRetriever{g.kb},
	}
	if g.tracing != nil {
		deps.Tracer = g.tracing.Tracer()
	}
	if g.metrics != nil {
		deps.Observer = g.metrics
	}
	chains, err := buildChain(g.o.Stages, deps, cfg)
	if err != nil {
		return nil, err
	}
	logs := logsapi.New(g.store, g.logLimit, g.now, g.log.Named("logs"), logsapi.WithRedactor(red))
	con, err := g.console(cfg, logs)
	if err != nil {
		return nil, err
	}
	o := server.Options{
		Config: cfg, Store: g.store, Chains: chains, Logger: g.log, Now: g.now,
		Vendors: vendors, Families: families, Logs: logs.Serve, Billing: g.billing.Serve,
		Admin: g.publicAdmin(), Files: g.files.Handler(), LinkBase: g.linkBase, Knowledge: g.kbAPI.Routes(),
		Healthz: http.HandlerFunc(g.serveHealthz), Readyz: http.HandlerFunc(g.serveReadyz), Bodies: g.bodies,
	}
	if g.topups != nil {
		o.Webhook = http.HandlerFunc(g.topups.ServeWebhook)
	}
	if con != nil && g.cfg.Console.Listen == "" {
		o.Console = con
	}
	srv := server.New(o)
	var h http.Handler = srv
	if g.tracing != nil {
		mux := srv.Routes()
		h = g.tracing.Handler(srv, func(r *http.Request) string {
			_, pattern := mux.Handler(r)
			return pattern
		})
	}
	gen := &generation{
		cfg: cfg, vendors: vendors, jobs: jobs, families: families, specs: specs, chains: chains,
		finisher: pipeline.NewTaskFinisher(chains, deps, specs), handler: h,
	}
	if con != nil && g.cfg.Console.Listen != "" {
		gen.console = con
	}
	return gen, nil
}

// ServeHTTP serves r on the current generation.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gen := g.gen.Load()
	gen.inflight.Add(1)
	defer gen.inflight.Add(-1)
	gen.handler.ServeHTTP(w, r)
}

// idle waits until no request is served on gen, at most d; it reports
// whether none is.
func idle(gen *generation, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for gen.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// lateFinisher lets the engine be built before the chains that end its
// tasks (the dispatch stage hands tasks to the engine); a reload points
// it at the new generation's.
type lateFinisher struct {
	f atomic.Pointer[tasks.Finisher]
}

func (l *lateFinisher) set(f tasks.Finisher) { l.f.Store(&f) }

func (l *lateFinisher) FinishTask(ctx context.Context, t store.Task, end tasks.End) error {
	return (*l.f.Load()).FinishTask(ctx, t, end)
}
