package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/metrics"
	"github.com/tollgate-gw/tollgate/core/tlsserve"
	"github.com/tollgate-gw/tollgate/core/tracing"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// settleWait bounds the wait, after the drain, for the calls it cut: each
// still settles its hold and writes its row.
const settleWait = 10 * time.Second

// stopBound is the longest a stop on SIGTERM takes with drain as
// server.drain_timeout: the drain, the waits for the calls it cut and for
// a previous config's calls, the settlement queue's flush, and the
// store's bounded close. A supervisor's stop timeout (the systemd unit's,
// the compose file's) must exceed it, or it cuts the settling short.
func stopBound(drain time.Duration) time.Duration {
	return drain + 3*settleWait + badgerstore.DefaultCloseTimeout
}

// provisionTelemetry starts tracing (when the telemetry block or OTEL_*
// turn it on) and the metrics registry (when server.metrics_listen is
// set).
func (g *Gateway) provisionTelemetry(ctx context.Context) error {
	tp, err := tracing.New(ctx, g.cfg.Telemetry)
	if err != nil {
		return g.cfg.Refuse(config.Ref{Kind: "telemetry"}, "%v", err)
	}
	if tp != nil {
		g.tracing = tp
		g.onCleanup(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return tp.Shutdown(ctx)
		})
		g.log.Info("traces exported over OTLP")
	}
	if g.cfg.Server.MetricsListen != "" {
		src := metrics.Sources{
			Store:   g.store,
			Plugins: g.plugins.Stats,
			Tasks: func(owned, ended func(family, state string, n int64)) {
				if g.engine != nil {
					g.engine.Stats(owned, ended)
				}
			},
			Breakers:    g.breakers,
			Settlements: g.settles.Waiting,
		}
		if g.audits != nil {
			src.Audit = g.audits.Status
		}
		g.metrics = metrics.New(src, g.log.Named("metrics"))
	}
	return nil
}

// provisionTLS prepares HTTPS; certificates are obtained once serving.
func (g *Gateway) provisionTLS(context.Context) error {
	t, err := tlsserve.New(tlsserve.Options{Config: g.cfg, DataDir: g.cfg.Store.Dir, Logger: g.log})
	if err != nil {
		return err
	}
	if t != nil {
		g.tls = t
		g.onCleanup(t.Close)
	}
	return nil
}

// breakers reports each configured channel's breaker (metrics).
func (g *Gateway) breakers(fn func(channel string, state int)) {
	gen := g.gen.Load()
	if gen == nil {
		return
	}
	for _, ch := range gen.cfg.Channels {
		fn(ch.Name, g.health.State(ch.Name))
	}
}

// listen binds addr; what names where the operator sets it.
func listen(addr, what, where string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s on %s: the address is in use (another tollgate?); stop it, or choose another with %s", what, addr, where)
		}
		return nil, fmt.Errorf("%s on %s: %w", what, addr, err)
	}
	return ln, nil
}

// sideServers are the listeners beside the API: plain HTTP (ACME
// challenges and the redirect to HTTPS) and /metrics.
type sideServers struct {
	httpSrv, metricsSrv, consoleSrv *http.Server
	httpLn, metricsLn, consoleLn    net.Listener
}

