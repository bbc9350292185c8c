// Package metrics is the gateway's Prometheus surface (GET /metrics on
// server { metrics_listen }), with prometheus/client_golang. Calls are
// counted by the pipeline's CallObserver hook, on the request's goroutine
// and without allocating once a series exists; everything else (holds,
// the journal, tasks, plugins, breakers, the store's health) is read from
// the parts that know it when Prometheus scrapes.
//
// Every name starts with tollgate_; labels are bounded: route is the
// route's pattern, model a configured model id, never a key, an account
// or a request id. docs/operations.md lists the series.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgate-gw/tollgate/core/routes"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// Sources are the parts read at scrape time; each is optional.
type Sources struct {
	// Store reports open holds and journal lag (store.StatsReporter) and
	// its health (store.Checker).
	Store store.Store
	// Plugins reports each plugin process.
	Plugins func() []host.Stat
	// Tasks reports the tasks this instance works on and those it ended
	// (tasks.Engine.Stats).
	Tasks func(owned, ended func(family, state string, n int64))
	// Breakers reports each configured channel's breaker state
	// (pipeline.BreakerClosed, Open, HalfOpen).
	Breakers func(fn func(channel string, state int))
	// Settlements reports how many settlements wait for the store
	// (pipeline.SettleQueue).
	Settlements func() int
	// Audit reports the periodic audit of the books (audit.Runner).
	Audit func() audit.Status
}

// Metrics is the registry and the hooks that feed it.
type Metrics struct {
	reg *prometheus.Registry
	log hclog.Logger

	requests                   *prometheus.CounterVec
	duration, ttfb, upstream   *prometheus.HistogramVec
	tokens                     *prometheus.CounterVec
	reloads                    *prometheus.CounterVec
	mu                         sync.RWMutex
	series                     map[seriesKey]*series
	models                     map[string]*modelSeries
	src                        Sources
	holdsDesc, lagDesc, upDesc *prometheus.Desc
	waitingDesc                *prometheus.Desc
	tasksDesc, endedDesc       *prometheus.Desc
	pluginUp, pluginRestarts   *prometheus.Desc
	breakerDesc, creditsDesc   *prometheus.Desc
	auditRuns, auditViolations *prometheus.Desc
	auditLast, auditTook       *prometheus.Desc
}

// Latency buckets, in seconds: a chat call takes from milliseconds (a
// refusal) to minutes (a long stream).
var buckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// New returns the metrics of one gateway.
func New(src Sources, log hclog.Logger) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(), log: log, src: src,
		series: map[seriesKey]*series{}, models: map[string]*modelSeries{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_requests_total",
			Help: "Calls answered, by route pattern, client protocol (chat routes), model and HTTP status.",
		}, []string{"route", "protocol", "model", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tollgate_request_duration_seconds", Buckets: buckets,
			Help: "Whole call, from the request's arrival to the end of its chain (the row written).",
		}, []string{"route", "protocol", "model"}),
		ttfb: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tollgate_time_to_first_byte_seconds", Buckets: buckets,
			Help: "From the request's arrival to its status line (a stream's first event; a whole answer once settled).",
		}, []string{"route", "protocol", "model"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tollgate_upstream_duration_seconds", Buckets: buckets,
			Help: "Time in upstream attempts (through the plugin), all attempts of a call together.",
		}, []string{"route", "protocol", "model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_tokens_total",
			Help: "Tokens charged, by model and type: input (all of it, cached included), cached_input, cache_write, output.",
		}, []string{"model", "type"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_config_reloads_total",
			Help: "Config reloads (SIGHUP), by result: applied or refused.",
		}, []string{"result"}),
		holdsDesc: prometheus.NewDesc("tollgate_holds_open", "Holds placed and not yet settled (calls and tasks under way).", nil, nil),
		lagDesc:   prometheus.NewDesc("tollgate_store_journal_lag", "Money moves journaled and not yet applied to the database.", nil, nil),
		upDesc:    prometheus.NewDesc("tollgate_store_up", "1 when the store works (its data directory takes writes), else 0.", nil, nil),
		waitingDesc: prometheus.NewDesc("tollgate_settlements_waiting",
			"Settlements of calls already served that the store refused for now; they are written, in order, once it takes writes.", nil, nil),
		tasksDesc: prometheus.NewDesc("tollgate_tasks", "Async tasks this instance works on, by family and state.", []string{"family", "state"}, nil),
		endedDesc: prometheus.NewDesc("tollgate_tasks_ended_total", "Async tasks this instance ended, by family and outcome.", []string{"family", "state"}, nil),
		pluginUp:  prometheus.NewDesc("tollgate_plugin_up", "1 when the plugin's process runs, else 0.", []string{"plugin"}, nil),
		pluginRestarts: prometheus.NewDesc("tollgate_plugin_restarts_total",
			"Times the plugin's process was started again after it exited.", []string{"plugin"}, nil),
		breakerDesc: prometheus.NewDesc("tollgate_channel_breaker_state",
			"A channel's circuit breaker: 0 closed, 1 open (taken out), 2 half-open (the next call is a probe).", []string{"channel"}, nil),
		creditsDesc: prometheus.NewDesc("tollgate_credits_charged_total",
			"Credits charged, by model (exact: summed in nano-credits, shown in credits).", []string{"model"}, nil),
		auditRuns: prometheus.NewDesc("tollgate_audit_runs_total",
			"Periodic audits of the books, by result: passed, failed (a rule broken) or error (it could not finish).", []string{"result"}, nil),
		auditViolations: prometheus.NewDesc("tollgate_audit_violations",
			"Violations the last finished audit of the books found, by rule (0 for each rule when it passed).", []string{"rule"}, nil),
		auditLast: prometheus.NewDesc("tollgate_audit_last_run_timestamp_seconds",
			"When the last periodic audit of the books ended (Unix time), whatever its result.", nil, nil),
		auditTook: prometheus.NewDesc("tollgate_audit_duration_seconds",
			"How long the last finished audit of the books took.", nil, nil),
	}
	m.reg.MustRegister(m.requests, m.duration, m.ttfb, m.upstream, m.tokens, m.reloads, (*state)(m),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: m.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	})
}

