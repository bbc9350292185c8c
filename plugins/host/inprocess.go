package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Builtin makes one of the vendors built into the gateway's binary, for
// the in-process transport (channel { transport = "in-process" }): the
// same Go value its plugin binary serves, called without a process or a
// socket between. log is the host's logger, named after the vendor.
type Builtin func(log hclog.Logger) vendor.Vendor

// StartInProcess runs a built-in vendor inside the gateway's process and
// configures it, over the in-process transport (vendor.InProcess). The
// returned Plugin behaves as a process's does (the same failures, the
// same Jobs), except that there is nothing to restart: it is up until the
// host stops it. A panic of one of its calls fails that call as a plugin
// dying under it would; a panic on a goroutine of its own ends the
// gateway, as one of the gateway's own would.
func (h *Host) StartInProcess(ctx context.Context, name string, newVendor Builtin, cfg vendor.Config) (vendor.Vendor, error) {
	if newVendor == nil {
		return nil, fmt.Errorf("plugin %s: no built-in vendor of that name", name)
	}
	life, cancel := context.WithCancel(context.Background())
	p := &Plugin{
		name: name, cfg: cfg, log: h.log.Named(name), builtin: newVendor,
		life: life, cancel: cancel, done: make(chan struct{}),
		wait: &h.wait, changed: make(chan struct{}),
	}
	close(p.done) // nothing supervises it
	if err := p.launch(ctx); err != nil {
		cancel()
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		p.kill()
		return nil, errors.New("host is closed")
	}
	h.plugins = append(h.plugins, p)
	return p, nil
}

// launchInProcess makes the built-in vendor and configures it.
func (p *Plugin) launchInProcess(ctx context.Context) error {
	v := vendor.InProcess(p.builtin(p.log), p.log)
	return p.configure(ctx, nil, v, func() { closeClient(v) })
}

// InProcess reports whether the vendor runs inside the gateway's process.
func (p *Plugin) InProcess() bool { return p.builtin != nil }