func (g *Gateway) sideServers(httpsAddr string, b *banner) (*sideServers, error) {
	s := &sideServers{}
	errLog := g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	if g.tls != nil && g.cfg.Server.HTTPListen != "" {
		ln, err := listen(g.cfg.Server.HTTPListen, "http_listen", "server { http_listen }")
		if err != nil {
			return nil, err
		}
		s.httpLn = ln
		s.httpSrv = &http.Server{Handler: g.tls.HTTPHandler(httpsAddr), ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
		b.extra = append(b.extra, [2]string{"http:", "http://" + ln.Addr().String() + " (ACME challenges; everything else redirected to HTTPS)"})
	}
	if g.metrics != nil {
		ln, err := listen(g.cfg.Server.MetricsListen, "metrics_listen", "--metrics-listen or server { metrics_listen }")
		if err != nil {
			s.close()
			return nil, err
		}
		s.metricsLn = ln
		s.metricsSrv = &http.Server{Handler: g.metrics.Routes(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
		b.metrics = "http://" + ln.Addr().String() + "/metrics"
		b.extra = append(b.extra, [2]string{"metrics:", b.metrics + " (Prometheus text)"})
	}
	if g.cfg.Console.Enabled && g.cfg.Console.Listen != "" {
		ln, err := listen(g.cfg.Console.Listen, "console listen", "console { listen }")
		if err != nil {
			s.close()
			return nil, err
		}
		s.consoleLn, s.consoleSrv = ln, g.consoleServer()
		b.console = ln.Addr().String()
		if g.tls != nil {
			s.consoleSrv.TLSConfig = g.tls.Config()
		}
	}
	return s, nil
}

func (s *sideServers) serve(errc chan<- error) {
	if s.httpSrv != nil {
		go func() { errc <- s.httpSrv.Serve(s.httpLn) }()
	}
	if s.metricsSrv != nil {
		go func() { _ = s.metricsSrv.Serve(s.metricsLn) }() // a scrape failing is not the gateway failing
	}
	if s.consoleSrv != nil {
		go func() {
			var err error
			if s.consoleSrv.TLSConfig != nil {
				err = s.consoleSrv.ServeTLS(s.consoleLn, "", "")
			} else {
				err = s.consoleSrv.Serve(s.consoleLn)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
}

func (s *sideServers) close() {
	for _, srv := range []*http.Server{s.httpSrv, s.metricsSrv, s.consoleSrv} {
		if srv != nil {
			_ = srv.Close()
		}
	}
	for _, ln := range []net.Listener{s.httpLn, s.metricsLn, s.consoleLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// drain stops taking calls and lets those under way finish: the
// listeners close at once (new connections are refused), idle
// connections close, and calls and streams under way have
// server.drain_timeout to end; past it their connections are cut. Each
// call cut still runs its chain to the end (settle, row), waited for up
// to settleWait. Metrics are served to the end.
func (g *Gateway) drain(hs *http.Server, side *sideServers) {
	g.draining.Store(true)
	timeout := g.gen.Load().cfg.Server.DrainTimeout
	if timeout <= 0 {
		timeout = config.DefaultDrainTimeout
	}
	g.log.Info("draining: no new calls; calls under way may finish", "drain_timeout", timeout, "stopped_within", stopBound(timeout))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, srv := range []*http.Server{side.httpSrv, side.consoleSrv} {
		if srv != nil {
			go func() { _ = srv.Shutdown(ctx) }()
		}
	}
	if err := hs.Shutdown(ctx); err != nil {
		g.log.Warn("calls still under way at drain_timeout; cutting them", "in_flight", g.gen.Load().inflight.Load())
		_ = hs.Close()
	}
	retired := make(chan struct{})
	go func() { g.retiring.Wait(); close(retired) }()
	if !idle(g.gen.Load(), settleWait) {
		g.log.Error("calls cut by the drain did not settle in time", "in_flight", g.gen.Load().inflight.Load())
	}
	select {
	case <-retired:
	case <-time.After(settleWait):
		g.log.Error("calls of a previous config did not settle in time")
	}
	side.close()
	g.log.Info("drained")
}

// serveHealthz answers that the process is alive: it does not look at
// anything that may be slow.
func (g *Gateway) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	writeProbe(w, http.StatusOK, "ok", nil)
}

// serveReadyz answers whether the gateway can serve calls: not draining,
// the store working with no settlement waiting for it, every plugin
// running, every TLS certificate there. A flood of probes costs the store
// nothing: its answer is the last check, made at most every
// readyCheckEvery. No problem names a file.
func (g *Gateway) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	var problems []string
	if g.draining.Load() {
		problems = append(problems, "draining: the gateway is stopping")
	}
	if err := g.ready.store(g.store); err != nil {
		problems = append(problems, err.Error()) // "store: ..."
	}
	if n := g.settles.Holding(); n > 0 {
		problems = append(problems, fmt.Sprintf("store: %d settlements of calls already served wait for the store to take writes; new calls are refused until they are written", n))
	}
	for _, p := range g.plugins.Stats() {
		if !p.Up {
			problems = append(problems, "plugin "+p.Name+": not running")
		}
	}
	if err := g.tls.Ready(); err != nil {
		problems = append(problems, "tls: "+err.Error())
	}
	if len(problems) > 0 {
		writeProbe(w, http.StatusServiceUnavailable, "unavailable", problems)
		return
	}
	writeProbe(w, http.StatusOK, "ready", nil)
}

// readyCheckEvery is how often /readyz asks the store at most.
const readyCheckEvery = 500 * time.Millisecond

// readiness is the store's last check as /readyz shows it.
type readiness struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// store checks st unless it was checked less than readyCheckEvery ago;
// probes arriving meanwhile share the answer.
func (r *readiness) store(st store.Store) error {
	c, ok := st.(store.Checker)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < readyCheckEvery {
		return r.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	r.err = c.Check(ctx)
	cancel()
	r.at = time.Now()
	return r.err
}

func writeProbe(w http.ResponseWriter, status int, word string, problems []string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Status   string   `json:"status"`
		Problems []string `json:"problems,omitempty"`
	}{word, problems})
}
