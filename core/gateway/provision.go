package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/server"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/gateway/builtin"
	"github.com/tollgate-gw/tollgate/core/tlsserve"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// Check runs every start-up check of o.Config without serving: the vendor
// plugins are started and configured, the pipeline is built, then all of
// it is stopped. The data directory is not touched (a running gateway
// holds its lock). What `tollgate config check` runs.
func Check(ctx context.Context, o Options) error {
	cfg, log := o.Config, o.Logger
	if err := sharedKeyProblem(cfg); err != nil {
		return err
	}
	reg := o.Stages
	if reg == nil {
		reg = pipeline.NewRegistry()
	}
	plugins := host.New(log.Named("plugin"))
	defer plugins.Close()
	vendors, err := preflight(ctx, cfg, reg, plugins, builtins(o), log)
	if err != nil {
		return err
	}
	if err := tlsserve.Check(cfg); err != nil {
		return err
	}
	jobs, _, err := describeFamilies(ctx, cfg, vendors)
	if err != nil {
		return err
	}
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true, Logger: log.Named("store")})
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = buildChain(reg, &pipeline.Deps{
		Config: cfg, Store: st, Vendors: vendors, Jobs: jobs, Logger: log, Now: time.Now,
		Health: pipeline.NewHealth(time.Now), Auth: pipeline.NewAuthenticator(st, time.Now),
	}, cfg)
	return err
}

// Recheck adds to err, a config file's load problems, those only its
// plugins can see (a family no plugin serves, a media model's missing
// price with its family's unit): the plugins the file names are started
// from what loaded, asked for their families, and stopped, so that every
// problem of the file shows at once. err is returned as it is when the
// plugins cannot tell more.
func Recheck(ctx context.Context, o Options, err error) error {
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Partial() == nil {
		return err
	}
	cfg, log := ce.Partial(), o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	plugins := host.New(log.Named("plugin"))
	defer plugins.Close()
	vendors, verr := startVendors(ctx, cfg, plugins, builtins(o), log)
	if verr != nil {
		return err
	}
	var fe *config.Error
	if _, _, ferr := describeFamilies(ctx, cfg, vendors); !errors.As(ferr, &fe) {
		return err
	}
	return join([]*config.Error{ce, fe})
}

// refuseUnsupported refuses what this version cannot do rather than serve
// something else than the operator asked for.
func refuseUnsupported(cfg *config.Config) error {
	if cfg.Server.HTTPListen != "" && cfg.Server.TLS == nil {
		return cfg.Refuse(config.Ref{Kind: "server", Attr: "http_listen"},
			"http_listen serves ACME challenges and the redirect to HTTPS; without a tls block there is nothing to redirect to (remove it, or add server { tls {...} })")
	}
	return nil
}

// pluginSpec is where a vendor's code runs: its plugin binary at path,
// or, for a channel with transport = "in-process", the built-in vendor.
type pluginSpec struct {
	name    string
	path    string
	procs   int   // the plugin block's gomaxprocs; 0: the host's default
	memory  int64 // the plugin block's memory_limit; 0: the host's default
	builtin host.Builtin
}

// exec is how the host starts sp's process.
func (sp pluginSpec) exec() host.Exec {
	return host.Exec{Path: sp.path, Procs: sp.procs, MemoryLimit: sp.memory}
}

// startFunc starts (or, on a reload, reconfigures) the plugin of sp with
// its config.
type startFunc func(ctx context.Context, sp pluginSpec, vc vendor.Config) (vendor.Vendor, error)

// builtins are the vendors that may run in process: the Options', else
// those built into this binary.
func builtins(o Options) map[string]host.Builtin {
	if o.Builtins != nil {
		return o.Builtins
	}
	return builtin.Vendors()
}

