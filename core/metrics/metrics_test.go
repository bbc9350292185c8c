package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/metrics"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// call is a chat call as the chain leaves it: answered, settled, logged.
func call(model *config.Model) *pipeline.Call {
	w := pipeline.NewResponseWriter(httptest.NewRecorder())
	w.WriteHeader(http.StatusOK)
	return &pipeline.Call{
		Start: time.Now().Add(-time.Second), Kind: pipeline.KindChat, Protocol: protocol.OpenAIChat,
		Pattern: "POST /v1/chat/completions", W: w, Model: model, Served: true,
		Usage:         protocol.Usage{InputTokens: 12, OutputTokens: 8, CachedTokens: 2},
		UpstreamCalls: 1, UpstreamTime: 500 * time.Millisecond,
		Row: &store.LogRow{Cost: money.MustParse("0.000123456")},
	}
}

func TestCallDoneCounts(t *testing.T) {
	m := metrics.New(metrics.Sources{
		Plugins:  func() []host.Stat { return []host.Stat{{Name: "sim", Up: true, Restarts: 2}} },
		Breakers: func(fn func(string, int)) { fn("a", pipeline.BreakerOpen) },
		Tasks: func(owned, ended func(string, string, int64)) {
			owned("image", "in_progress", 3)
			ended("image", "succeeded", 5)
		},
	}, hclog.NewNullLogger())
	model := &config.Model{ID: "m"}
	for range 3 {
		m.CallDone(call(model))
	}
	m.TaskDone(&pipeline.Call{Model: model, Job: &pipeline.Job{}, Row: &store.LogRow{Cost: money.MustParse("1")}})
	want := `
# HELP tollgate_credits_charged_total Credits charged, by model (exact: summed in nano-credits, shown in credits).
# TYPE tollgate_credits_charged_total counter
tollgate_credits_charged_total{model="m"} 1.000370368
# HELP tollgate_tokens_total Tokens charged, by model and type: input (all of it, cached included), cached_input, cache_write, output.
# TYPE tollgate_tokens_total counter
tollgate_tokens_total{model="m",type="cache_write"} 0
tollgate_tokens_total{model="m",type="cached_input"} 6
tollgate_tokens_total{model="m",type="input"} 36
tollgate_tokens_total{model="m",type="output"} 24
# HELP tollgate_requests_total Calls answered, by route pattern, client protocol (chat routes), model and HTTP status.
# TYPE tollgate_requests_total counter
tollgate_requests_total{model="m",protocol="openai_chat",route="/v1/chat/completions",status="200"} 3
# HELP tollgate_plugin_restarts_total Times the plugin's process was started again after it exited.
# TYPE tollgate_plugin_restarts_total counter
tollgate_plugin_restarts_total{plugin="sim"} 2
# HELP tollgate_channel_breaker_state A channel's circuit breaker: 0 closed, 1 open (taken out), 2 half-open (the next call is a probe).
# TYPE tollgate_channel_breaker_state gauge
tollgate_channel_breaker_state{channel="a"} 1
# HELP tollgate_tasks Async tasks this instance works on, by family and state.
# TYPE tollgate_tasks gauge
tollgate_tasks{family="image",state="in_progress"} 3
# HELP tollgate_tasks_ended_total Async tasks this instance ended, by family and outcome.
# TYPE tollgate_tasks_ended_total counter
tollgate_tasks_ended_total{family="image",state="succeeded"} 5
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"tollgate_credits_charged_total", "tollgate_tokens_total", "tollgate_requests_total",
		"tollgate_plugin_restarts_total", "tollgate_channel_breaker_state", "tollgate_tasks", "tollgate_tasks_ended_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Registry(), "tollgate_upstream_duration_seconds"); n != 1 {
		t.Errorf("upstream histograms: %d series", n)
	}
}

// Counting a call allocates nothing once its series exist: the hot path's
// allocation budget is untouched.
func TestCallDoneAllocatesNothing(t *testing.T) {
	m := metrics.New(metrics.Sources{}, hclog.NewNullLogger())
	c := call(&config.Model{ID: "m"})
	m.CallDone(c)
	if n := testing.AllocsPerRun(1000, func() { m.CallDone(c) }); n != 0 {
		t.Errorf("CallDone allocates %v times per call", n)
	}
}

func BenchmarkCallDone(b *testing.B) {
	m := metrics.New(metrics.Sources{}, hclog.NewNullLogger())
	c := call(&config.Model{ID: "m"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.CallDone(c)
		}
	})
}

// docs/operations.md lists every series the gateway exports.
func TestOperationsDocListsEverySeries(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Sources{}, hclog.NewNullLogger())
	m.CallDone(call(&config.Model{ID: "m"}))
	m.Reloaded(true)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if name := f.GetName(); strings.HasPrefix(name, "tollgate_") && !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/operations.md does not list %s", name)
		}
	}
	for _, name := range []string{"tollgate_holds_open", "tollgate_store_journal_lag", "tollgate_store_up", "tollgate_tasks",
		"tollgate_tasks_ended_total", "tollgate_plugin_up", "tollgate_plugin_restarts_total", "tollgate_channel_breaker_state", "tollgate_credits_charged_total"} {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/operations.md does not list %s", name)
		}
	}
}

// The periodic audit's last result: runs by result, violations by rule
// (every rule listed), when it ran and how long it took.
func TestAuditSeries(t *testing.T) {
	last := &audit.Report{TookMS: 1500, ByRule: map[string]int{audit.RuleBalance: 2, audit.RuleRowCost: 1}}
	m := metrics.New(metrics.Sources{Audit: func() audit.Status {
		return audit.Status{Last: last, LastAt: time.Unix(1_700_000_000, 0), Passed: 3, Failed: 1, Errors: 2}
	}}, hclog.NewNullLogger())
	var want strings.Builder
	want.WriteString(`
# HELP tollgate_audit_runs_total Periodic audits of the books, by result: passed, failed (a rule broken) or error (it could not finish).
# TYPE tollgate_audit_runs_total counter
tollgate_audit_runs_total{result="error"} 2
tollgate_audit_runs_total{result="failed"} 1
tollgate_audit_runs_total{result="passed"} 3
# HELP tollgate_audit_last_run_timestamp_seconds When the last periodic audit of the books ended (Unix time), whatever its result.
# TYPE tollgate_audit_last_run_timestamp_seconds gauge
tollgate_audit_last_run_timestamp_seconds 1.7e+09
# HELP tollgate_audit_duration_seconds How long the last finished audit of the books took.
# TYPE tollgate_audit_duration_seconds gauge
tollgate_audit_duration_seconds 1.5
# HELP tollgate_audit_violations Violations the last finished audit of the books found, by rule (0 for each rule when it passed).
# TYPE tollgate_audit_violations gauge
`)
	rules := slices.Sorted(slices.Values(audit.Rules))
	for _, rule := range rules {
		fmt.Fprintf(&want, "tollgate_audit_violations{rule=%q} %d\n", rule, last.ByRule[rule])
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want.String()), "tollgate_audit_runs_total",
		"tollgate_audit_last_run_timestamp_seconds", "tollgate_audit_duration_seconds", "tollgate_audit_violations"); err != nil {
		t.Error(err)
	}
	// Without a periodic audit (no audit block) there are no audit series.
	if n := testutil.CollectAndCount(metrics.New(metrics.Sources{}, hclog.NewNullLogger()).Registry(), "tollgate_audit_runs_total"); n != 0 {
		t.Errorf("%d audit series without a periodic audit", n)
	}
}
