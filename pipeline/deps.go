package pipeline

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
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
	Logger  hclog.Logger
	Now     func() time.Time
	Limits  *ratelimit.Account // account rpm and concurrency; nil = unlimited
	Health  *Health            // channel circuit breakers
	Auth    *Authenticator
	// Redact masks upstream error messages shown to clients; nil means
	// RedactorFor(Config).
	Redact *redact.Redactor
}
