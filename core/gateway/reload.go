package gateway

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Reload reads the config again (SIGHUP) and, when every check passes,
// serves it: channels, models, prices, limits, stages and their
// settings, the public URL. It builds the next generation beside the
// current one: each plugin the new config uses is reconfigured or
// started, the families described again, the chains and the server
// built; then one atomic swap, so calls under way finish on the
// generation they started on and no connection is dropped. Anything that
// fails leaves the current config serving, the plugins as they were, and
// every problem logged at its place in the file. What only a restart can
// change (listeners, TLS, the store, secrets, telemetry) is logged as
// such and left as it is. The task engine and hosted files run on.
func (g *Gateway) Reload(ctx context.Context) error {
	if g.o.LoadConfig == nil {
		return errors.New("reload: no config loader")
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if err := g.tls.Reload(); err != nil {
		g.log.Error("reload: the certificate files do not load; the previous certificate is kept", "error", err)
	}
	cur := g.gen.Load()
	cfg, err := g.o.LoadConfig()
	if err == nil {
		err = refuseUnsupported(cfg)
	}
	if err == nil {
		var next *generation
		next, err = g.nextGeneration(ctx, cfg)
		if err == nil {
			g.swap(cur, next)
			return nil
		}
	}
	g.refuseReload(err)
	return err
}

// nextGeneration builds cfg's generation; on failure every plugin is put
// back as it was.
func (g *Gateway) nextGeneration(ctx context.Context, cfg *config.Config) (*generation, error) {
	for _, w := range cfg.Warnings() {
		g.log.Warn(w)
	}
	problems := checkStages(g.o.Stages, cfg)
	var undo []func()
	rollback := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	vendors, err := eachVendor(ctx, cfg, builtins(g.o), func(ctx context.Context, sp pluginSpec, vc vendor.Config) (vendor.Vendor, error) {
		name := sp.name
		if p := g.plugins.Get(name); p != nil {
			switch {
			case p.InProcess() != (sp.builtin != nil):
				g.log.Warn("reload: a vendor's transport changed; it keeps running as it does until a restart", "plugin", name, "in_process", p.InProcess())
			case !p.InProcess() && p.Path() != sp.path:
				g.log.Warn("reload: a plugin's path changed; the running one is kept until a restart", "plugin", name, "running", p.Path(), "config", sp.path)
			case !p.InProcess() && p.Procs() != cmp.Or(sp.procs, host.DefaultProcs()):
				g.log.Warn("reload: a plugin's gomaxprocs changed; its process keeps its own until a restart", "plugin", name, "running", p.Procs(), "config", cmp.Or(sp.procs, host.DefaultProcs()))
			case !p.InProcess() && p.MemoryLimit() != sp.memory:
				g.log.Warn("reload: a plugin's memory_limit changed; its process keeps its own until a restart", "plugin", name, "running", p.MemoryLimit(), "config", sp.memory)
			}
			old := p.Config()
			if err := p.Configure(ctx, vc); err != nil {
				return nil, err
			}
			undo = append(undo, func() {
				if err := p.Configure(context.WithoutCancel(ctx), old); err != nil {
					g.log.Error("reload: restoring a plugin's config failed", "plugin", name, "error", err)
				}
			})
			return p, nil
		}
		var v vendor.Vendor
		var err error
		if sp.builtin != nil {
			v, err = g.plugins.StartInProcess(ctx, name, sp.builtin, vc)
		} else {
			v, err = g.plugins.Start(ctx, name, sp.exec(), vc)
		}
		if err == nil {
			undo = append(undo, func() { g.plugins.Stop(name) })
		}
		return v, err
	}, g.log)
	var ce *config.Error
	switch {
	case errors.As(err, &ce):
		problems = append(problems, ce)
	case err != nil:
		rollback()
		return nil, err
	}
	if err := join(problems); err != nil {
		rollback()
		return nil, err
	}
	jobs, families, err := describeFamilies(ctx, cfg, vendors)
	if err != nil {
		rollback()
		return nil, err
	}
	next, err := g.buildGeneration(cfg, vendors, jobs, families)
	if err != nil {
		rollback()
		return nil, err
	}
	return next, nil
}

// swap makes next the current generation; cur's calls finish on it, then
// the plugins next no longer uses are stopped.
func (g *Gateway) swap(cur, next *generation) {
	g.limits.SetDefaults(next.cfg.Limits.RPM, next.cfg.Limits.Concurrency)
	g.plugins.SetRestartWait(next.cfg.Server.PluginRestartWait)
	g.engine.SetSpecs(next.specs)
	g.fileHost.setPolicy(next.cfg.Server.AllowPrivateURLs)
	g.finisher.set(next.finisher)
	g.gen.Store(next)
	g.warnRestartOnly(cur.cfg, next.cfg)
	if g.metrics != nil {
		g.metrics.Reloaded(true)
	}
	g.log.Info("config reloaded", "config", configName(next.cfg), "channels", len(next.cfg.Channels), "models", len(next.cfg.Models),
		"stages", strings.Join(next.chains.Stages(), " → "))
	g.retiring.Add(1)
	go func() {
		defer g.retiring.Done()
		if !idle(cur, cur.cfg.Server.DrainTimeout) {
			g.log.Warn("calls of the previous config still under way; its unused plugins stop anyway", "in_flight", cur.inflight.Load())
		}
		g.reloadMu.Lock()
		defer g.reloadMu.Unlock()
		now := g.gen.Load().cfg.PluginNames()
		for _, name := range cur.cfg.PluginNames() {
			if !slices.Contains(now, name) {
				g.plugins.Stop(name)
				g.log.Info("plugin stopped: the config no longer uses it", "plugin", name)
			}
		}
	}()
}

// refuseReload logs why a reload was refused, one problem per line.
func (g *Gateway) refuseReload(err error) {
	if g.metrics != nil {
		g.metrics.Reloaded(false)
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		for _, line := range strings.Split(strings.TrimSpace(ce.Error()), "\n") {
			g.log.Error("reload refused; the previous config keeps serving", "problem", line)
		}
		return
	}
	g.log.Error("reload refused; the previous config keeps serving", "error", err)
}

// warnRestartOnly names what changed in the file but takes a restart.
func (g *Gateway) warnRestartOnly(old, cfg *config.Config) {
	type setting struct {
		name     string
		was, now any
	}
	for _, s := range []setting{
		{"server.listen", old.Server.Listen, cfg.Server.Listen},
		{"server.http_listen", old.Server.HTTPListen, cfg.Server.HTTPListen},
		{"server.metrics_listen", old.Server.MetricsListen, cfg.Server.MetricsListen},
		{"server.tls", old.Server.TLS, cfg.Server.TLS},
		{"server.admin_token", old.Server.AdminToken, cfg.Server.AdminToken},
		{"server.master_key", old.Server.MasterKey, cfg.Server.MasterKey},
		{"server.durability", old.Server.Durability, cfg.Server.Durability},
		{"server.sweep_every", old.Server.SweepEvery, cfg.Server.SweepEvery},
		{"server.admin_listen", old.Server.AdminListen, cfg.Server.AdminListen},
		{"server.master_key_file", old.Server.MasterKeyFile, cfg.Server.MasterKeyFile},
		{"server.header_timeout", old.Server.HeaderTimeout, cfg.Server.HeaderTimeout},
		{"server.idle_timeout", old.Server.IdleTimeout, cfg.Server.IdleTimeout},
		{"server.max_body_memory", old.Server.MaxBodyMemory, cfg.Server.MaxBodyMemory},
		{"server.memory_limit", old.Server.MemoryLimit, cfg.Server.MemoryLimit},
		{"store", old.Store, cfg.Store},
		{"telemetry", old.Telemetry, cfg.Telemetry},
		{"accounts", old.Accounts, cfg.Accounts},
		{"console", old.Console, cfg.Console},
		{"audit", old.Audit, cfg.Audit},
	} {
		if !reflect.DeepEqual(s.was, s.now) {
			g.log.Warn("reload: this setting changed but takes effect at the next start", "setting", s.name)
		}
	}
}