// Routes are the operations listener's (server { metrics_listen }):
// GET /metrics alone.
func (m *Metrics) Routes() *routes.Mux {
	mux := routes.New()
	mux.Handle("GET /metrics", m.Handler())
	return mux
}

// Registry is the registry, for tests and for an integrator's own
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Reloaded counts a config reload.
func (m *Metrics) Reloaded(applied bool) {
	if applied {
		m.reloads.WithLabelValues("applied").Inc()
	} else {
		m.reloads.WithLabelValues("refused").Inc()
	}
}

// seriesKey names one request series.
type seriesKey struct {
	route, protocol, model string
	status                 int
}

// series are the children of one seriesKey, resolved once.
type series struct {
	requests                 prometheus.Counter
	duration, ttfb, upstream prometheus.Observer
	model                    *modelSeries
}

// modelSeries are a model's charge counters.
type modelSeries struct {
	input, cached, written, output prometheus.Counter
	nano                           atomic.Int64 // credits charged, in nano-credits
}

// CallDone counts one answered call (pipeline.CallObserver).
func (m *Metrics) CallDone(c *pipeline.Call) {
	now := time.Now()
	status := c.W.Status()
	if status == 0 && c.Err != nil {
		status = c.Err.Status // the client left before anything was written
	}
	model, proto := "", ""
	if c.Model != nil {
		model = c.Model.ID
	}
	if c.Kind == pipeline.KindChat {
		proto = string(c.Protocol)
	}
	_, route, found := strings.Cut(c.Pattern, " ")
	if !found {
		route = c.Pattern
	}
	s := m.get(seriesKey{route: route, protocol: proto, model: model, status: status})
	s.requests.Inc()
	s.duration.Observe(now.Sub(c.Start).Seconds())
	if fb := c.W.FirstByte(); !fb.IsZero() {
		s.ttfb.Observe(fb.Sub(c.Start).Seconds())
	}
	if c.UpstreamCalls > 0 {
		s.upstream.Observe(c.UpstreamTime.Seconds())
	}
	m.charged(s.model, c)
}

// TaskDone counts the charge of a task that ended (pipeline.CallObserver).
func (m *Metrics) TaskDone(c *pipeline.Call) {
	if c.Model == nil {
		return
	}
	m.charged(m.model(c.Model.ID), c)
}

// charged adds what the call's row charged.
func (m *Metrics) charged(ms *modelSeries, c *pipeline.Call) {
	if c.Row == nil || ms == nil {
		return
	}
	if c.Row.Cost > 0 {
		ms.nano.Add(int64(c.Row.Cost))
	}
	if c.Job != nil || !c.Served {
		return
	}
	u := &c.Usage
	add(ms.input, u.InputTokens)
	add(ms.cached, u.CachedTokens)
	add(ms.written, u.CacheWriteTokens)
	add(ms.output, u.OutputTokens)
}

