package host

import (
	"cmp"
	"slices"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Get returns the running plugin named name, or nil.
func (h *Host) Get(name string) *Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.plugins {
		if p.name == name {
			return p
		}
	}
	return nil
}

// Stop kills the plugin named name and forgets it (a config reload that
// no longer uses it). Calls under way on it fail as for a dead process.
func (h *Host) Stop(name string) {
	h.mu.Lock()
	i := slices.IndexFunc(h.plugins, func(p *Plugin) bool { return p.name == name })
	if i < 0 {
		h.mu.Unlock()
		return
	}
	p := h.plugins[i]
	h.plugins = slices.Delete(h.plugins, i, i+1)
	h.mu.Unlock()
	p.kill()
}

// Stat is one plugin as probes and metrics see it.
type Stat struct {
	Name     string
	Up       bool  // its process runs and answers
	Restarts int64 // times it was started again after an exit
}

// Stats reports every plugin, sorted by name.
func (h *Host) Stats() []Stat {
	h.mu.Lock()
	ps := slices.Clone(h.plugins)
	h.mu.Unlock()
	out := make([]Stat, 0, len(ps))
	for _, p := range ps {
		out = append(out, Stat{Name: p.name, Up: p.up(), Restarts: p.restarts.Load()})
	}
	slices.SortFunc(out, func(a, b Stat) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Name is the plugin's name (its vendor); Path its binary.
func (p *Plugin) Name() string { return p.name }

// Path is the plugin's binary.
func (p *Plugin) Path() string { return p.path }

// Procs is the GOMAXPROCS its process runs with (0 in process).
func (p *Plugin) Procs() int { return p.procs }

// MemoryLimit is the GOMEMLIMIT its process runs with, bytes (0 in process).
func (p *Plugin) MemoryLimit() int64 { return p.memLimit }

// Config is the configuration the plugin was last given.
func (p *Plugin) Config() vendor.Config {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cfg
}