// startVendors launches each vendor plugin the channels use, handing each
// only its own channels and secrets. Every problem (a vendor with no
// plugin, a channel its plugin refuses) is reported at its place in the
// file, all of them at once.
func startVendors(ctx context.Context, cfg *config.Config, h *host.Host, in map[string]host.Builtin, log hclog.Logger) (map[string]vendor.Vendor, error) {
	return eachVendor(ctx, cfg, in, func(ctx context.Context, sp pluginSpec, vc vendor.Config) (vendor.Vendor, error) {
		if sp.builtin != nil {
			return h.StartInProcess(ctx, sp.name, sp.builtin, vc)
		}
		return h.Start(ctx, sp.name, sp.exec(), vc)
	}, log)
}

// eachVendor finds each plugin the channels use (its binary, or the
// built-in vendor of in for one that runs in process) and hands it to
// start with its config.
func eachVendor(ctx context.Context, cfg *config.Config, in map[string]host.Builtin, start startFunc, log hclog.Logger) (map[string]vendor.Vendor, error) {
	out := map[string]vendor.Vendor{}
	var problems []*config.Error
	for _, name := range cfg.PluginNames() {
		sp := pluginSpec{name: name}
		if cfg.InProcess(name) {
			if sp.builtin = in[name]; sp.builtin == nil {
				problems = append(problems, notBuiltin(cfg, name, in))
				continue
			}
		} else {
			var explicit string
			for _, p := range cfg.Plugins {
				if p.Name == name {
					explicit, sp.procs, sp.memory = p.Path, p.GOMAXPROCS, p.MemoryLimit
				}
			}
			path, err := host.Find(name, explicit)
			if err != nil {
				problems = append(problems, noPlugin(cfg, name, explicit)...)
				continue
			}
			sp.path = path
		}
		v, err := start(ctx, sp, vendorConfig(cfg, name))
		if err != nil {
			problems = append(problems, pluginRefused(cfg, name, sp.where(), err))
			continue
		}
		out[name] = v
		log.Debug("plugin started", "name", name, "path", sp.where())
	}
	return out, join(problems)
}

// where names the plugin's code for messages: its binary, or "in process".
func (sp pluginSpec) where() string {
	if sp.builtin != nil {
		return "built in, in process"
	}
	return sp.path
}

// notBuiltin refuses transport = "in-process" for a vendor this binary
// does not carry, at the first channel asking for it.
func notBuiltin(cfg *config.Config, name string, in map[string]host.Builtin) *config.Error {
	ref := config.Ref{Kind: "channel"}
	for _, ch := range cfg.Channels {
		if ch.Vendor == name {
			ref.Name, ref.Attr = ch.Name, "transport"
			break
		}
	}
	return cfg.Refuse(ref, "the vendor %q is not built into tollgate, so it cannot run in process (the built-in vendors are %s); a third-party plugin runs out of process: remove transport",
		name, strings.Join(slices.Sorted(maps.Keys(in)), ", "))
}

// vendorConfig is what the plugin name is configured with: its settings
// and its own channels, with their secrets.
func vendorConfig(cfg *config.Config, name string) vendor.Config {
	vc := vendor.Config{AllowPrivateURLs: cfg.Server.AllowPrivateURLs, MaxEventBytes: cfg.Server.MaxEventSizeOrDefault()}
	for _, p := range cfg.Plugins {
		if p.Name == name {
			vc.Settings = p.Settings
		}
	}
	for _, ch := range cfg.Channels {
		if ch.Vendor == name {
			vc.Channels = append(vc.Channels, vendor.Channel{
				Name: ch.Name, BaseURL: ch.BaseURL, APIKey: ch.APIKey,
				Protocols: ch.Protocols, Settings: ch.Settings,
			})
		}
	}
	return vc
}

