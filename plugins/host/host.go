// Package host starts vendor plugin processes, keeps one long-lived client
// per plugin, restarts a plugin that dies, and kills them all on Close. It
// also runs the built-in vendors inside the gateway's process when a
// channel asks for it (inprocess.go), behind the same Plugin type.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	wait    atomic.Int64 // RestartWait, in nanoseconds
}

// DefaultRestartWait is how long a call waits for a plugin the host is
// restarting, unless SetRestartWait says otherwise.
const DefaultRestartWait = 2 * time.Second

// New returns a host logging through log.
func New(log hclog.Logger) *Host {
	h := &Host{log: log}
	h.wait.Store(int64(DefaultRestartWait))
	return h
}

// SetRestartWait sets how long a call waits for a plugin that is down
// (restarting) before it fails as unreachable; 0 means the default.
func (h *Host) SetRestartWait(d time.Duration) {
	if d <= 0 {
		d = DefaultRestartWait
	}
	h.wait.Store(int64(d))
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
	file := filePrefix + name
	var looked []string
	for _, dir := range searchDirs() {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		looked = append(looked, p)
	}
	return "", fmt.Errorf("plugin %q not found (looked for %s; build it with `make plugins`, or set plugin %q { path = \"...\" })", name, strings.Join(looked, ", "), name)
}

const filePrefix = "tollgate-plugin-"

// searchDirs are where Find looks: beside the running executable, then
// $TOLLGATE_PLUGIN_DIR.
func searchDirs() []string {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	if dir := os.Getenv("TOLLGATE_PLUGIN_DIR"); dir != "" {
		dirs = append(dirs, dir)
	}
	return dirs
}

// Available lists the plugin names Find would find without an explicit
// path, sorted: what a misspelt vendor is compared with.
func Available() []string {
	var out []string
	for _, dir := range searchDirs() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), filePrefix)
			if ok && name != "" && !e.IsDir() && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Exec is how a plugin process is started: its binary, how many threads
// it runs Go code on (0: DefaultProcs), and its soft memory limit in bytes
// (0: none, Go's default).
type Exec struct {
	Path        string
	Procs       int
	MemoryLimit int64
}

// Start launches a plugin and configures it. The returned Vendor stays
// valid across restarts of the process.
func (h *Host) Start(ctx context.Context, name string, exe Exec, cfg vendor.Config) (vendor.Vendor, error) {
	if exe.Procs <= 0 {
		exe.Procs = DefaultProcs()
	}
	life, cancel := context.WithCancel(context.Background())
	p := &Plugin{
		name: name, path: exe.Path, procs: exe.Procs, memLimit: exe.MemoryLimit, cfg: cfg, log: h.log.Named(name),
		life: life, cancel: cancel, done: make(chan struct{}),
		wait: &h.wait, changed: make(chan struct{}),
	}
	if err := p.launch(ctx); err != nil {
		cancel()
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		close(p.done)
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
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.kill()
		}()
	}
	wg.Wait()
}

// Plugin is one supervised plugin process, and a vendor.Vendor.
type Plugin struct {
	name, path string
	procs      int   // the process's GOMAXPROCS
	memLimit   int64 // the process's GOMEMLIMIT, bytes
	cfg        vendor.Config
	log        hclog.Logger
	life       context.Context // ends when the host kills the plugin
	cancel     context.CancelFunc
	done       chan struct{} // closed when supervise returns

	mu      sync.RWMutex
	client  *plugin.Client
	v       vendor.Vendor
	changed chan struct{} // closed (and replaced) when client and v change
	alive   atomic.Bool   // v is set and its process was last seen running

	wait     *atomic.Int64 // the host's RestartWait
	restarts atomic.Int64  // processes started again after an exit

	// builtin, when set, makes the vendor inside the gateway's process
	// (the in-process transport): no process, client stays nil.
	builtin Builtin
}