func add(c prometheus.Counter, n int64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// get returns the series of k, made on first use.
func (m *Metrics) get(k seriesKey) *series {
	m.mu.RLock()
	s := m.series[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	var ms *modelSeries
	if k.model != "" {
		ms = m.model(k.model)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.series[k]; s == nil {
		s = &series{
			requests: m.requests.WithLabelValues(k.route, k.protocol, k.model, statusLabel(k.status)),
			duration: m.duration.WithLabelValues(k.route, k.protocol, k.model),
			ttfb:     m.ttfb.WithLabelValues(k.route, k.protocol, k.model),
			upstream: m.upstream.WithLabelValues(k.route, k.protocol, k.model),
			model:    ms,
		}
		m.series[k] = s
	}
	return s
}

// model returns a model's charge counters, made on first use.
func (m *Metrics) model(id string) *modelSeries {
	m.mu.RLock()
	ms := m.models[id]
	m.mu.RUnlock()
	if ms != nil {
		return ms
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ms = m.models[id]; ms == nil {
		ms = &modelSeries{
			input:   m.tokens.WithLabelValues(id, "input"),
			cached:  m.tokens.WithLabelValues(id, "cached_input"),
			written: m.tokens.WithLabelValues(id, "cache_write"),
			output:  m.tokens.WithLabelValues(id, "output"),
		}
		m.models[id] = ms
	}
	return ms
}

func statusLabel(code int) string {
	if code == 0 {
		return "0" // nothing was sent and no error is known
	}
	return strconv.Itoa(code)
}

// state is the collector of what is read at scrape time.
type state Metrics

func (s *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.holdsDesc, s.lagDesc, s.upDesc, s.waitingDesc, s.tasksDesc, s.endedDesc,
		s.pluginUp, s.pluginRestarts, s.breakerDesc, s.creditsDesc, s.auditRuns, s.auditViolations, s.auditLast, s.auditTook} {
		ch <- d
	}
}

func (s *state) Collect(ch chan<- prometheus.Metric) {
	src := s.src
	if st, ok := src.Store.(store.StatsReporter); ok {
		stats := st.Stats()
		ch <- prometheus.MustNewConstMetric(s.holdsDesc, prometheus.GaugeValue, float64(stats.OpenHolds))
		ch <- prometheus.MustNewConstMetric(s.lagDesc, prometheus.GaugeValue, float64(stats.JournalLag))
	}
	if c, ok := src.Store.(store.Checker); ok {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		up := 1.0
		if c.Check(ctx) != nil {
			up = 0
		}
		cancel()
		ch <- prometheus.MustNewConstMetric(s.upDesc, prometheus.GaugeValue, up)
	}
	if src.Settlements != nil {
		ch <- prometheus.MustNewConstMetric(s.waitingDesc, prometheus.GaugeValue, float64(src.Settlements()))
	}
	if src.Tasks != nil {
		src.Tasks(func(family, st string, n int64) {
			ch <- prometheus.MustNewConstMetric(s.tasksDesc, prometheus.GaugeValue, float64(n), family, st)
		}, func(family, st string, n int64) {
			ch <- prometheus.MustNewConstMetric(s.endedDesc, prometheus.CounterValue, float64(n), family, st)
		})
	}
	if src.Plugins != nil {
		for _, p := range src.Plugins() {
			up := 0.0
			if p.Up {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(s.pluginUp, prometheus.GaugeValue, up, p.Name)
			ch <- prometheus.MustNewConstMetric(s.pluginRestarts, prometheus.CounterValue, float64(p.Restarts), p.Name)
		}
	}
	if src.Breakers != nil {
		src.Breakers(func(channel string, st int) {
			ch <- prometheus.MustNewConstMetric(s.breakerDesc, prometheus.GaugeValue, float64(st), channel)
		})
	}
	if src.Audit != nil {
		s.collectAudit(ch, src.Audit())
	}
	s.mu.RLock()
	for id, ms := range s.models {
		ch <- prometheus.MustNewConstMetric(s.creditsDesc, prometheus.CounterValue, Credits(money.Nano(ms.nano.Load())), id)
	}
	s.mu.RUnlock()
}

func (s *state) collectAudit(ch chan<- prometheus.Metric, st audit.Status) {
	for result, n := range map[string]int64{"passed": st.Passed, "failed": st.Failed, "error": st.Errors} {
		ch <- prometheus.MustNewConstMetric(s.auditRuns, prometheus.CounterValue, float64(n), result)
	}
	if !st.LastAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(s.auditLast, prometheus.GaugeValue, float64(st.LastAt.UnixMilli())/1e3)
	}
	if r := st.Last; r != nil {
		for _, rule := range audit.Rules {
			ch <- prometheus.MustNewConstMetric(s.auditViolations, prometheus.GaugeValue, float64(r.ByRule[rule]), rule)
		}
		ch <- prometheus.MustNewConstMetric(s.auditTook, prometheus.GaugeValue, float64(r.TookMS)/1e3)
	}
}

// Credits is n in credits, as tollgate_credits_charged_total shows it.
// A float64 holds every nano-credit exactly up to about 9 million
// credits; past that the series is exact to within a few nano-credits.
func Credits(n money.Nano) float64 { return float64(n) / 1e9 }

var (
	_ pipeline.CallObserver = (*Metrics)(nil)
	_ prometheus.Collector  = (*state)(nil)
)