// noPlugin says a vendor has no plugin binary, at each channel naming it
// (or at the plugin block's path), with the vendor it was probably meant
// to be.
func noPlugin(cfg *config.Config, name, explicit string) []*config.Error {
	if explicit != "" {
		return []*config.Error{cfg.Refuse(config.Ref{Kind: "plugin", Name: name, Attr: "path"}, "no plugin binary at %s", explicit)}
	}
	found := host.Available()
	hint := didYouMean(name, found)
	have := "no plugin was found"
	if len(found) > 0 {
		have = "the plugins found are " + strings.Join(found, ", ")
	}
	var out []*config.Error
	for _, ch := range cfg.Channels {
		if ch.Vendor == name {
			out = append(out, cfg.Refuse(config.Ref{Kind: "channel", Name: ch.Name, Attr: "vendor"},
				"vendor %q has no plugin%s; %s (a vendor is a binary tollgate-plugin-NAME beside tollgate or in $TOLLGATE_PLUGIN_DIR: build them with `make plugins`, or name one with plugin %q { path = \"...\" })",
				name, hint, have, name))
		}
	}
	return out
}

// pluginRefused places a plugin's refusal of its config: at the channel
// and attribute it names, else at the plugin's block or its first channel.
func pluginRefused(cfg *config.Config, name, path string, err error) *config.Error {
	first := config.Ref{Kind: "plugin", Name: name}
	if !cfg.Has(first) {
		for _, ch := range cfg.Channels {
			if ch.Vendor == name {
				first = config.Ref{Kind: "channel", Name: ch.Name, Attr: "vendor"}
				break
			}
		}
	}
	var ce *vendor.ConfigError
	switch {
	case errors.As(err, &ce) && ce.Channel != "":
		return cfg.Refuse(config.Ref{Kind: "channel", Name: ce.Channel, Attr: ce.Field}, "%s", ce.Message)
	case errors.As(err, &ce) && first.Kind == "plugin":
		return cfg.Refuse(config.Ref{Kind: "plugin", Name: name, Attr: ce.Field}, "%s", ce.Message)
	case errors.As(err, &ce):
		return cfg.Refuse(first, "plugin %q refused its configuration: %s", name, ce.Message)
	}
	return cfg.Refuse(first, "the plugin %q (%s) did not start: %v", name, path, err)
}

// checkStages refuses, before anything starts, unknown stage names and
// settings of a stage the chain does not run (they would be ignored).
func checkStages(reg *pipeline.Registry, cfg *config.Config) []*config.Error {
	var problems []*config.Error
	order := cfg.Pipeline.Stages
	if len(order) == 0 {
		order = pipeline.DefaultOrder
	}
	for _, name := range cfg.Pipeline.Stages {
		if !slices.Contains(reg.Names(), name) {
			problems = append(problems, cfg.Refuse(config.Ref{Kind: "pipeline", Attr: "stages"},
				"unknown stage %q%s; the stages are %s", name, didYouMean(name, reg.Names()), strings.Join(reg.Names(), ", ")))
		}
	}
	names := make([]string, 0, len(cfg.Pipeline.Settings))
	for name := range cfg.Pipeline.Settings {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(order, name) {
			problems = append(problems, cfg.Refuse(config.Ref{Kind: "stage", Name: name},
				"the pipeline does not run this stage%s, so its settings would be ignored; add it to pipeline { stages = [...] } or remove the block",
				didYouMean(name, order)))
		}
	}
	return problems
}

// buildChain builds the pipeline; a stage refusing its settings is
// reported at its stage block, anything else at pipeline.stages.
func buildChain(reg *pipeline.Registry, deps *pipeline.Deps, cfg *config.Config) (*pipeline.Chains, error) {
	chain, err := pipeline.Build(reg, deps, cfg.Pipeline.Stages, cfg.Pipeline.Settings)
	if err == nil {
		return chain, nil
	}
	msg := strings.TrimPrefix(err.Error(), "pipeline: ")
	for name := range cfg.Pipeline.Settings {
		if rest, ok := strings.CutPrefix(msg, fmt.Sprintf("stage %q: ", name)); ok {
			return nil, cfg.Refuse(config.Ref{Kind: "stage", Name: name, Attr: "settings"}, "%s", rest)
		}
	}
	return nil, cfg.Refuse(config.Ref{Kind: "pipeline", Attr: "stages"}, "%s", msg)
}