// set replaces the client and its vendor and wakes the calls waiting for
// them; p.mu is held.
func (p *Plugin) set(c *plugin.Client, v vendor.Vendor) {
	p.client, p.v = c, v
	p.alive.Store(v != nil && (c != nil || p.builtin != nil))
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Plugin) launch(ctx context.Context) error {
	if p.builtin != nil {
		return p.launchInProcess(ctx)
	}
	cmd := exec.Command(p.path)
	// A plugin sees only its own config, never the host's environment; it
	// is told how many threads to run Go code on and its memory limit.
	cmd.Env = []string{"GOMAXPROCS=" + strconv.Itoa(p.procs)}
	if p.memLimit > 0 {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+strconv.FormatInt(p.memLimit, 10))
	}
	ownGroup(cmd)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  vendor.Handshake,
		Plugins:          map[string]plugin.Plugin{vendor.PluginName: &vendor.GRPCPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           p.log,
		SkipHostEnv:      true,
		// The control channel (where the data plane's token travels) is
		// mutual TLS with certificates made for this process.
		AutoMTLS:     true,
		StartTimeout: 15 * time.Second,
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
	return p.configure(ctx, client, v, client.Kill)
}

// DefaultProcs is a plugin process's GOMAXPROCS unless its plugin block
// sets gomaxprocs: half the gateway's, at least 1. A plugin does well under half of a call's work (the hop and
// the vendor's HTTP client), and an idle Go process with more Ps than it
// needs spends CPU on every wake-up: spinning threads looking for work,
// another thread woken for each goroutine hand-off. With one P instead of
// two here, a plugin spent about 15% less CPU per call.
func DefaultProcs() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// configure hands v the plugin's config and makes it current; on a
// refusal it calls abandon and keeps nothing.
func (p *Plugin) configure(ctx context.Context, client *plugin.Client, v vendor.Vendor, abandon func()) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p.mu.RLock()
	cfg := p.cfg
	p.mu.RUnlock()
	if err := v.Configure(cctx, cfg); err != nil {
		abandon()
		return fmt.Errorf("configure plugin %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.set(client, v)
	p.mu.Unlock()
	return nil
}

// supervise restarts the process when it exits, with backoff. go-plugin
// offers no exit notification, so it polls (cheaply: a flag read).
func (p *Plugin) supervise() {
	defer close(p.done)
	backoff := 100 * time.Millisecond
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.life.Done():
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
		old := p.v
		p.set(p.client, nil)
		p.mu.Unlock()
		closeClient(old)
		if old != nil && c != nil {
			c.Kill() // the process is gone; this closes its gRPC connection
		}
		select {
		case <-p.life.Done():
			return
		case <-time.After(backoff):
		}
		if err := p.launch(p.life); err != nil {
			p.log.Error("plugin restart failed", "error", err)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		p.log.Info("plugin restarted")
		p.restarts.Add(1)
		backoff = 100 * time.Millisecond
	}
}

// kill stops supervision, then the process: a restart under way finishes
// first, so the process it started is killed too.
func (p *Plugin) kill() {
	p.cancel()
	if p.builtin == nil {
		<-p.done
	}
	p.mu.Lock()
	c, v := p.client, p.v
	p.set(nil, nil)
	p.mu.Unlock()
	closeClient(v)
	if c != nil {
		c.Kill()
	}
}

// closeClient closes what a plugin's client holds open beside its gRPC
// connection (the data plane's idle connections).
func closeClient(v vendor.Vendor) {
	if c, ok := v.(io.Closer); ok {
		_ = c.Close()
	}
}

// current returns the live client. While the process is down or
// restarting it waits for it, up to the host's RestartWait (or ctx's end),
// then fails as a connect failure of a dead plugin.
func (p *Plugin) current(ctx context.Context) (vendor.Vendor, *plugin.Client, error) {
	var timeout <-chan time.Time
	for {
		p.mu.RLock()
		v, c, changed := p.v, p.client, p.changed
		p.mu.RUnlock()
		if v != nil && (c != nil && !c.Exited() || p.builtin != nil) {
			return v, c, nil
		}
		if timeout == nil {
			t := time.NewTimer(time.Duration(p.wait.Load()))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-time.After(25 * time.Millisecond): // exited, not yet noticed
		case <-timeout:
			return nil, nil, &vendor.Failure{Kind: vendor.FailureConnect,
				Message: "the vendor plugin " + p.name + " is not running (it did not come back within " + time.Duration(p.wait.Load()).String() + ")"}
		case <-ctx.Done():
			return nil, nil, ctxFailure(ctx.Err())
		case <-p.life.Done():
			return nil, nil, &vendor.Failure{Kind: vendor.FailureConnect, Message: "the vendor plugin " + p.name + " is stopped"}
		}
	}
}

// up reports whether the process runs now (no wait).
func (p *Plugin) up() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.v != nil && (p.builtin != nil || p.client != nil && !p.client.Exited())
}

