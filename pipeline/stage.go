package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"
)

// Stage is one step of the chain.
type Stage interface {
	// Name is the stage's name in the config.
	Name() string
	// Serve processes the call; an error stops the forward run and is shown
	// to the client (an *apierr.Error, or any error as a 500).
	Serve(ctx context.Context, c *Call) error
}

// Finisher is a Stage that must run even after an earlier stage failed.
// Finish is called instead of Serve once c.Err is set, or once the call was
// answered by an idempotent replay (c.ReplayOf).
type Finisher interface {
	Finish(ctx context.Context, c *Call)
}

// Kind is what a route does, and so which stages its calls run through:
// a chat call, a media job, or a read (models, balance, logs, polls,
// lists, the knowledge base) that bills nothing.
type Kind string

const (
	KindChat Kind = "chat"
	KindJob  Kind = "job"
	KindRead Kind = "read"
)

// Kinds lists every kind of call.
var Kinds = []Kind{KindChat, KindJob, KindRead}

// KindsOf is implemented by a stage that serves only some kinds of call.
// A stage without it serves the billed kinds (chat and job): an
// integrator's guard sees every call that can cost money.
type KindsOf interface {
	Kinds() []Kind
}

// builtinKinds are the kinds each built-in stage serves: reads are
// authenticated and answered, nothing else.
var builtinKinds = map[string][]Kind{
	"auth":        Kinds,
	"agent":       Kinds,
	"allowlist":   {KindChat, KindJob},
	"idempotency": {KindChat, KindJob},
	"precharge":   {KindChat, KindJob},
	"translate":   {KindChat},
	"dispatch":    Kinds,
	"settle":      {KindChat, KindJob},
	"log":         {KindChat, KindJob},
}

func kindsOf(s Stage) []Kind {
	if k, ok := s.(KindsOf); ok {
		return k.Kinds()
	}
	if ks, ok := builtinKinds[s.Name()]; ok {
		return ks
	}
	return []Kind{KindChat, KindJob}
}

// Factory builds a stage from the gateway's dependencies. It validates its
// settings so that a bad config fails at start, not on the first request.
type Factory func(d *Deps, settings map[string]string) (Stage, error)

// Registry maps stage names to factories. It is built explicitly and handed
// to Build; there is no global registry.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns a registry holding the built-in stages.
func NewRegistry() *Registry {
	r := &Registry{factories: map[string]Factory{}}
	r.Register("auth", newAuth)
	r.Register("agent", newAgent)
	r.Register("allowlist", newAllowlist)
	r.Register("idempotency", newIdempotency)
	r.Register("precharge", newPrecharge)
	r.Register("translate", newTranslate)
	r.Register("dispatch", newDispatch)
	r.Register("settle", newSettle)
	r.Register("log", newLog)
	return r
}

// Register adds or replaces a factory.
func (r *Registry) Register(name string, f Factory) { r.factories[name] = f }

// Names lists registered stage names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.factories))
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultOrder is the chain when the config names none.
var DefaultOrder = []string{
	"auth",        // who is calling: key, account, 401/402
	"agent",       // agent keys: only chat completions, as their agent says
	"allowlist",   // which model: registry, then the key's allowlist
	"idempotency", // Idempotency-Key checks
	"precharge",   // hold the worst-case cost, or 402
	"translate",   // pick the upstream protocol, rewrite or translate the body
	"dispatch",    // call the channels in order, relay the answer
	"settle",      // true up the hold on actual usage
	"log",         // the usage-log row
}

// required stages cannot be left out: without them money or the ledger
// breaks (without idempotency a retried call is charged twice).
var required = []string{"auth", "agent", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}

// Chain is a compiled, ordered list of stages.
type Chain struct {
	stages []Stage
	log    hclog.Logger
	tracer trace.Tracer // nil: tracing off
	names  []string     // span names, by stage
	obs    CallObserver // nil: no metrics
}

// Chains are the compiled chain of each kind of call: the configured
// order, each kind keeping the stages that serve it. Auth, limits, money,
// idempotency and the log row are thus the same stage objects for every
// route.
type Chains struct {
	all    *Chain
	byKind map[Kind]*Chain
}

// For returns the chain of one kind of call.
func (cs *Chains) For(k Kind) *Chain { return cs.byKind[k] }

// Stages returns the configured stage names in order.
func (cs *Chains) Stages() []string { return cs.all.Stages() }

// Run takes c through the chain of its kind (chat when unset).
func (cs *Chains) Run(ctx context.Context, c *Call) {
	k := c.Kind
	if k == "" {
		k = KindChat
	}
	cs.byKind[k].Run(ctx, c)
}