func didYouMean(name string, options []string) string {
	if s := config.Suggest(name, options); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// preflight starts the vendor plugins after the checks that need nothing
// running, and reports every problem of both at once.
func preflight(ctx context.Context, cfg *config.Config, reg *pipeline.Registry, h *host.Host, in map[string]host.Builtin, log hclog.Logger) (map[string]vendor.Vendor, error) {
	if err := refuseUnsupported(cfg); err != nil {
		return nil, err
	}
	problems := checkStages(reg, cfg)
	vendors, err := startVendors(ctx, cfg, h, in, log)
	var ce *config.Error
	if errors.As(err, &ce) {
		problems = append(problems, ce)
	} else if err != nil {
		return nil, err
	}
	return vendors, join(problems)
}

// join merges problems into one *config.Error in file order; nil if none.
func join(problems []*config.Error) error {
	if len(problems) == 0 {
		return nil
	}
	all := &config.Error{}
	for _, p := range problems {
		all.Diagnostics = append(all.Diagnostics, p.Diagnostics...)
	}
	slices.SortStableFunc(all.Diagnostics, func(a, b *hcl.Diagnostic) int {
		switch {
		case a.Subject == nil || b.Subject == nil:
			return 0
		}
		return a.Subject.Start.Byte - b.Subject.Start.Byte
	})
	return all
}

// describeFamilies reads the endpoint families the running plugins serve
// (their Describe) and checks the config against them: two plugins of one
// family must describe it alike, a family a model or channel names must
// be chat or one of theirs, a channel's families must be served by its
// vendor, a media model needs a channel that serves its family and a
// price in the units its family bills.
func describeFamilies(ctx context.Context, cfg *config.Config, vendors map[string]vendor.Vendor) (map[string]vendor.Jobs, []*vendor.FamilySpec, error) {
	jobs := map[string]vendor.Jobs{}
	specs := map[string]*vendor.FamilySpec{}
	known := []string{config.DefaultFamily} // in the order the plugins describe them
	by := map[string]string{}               // family -> the plugin that first described it
	serves := map[string][]string{}         // plugin -> families
	for _, name := range cfg.PluginNames() {
		v := vendors[name]
		if v == nil {
			continue
		}
		d, err := v.Describe(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("plugin %q: describe: %w", name, err)
		}
		serves[name] = append(serves[name], d.Families...)
		if len(d.Specs) == 0 {
			continue
		}
		j, ok := v.(vendor.Jobs)
		if !ok {
			return nil, nil, fmt.Errorf("plugin %q describes endpoint families but cannot serve them", name)
		}
		jobs[name] = j
		for i := range d.Specs {
			sp := d.Specs[i]
			serves[name] = append(serves[name], sp.Name)
			if prev, ok := specs[sp.Name]; ok {
				if !vendor.SameSpec(prev, &sp) {
					return nil, nil, fmt.Errorf("plugins %q and %q describe the %s family differently (routes or limits); build them from the same version", by[sp.Name], name, sp.Name)
				}
				continue
			}
			specs[sp.Name], by[sp.Name] = &sp, name
			known = append(known, sp.Name)
		}
	}
	var problems []*config.Error
	unknown := func(f string) bool { return f != config.DefaultFamily && specs[f] == nil }
	want := strings.Join(known, ", ")
	for _, ch := range cfg.Channels {
		for _, f := range ch.Families {
			if unknown(f) {
				problems = append(problems, cfg.RefuseItem(config.Ref{Kind: "channel", Name: ch.Name, Attr: "families"}, f,
					"unknown family %q (want one of %s)", f, want))
			} else if f != config.DefaultFamily && !slices.Contains(serves[ch.Vendor], f) {
				problems = append(problems, cfg.Refuse(config.Ref{Kind: "channel", Name: ch.Name, Attr: "families"},
					"the vendor %q does not serve the %s family (it serves %s)", ch.Vendor, f, strings.Join(serves[ch.Vendor], ", ")))
			}
		}
	}
	for i := range cfg.Models {
		m := &cfg.Models[i]
		if m.Family == "" || m.Family == config.DefaultFamily {
			continue
		}
		if cfg.Unpriced(m) {
			problems = append(problems, cfg.RefuseUnpriced(m, priceExample(m, specs[m.Family])))
		}
		if unknown(m.Family) {
			problems = append(problems, cfg.Refuse(config.Ref{Kind: "model", Name: m.ID, Attr: "family"},
				"unknown family %q (want one of %s)", m.Family, want))
			continue
		}
		served := false
		for _, ch := range cfg.ChannelsFor(m.ID) {
			if _, ok := jobs[ch.Vendor]; ok && specs[m.Family] != nil && slices.Contains(ch.Families, m.Family) {
				served = true
			}
		}
		if !served && len(cfg.ChannelsFor(m.ID)) > 0 {
			problems = append(problems, cfg.Refuse(config.Ref{Kind: "model", Name: m.ID, Attr: "family"},
				"no channel of model %q has a plugin serving the %s family", m.ID, m.Family))
		}
	}
	problems = append(problems, unpriced(cfg, specs)...)
	if err := join(problems); err != nil {
		return nil, nil, err
	}
	out := make([]*vendor.FamilySpec, 0, len(specs))
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		out = append(out, specs[name])
	}
	// One route, several families: they must declare it alike, or the
	// server could not serve it for both.
	if _, err := server.GroupRoutes(out); err != nil {
		return nil, nil, fmt.Errorf("plugins declare family routes that cannot be served together: %w", err)
	}
	return jobs, out, nil
}