// Up reports whether the plugin's process ran when the host last looked
// (at most 25 ms ago), without a lock: dispatch tries the channels of a
// plugin that is down last.
func (p *Plugin) Up() bool { return p.alive.Load() }

// died is the failure of a call whose plugin process died under it: the
// call may be made again once the plugin is back (vendor.Failure.PluginDied).
func (p *Plugin) died() *vendor.Failure {
	return &vendor.Failure{Kind: vendor.FailureConnect, Message: "the vendor plugin " + p.name + " exited during the call", PluginDied: true}
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
	if c != nil && exited(c) {
		return p.died()
	}
	return &vendor.Failure{Kind: vendor.FailureConnect, Message: "the vendor plugin " + p.name + " failed: " + err.Error()}
}

// exited reports whether the process is gone, giving it a moment: the
// connection breaks a little before the process is reaped.
func exited(c *plugin.Client) bool {
	for range 25 {
		if c.Exited() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// ctxFailure is the failure of a call whose context ended.
func ctxFailure(err error) *vendor.Failure {
	if errors.Is(err, context.DeadlineExceeded) {
		return &vendor.Failure{Kind: vendor.FailureTimeout, Message: err.Error()}
	}
	return &vendor.Failure{Kind: vendor.FailureCanceled, Message: err.Error()}
}

// Describe asks the plugin what it is.
func (p *Plugin) Describe(ctx context.Context) (vendor.Description, error) {
	v, c, err := p.current(ctx)
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
	v, c, err := p.current(ctx)
	if err != nil {
		return err
	}
	return p.transport(c, v.Configure(ctx, cfg))
}

// Chat makes one non-streaming call through the plugin.
func (p *Plugin) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	v, c, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := v.Chat(ctx, req)
	if err != nil {
		var f *vendor.Failure
		if !errors.As(err, &f) && ctx.Err() != nil {
			return nil, ctxFailure(ctx.Err())
		}
		return nil, p.transport(c, err)
	}
	return resp, nil
}

// ChatStream makes one streaming call through the plugin.
func (p *Plugin) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	v, c, err := p.current(ctx)
	if err != nil {
		return err
	}
	s := &sinkGuard{Sink: sink}
	err = v.ChatStream(ctx, req, s)
	if err == nil || s.err != nil {
		return err // a sink error is the client's, not the plugin's
	}
	var f *vendor.Failure
	if !errors.As(err, &f) && ctx.Err() != nil {
		return ctxFailure(ctx.Err())
	}
	err = p.transport(c, err)
	if s.started && errors.As(err, &f) && f.Kind == vendor.FailureConnect {
		// The process died mid-answer: for the caller the answer broke
		// off, and it cannot be made again.
		f.Kind, f.PluginDied = vendor.FailureBroken, false
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

func (s *sinkGuard) Events(evs []vendor.Event) error {
	s.err = vendor.SendEvents(s.Sink, evs)
	return s.err
}

var _ vendor.Vendor = (*Plugin)(nil)