// Build compiles the chains in the given order (DefaultOrder when empty).
func Build(reg *Registry, d *Deps, order []string, settings map[string]map[string]string) (*Chains, error) {
	ch, err := build(reg, d, order, settings)
	if err != nil {
		return nil, err
	}
	cs := &Chains{all: ch, byKind: map[Kind]*Chain{}}
	for _, k := range Kinds {
		kc := &Chain{log: ch.log, tracer: d.Tracer, obs: d.Observer}
		for _, s := range ch.stages {
			if slices.Contains(kindsOf(s), k) {
				kc.stages = append(kc.stages, s)
			}
		}
		kc.names = spanNames(kc.stages)
		cs.byKind[k] = kc
	}
	return cs, nil
}

func build(reg *Registry, d *Deps, order []string, settings map[string]map[string]string) (*Chain, error) {
	if len(order) == 0 {
		order = DefaultOrder
	}
	order, err := withAgent(order)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	ch := &Chain{log: d.Logger.Named("pipeline")}
	for _, name := range order {
		if seen[name] {
			return nil, fmt.Errorf("pipeline: stage %q named twice", name)
		}
		seen[name] = true
		f, ok := reg.factories[name]
		if !ok {
			return nil, fmt.Errorf("pipeline: unknown stage %q (known: %s)", name, strings.Join(reg.Names(), ", "))
		}
		s, err := f(d, settings[name])
		if err != nil {
			return nil, fmt.Errorf("pipeline: stage %q: %w", name, err)
		}
		ch.stages = append(ch.stages, s)
	}
	for _, name := range required {
		if !seen[name] {
			return nil, fmt.Errorf("pipeline: stage %q is required", name)
		}
	}
	pos := func(n string) int {
		for i, s := range order {
			if s == n {
				return i
			}
		}
		return -1
	}
	for i := range required {
		for _, later := range required[i+1:] {
			if pos(required[i]) > pos(later) {
				return nil, fmt.Errorf("pipeline: stage %q must come before %q", required[i], later)
			}
		}
	}
	return ch, nil
}

// withAgent puts the agent stage right after auth when the order leaves it
// out (a config written before it existed), and refuses an order that puts
// it anywhere else: no stage may see an agent key's call before the agent
// stage has refused or rewritten it.
func withAgent(order []string) ([]string, error) {
	auth, agent := slices.Index(order, "auth"), slices.Index(order, "agent")
	switch {
	case auth < 0:
		return order, nil // refused below: auth is required
	case agent < 0:
		return slices.Insert(slices.Clone(order), auth+1, "agent"), nil
	case agent != auth+1:
		return nil, fmt.Errorf("pipeline: stage %q must come right after %q", "agent", "auth")
	}
	return order, nil
}

// Stages returns the stage names in order.
func (ch *Chain) Stages() []string {
	out := make([]string, len(ch.stages))
	for i, s := range ch.stages {
		out[i] = s.Name()
	}
	return out
}

// runAfter takes a call that was dispatched elsewhere (a task that ended)
// through the stages that follow the named one: settle and log run again
// at the terminal state, as for any call.
func (ch *Chain) runAfter(ctx context.Context, name string, c *Call) {
	i := slices.IndexFunc(ch.stages, func(s Stage) bool { return s.Name() == name })
	for _, s := range ch.stages[i+1:] {
		if c.Err == nil {
			if err := s.Serve(ctx, c); err != nil {
				c.fail(err)
			}
			continue
		}
		if f, ok := s.(Finisher); ok {
			f.Finish(ctx, c)
		}
	}
	for i := len(c.deferred) - 1; i >= 0; i-- {
		c.deferred[i]()
	}
	if ch.obs != nil {
		ch.obs.TaskDone(c)
	}
}

// Run takes the call through the chain. Errors are rendered right away
// (when nothing was written yet) so the client is not kept waiting for the
// ledger; then the finishing stages run.
func (ch *Chain) Run(ctx context.Context, c *Call) {
	for i, s := range ch.stages {
		if c.Err == nil && c.ReplayOf == "" {
			if err := ch.serveStage(ctx, i, c); err != nil {
				c.fail(err)
				if c.Err.Status >= 500 && c.Err.Cause != nil {
					ch.log.Error("stage failed", "stage", s.Name(), "request_id", c.ID, "error", c.Err.Cause)
				}
				c.renderError()
			}
			continue
		}
		if f, ok := s.(Finisher); ok {
			ch.finishStage(ctx, i, f, c) // after an error, or a replay
		}
	}
	c.flushResponse()
	for i := len(c.deferred) - 1; i >= 0; i-- {
		c.deferred[i]()
	}
	if c.W != nil {
		c.W.deadline.last()
	}
	if ch.obs != nil {
		ch.obs.CallDone(c)
	}
}