// unpriced refuses, by file and line, a media model whose price {} lacks
// a unit a route it is called on bills: it would serve for nothing. A
// model is called on its family's create routes that name it, or else on
// those that name no model.
func unpriced(cfg *config.Config, specs map[string]*vendor.FamilySpec) []*config.Error {
	var out []*config.Error
	for i := range cfg.Models {
		m := &cfg.Models[i]
		spec := specs[m.Family]
		if spec == nil || m.Free || cfg.Unpriced(m) {
			continue
		}
		for _, unit := range billedUnits(m, spec) {
			if !m.Price.Prices(unit) {
				out = append(out, cfg.Refuse(config.Ref{Kind: "model", Name: m.ID, Attr: "price"},
					"model %q is a %s model, billed %s, and its price {} does not set %s (or write free = true)", m.ID, m.Family, unit, unit))
				break
			}
		}
	}
	return out
}

// billedUnits are the price units model m of spec's family is billed in:
// those of its family's create routes that name it, or else of those that
// name no model.
func billedUnits(m *config.Model, spec *vendor.FamilySpec) []string {
	var own, open []string
	for j := range spec.Routes {
		rt := &spec.Routes[j]
		if rt.Kind != vendor.RouteCreate {
			continue
		}
		unit := spec.BillingOf(rt).PriceUnit
		switch rt.Model {
		case m.ID:
			own = append(own, unit)
		case "":
			open = append(open, unit)
		}
	}
	if len(own) == 0 {
		return open
	}
	return own
}

// priceExample is how model m of spec's family is priced, for the
// problem of its missing price ("" when its family is unknown: chat's
// tokens).
func priceExample(m *config.Model, spec *vendor.FamilySpec) string {
	if spec == nil {
		return ""
	}
	units := slices.Compact(slices.Sorted(slices.Values(billedUnits(m, spec))))
	a := english.A(m.Family + " model")
	switch len(units) {
	case 0:
		units = []string{spec.PriceUnit}
	case 1:
	default:
		return fmt.Sprintf("%s: per unit, one of %s or %s", a, strings.Join(units[:len(units)-1], ", "), units[len(units)-1])
	}
	return fmt.Sprintf(`%s: per unit, e.g. price { %s = "0.04" }`, a, units[0])
}
