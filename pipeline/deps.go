package pipeline

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// Deps is what stages are built from: one config, one store, one logger,
// the running vendor plugins, handed down from the gateway.
type Deps struct {
	Config  *config.Config
	Store   store.Store
	Vendors map[string]vendor.Vendor // by plugin name
	// Jobs are the plugins serving endpoint families, by plugin name;
	// Families are the families they describe, with their routes.
	Jobs     map[string]vendor.Jobs
	Families []*vendor.FamilySpec
	Logger   hclog.Logger
	Now      func() time.Time
	Limits   Limiter // account rpm and concurrency; nil = unlimited
	Health   *Health // channel circuit breakers
	// Settlements holds the settlements the store could not take yet;
	// nil: a refused settlement is not retried (its hold is left to
	// recovery).
	Settlements *SettleQueue
	Auth        *Authenticator
	// Redact masks upstream error messages shown to clients; nil means
	// RedactorFor(Config).
	Redact *redact.Redactor
	// Files hosts the results of jobs; Tasks takes the async ones.
	Files FileHost
	Tasks TaskOwner
	// Tracer opens the spans of stages and upstream attempts; nil means
	// tracing is off (observe.go). Observer is told of every call once
	// its chain ran (metrics); nil means none.
	Tracer   trace.Tracer
	Observer CallObserver
	// Retriever is the knowledge base the agent stage searches; nil when
	// the gateway serves none (an agent with bases is then refused).
	Retriever Retriever
}

// Limiter counts a call against its account's requests per minute and
// concurrency: core/ratelimit's Account (in memory, one instance) or
// Shared (counts in a store several instances share). A refusal is the
// spec's 429 with Retry-After and x-ratelimit-* headers.
type Limiter interface {
	Acquire(ctx context.Context, accountID string, rpm, concurrency int) (release func(), err *apierr.Error)
}

// FileHost keeps the files of jobs: results (hosted behind signed,
// expiring links) and a client's uploads (handed to plugins as links).
type FileHost interface {
	// Host keeps a result, its bytes or what its URL answers (streamed,
	// through the private-address policy), and hands out a link under
	// base.
	Host(ctx context.Context, owner string, f vendor.ResultFile, retention time.Duration, base string) (url string, expires time.Time, err error)
	// Fetch reads what a result's URL answers, at most limit bytes (an
	// answer that carries it inline), and its content type.
	Fetch(ctx context.Context, f vendor.ResultFile, limit int64) ([]byte, string, error)
	// Upload keeps a client's upload, streamed, and returns it as a
	// plugin is handed it: a link on the gateway's loopback address, its
	// size and SHA-256.
	Upload(ctx context.Context, owner string, u Upload) (vendor.JobFile, error)
	// Discard forgets uploads no longer needed; best effort.
	Discard(ctx context.Context, files []vendor.JobFile)
}

// TaskOwner is the task engine as the pipeline sees it: the instance's
// name and lease for new tasks, and the hand-over of a task once written.
type TaskOwner interface {
	Owner() string
	Lease() time.Duration
	Adopt(t store.Task, first *vendor.JobOutcome)
}
