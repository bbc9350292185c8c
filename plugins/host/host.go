// Package host starts vendor plugin processes, keeps one long-lived client
// per plugin, restarts a plugin that dies, and kills them all on Close.
package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Host supervises plugin processes.
type Host struct {
	log     hclog.Logger
	mu      sync.Mutex
	plugins []*Plugin
	closed  bool
}

// New returns a host logging through log.
func New(log hclog.Logger) *Host {
	return &Host{log: log}
}

// Find locates a plugin binary: the explicit path when given, else
// tollgate-plugin-NAME beside the running executable, else in
// $TOLLGATE_PLUGIN_DIR.
func Find(name, explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("plugin %q: %w", name, err)
		}
		return explicit, nil
	}
	file := "tollgate-plugin-" + name
	var looked []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), file)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		looked = append(looked, p)
	}
	if dir := os.Getenv("TOLLGATE_PLUGIN_DIR"); dir != "" {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		looked = append(looked, p)
	}
	return "", fmt.Errorf("plugin %q not found (looked for %v; build it with `make plugins`, or set plugin %q { path = \"...\" })", name, looked, name)
}

// Start launches a plugin and configures it. The returned Vendor stays
// valid across restarts of the process.
func (h *Host) Start(ctx context.Context, name, path string, cfg vendor.Config) (vendor.Vendor, error) {
	p := &Plugin{name: name, path: path, cfg: cfg, log: h.log.Named(name), stop: make(chan struct{})}
	if err := p.launch(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		p.kill()
		return nil, errors.New("host is closed")
	}
	h.plugins = append(h.plugins, p)
	h.mu.Unlock()
	go p.supervise()
	return p, nil
}

// Close kills every plugin process and waits for them.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	ps := h.plugins
	h.plugins = nil
	h.mu.Unlock()
	for _, p := range ps {
		p.kill()
	}
}

// Plugin is one supervised plugin process, and a vendor.Vendor.
type Plugin struct {
	name, path string
	cfg        vendor.Config
	log        hclog.Logger
	stop       chan struct{}
	stopOnce   sync.Once

	mu     sync.RWMutex
	client *plugin.Client
	v      vendor.Vendor
}

func (p *Plugin) launch(ctx context.Context) error {
	cmd := exec.Command(p.path)
	cmd.Env = []string{} // a plugin sees only its own config, never the host's environment
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  vendor.Handshake,
		Plugins:          map[string]plugin.Plugin{vendor.PluginName: &vendor.GRPCPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           p.log,
		SkipHostEnv:      true,
		StartTimeout:     15 * time.Second,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(vendor.MaxMessage), grpc.MaxCallSendMsgSize(vendor.MaxMessage))},
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return fmt.Errorf("start plugin %s: %w", p.name, err)
	}
	raw, err := rpc.Dispense(vendor.PluginName)
	if err != nil {
		client.Kill()
		return fmt.Errorf("plugin %s: %w", p.name, err)
	}
	v, ok := raw.(vendor.Vendor)
	if !ok {
		client.Kill()
		return fmt.Errorf("plugin %s does not serve the vendor interface", p.name)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := v.Configure(cctx, p.cfg); err != nil {
		client.Kill()
		return fmt.Errorf("configure plugin %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.client, p.v = client, v
	p.mu.Unlock()
	return nil
}

// supervise restarts the process when it exits, with backoff.
func (p *Plugin) supervise() {
	backoff := 100 * time.Millisecond
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		p.mu.RLock()
		c := p.client
		p.mu.RUnlock()
		if c != nil && !c.Exited() {
			continue
		}
		p.log.Warn("plugin exited; restarting", "backoff", backoff)
		p.mu.Lock()
		p.v = nil
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-time.After(backoff):
		}
		if err := p.launch(context.Background()); err != nil {
			p.log.Error("plugin restart failed", "error", err)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		p.log.Info("plugin restarted")
		backoff = 100 * time.Millisecond
	}
}

func (p *Plugin) kill() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.mu.Lock()
	c := p.client
	p.client, p.v = nil, nil
	p.mu.Unlock()
	if c != nil {
		c.Kill()
	}
}

// current returns the live client, or a connect failure while the process
// is down or restarting.
func (p *Plugin) current() (vendor.Vendor, *plugin.Client, error) {
	p.mu.RLock()
	v, c := p.v, p.client
	p.mu.RUnlock()
	if v == nil || c == nil || c.Exited() {
		return nil, nil, &vendor.Failure{Kind: vendor.FailureConnect, Message: "the vendor plugin " + p.name + " is not running"}
	}
	return v, c, nil
}

// transport turns an error of a dead or dying plugin into a connect failure.
func (p *Plugin) transport(c *plugin.Client, err error) error {
	if err == nil {
		return nil
	}
	var f *vendor.Failure
	if errors.As(err, &f) {
		return err
	}
	if c.Exited() {
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "the vendor plugin " + p.name + " exited during the call"}
	}
	return &vendor.Failure{Kind: vendor.FailureConnect, Message: "the vendor plugin " + p.name + " failed: " + err.Error()}
}

// Describe asks the plugin what it is.
func (p *Plugin) Describe(ctx context.Context) (vendor.Description, error) {
	v, c, err := p.current()
	if err != nil {
		return vendor.Description{}, err
	}
	d, err := v.Describe(ctx)
	return d, p.transport(c, err)
}

// Configure replaces the plugin's config (kept for restarts).
func (p *Plugin) Configure(ctx context.Context, cfg vendor.Config) error {
	p.mu.Lock()
	p.cfg = cfg
	p.mu.Unlock()
	v, c, err := p.current()
	if err != nil {
		return err
	}
	return p.transport(c, v.Configure(ctx, cfg))
}

// Chat makes one non-streaming call through the plugin.
func (p *Plugin) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	v, c, err := p.current()
	if err != nil {
		return nil, err
	}
	resp, err := v.Chat(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &vendor.Failure{Kind: vendor.FailureCanceled, Message: ctx.Err().Error()}
		}
		return nil, p.transport(c, err)
	}
	return resp, nil
}

// ChatStream makes one streaming call through the plugin.
func (p *Plugin) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	v, c, err := p.current()
	if err != nil {
		return err
	}
	s := &sinkGuard{Sink: sink}
	err = v.ChatStream(ctx, req, s)
	if err == nil || s.err != nil {
		return err // a sink error is the client's, not the plugin's
	}
	if ctx.Err() != nil {
		var f *vendor.Failure
		if !errors.As(err, &f) {
			return &vendor.Failure{Kind: vendor.FailureCanceled, Message: ctx.Err().Error()}
		}
		return err
	}
	err = p.transport(c, err)
	var f *vendor.Failure
	if s.started && errors.As(err, &f) && f.Kind == vendor.FailureConnect {
		// The process died mid-answer: for the caller the answer broke off.
		f.Kind = vendor.FailureBroken
	}
	return err
}

// sinkGuard remembers whether the stream started and whether the sink failed.
type sinkGuard struct {
	vendor.Sink
	started bool
	err     error
}

func (s *sinkGuard) Head(h vendor.Head) error {
	s.started = true
	s.err = s.Sink.Head(h)
	return s.err
}

func (s *sinkGuard) Event(e vendor.Event) error {
	s.err = s.Sink.Event(e)
	return s.err
}

var _ vendor.Vendor = (*Plugin)(nil)
