package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Version is reported by Describe.
const Version = "1"

// Channel settings. Each takes the marker syntax (without brackets) or a
// duration; markers in a prompt override them.
const (
	SettingFault   = "fault"   // e.g. "error=503", "cut=3", "hang", "slow=20ms,chunks=5"
	SettingLatency = "latency" // wait before answering, e.g. "50ms"
	SettingSlow    = "slow"    // wait between stream events, e.g. "10ms"
)

// Vendor is the sim vendor: the Engine behind the vendor.Vendor interface.
type Vendor struct {
	log    hclog.Logger
	engine *Engine
	now    func() time.Time // the time answers carry (a test may fix it)

	mu       sync.RWMutex
	channels map[string]channel

	// allowPrivate is Config.AllowPrivateURLs: the links a client hands
	// over may reach private addresses.
	allowPrivate atomic.Bool
	families     map[string]simFamily
}

type channel struct {
	knobs     Knobs
	protocols []string // empty: all four
}

// New returns the sim vendor with no channels yet.
func New(log hclog.Logger) *Vendor {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	v := &Vendor{log: log.Named("sim"), engine: NewEngine(), now: time.Now, channels: map[string]channel{}}
	v.families = newFamilies(&v.allowPrivate)
	return v
}

// Describe names the plugin: sim speaks all four chat protocols and
// serves every endpoint family (jobs.go).
func (v *Vendor) Describe(context.Context) (vendor.Description, error) {
	protos := make([]string, len(protocol.All))
	for i, p := range protocol.All {
		protos[i] = string(p)
	}
	specs := Specs()
	fams := []string{"chat"}
	for _, s := range specs {
		fams = append(fams, s.Name)
	}
	return vendor.Description{Name: "sim", Protocols: protos, Families: fams, Version: Version, Specs: specs}, nil
}

// Configure replaces the channels. A setting it does not know, or cannot
// parse, fails the whole configuration and keeps the previous one.
func (v *Vendor) Configure(_ context.Context, cfg vendor.Config) error {
	for name := range cfg.Settings {
		return &vendor.ConfigError{Field: "settings", Message: fmt.Sprintf(
			"sim takes no plugin settings (got %q); set %s, %s or %s in the channel's settings", name, SettingFault, SettingLatency, SettingSlow)}
	}
	chans := make(map[string]channel, len(cfg.Channels))
	for _, ch := range cfg.Channels {
		c, err := channelOf(ch)
		if err != nil {
			return err
		}
		chans[ch.Name] = c
	}
	v.mu.Lock()
	v.channels = chans
	v.mu.Unlock()
	v.allowPrivate.Store(cfg.AllowPrivateURLs)
	v.log.Debug("configured", "channels", len(chans))
	return nil
}

func channelOf(ch vendor.Channel) (channel, error) {
	c := channel{}
	for _, p := range ch.Protocols {
		if !protocol.Valid(protocol.ID(p)) {
			return c, vendor.ChannelError(ch.Name, "protocols", "unknown protocol %q", p)
		}
	}
	c.protocols = ch.Protocols
	for name, val := range ch.Settings {
		switch name {
		case SettingFault:
			if err := ParseSpec(val, &c.knobs); err != nil {
				return c, vendor.ChannelError(ch.Name, "settings", "setting %s: %v", name, err)
			}
		case SettingLatency, SettingSlow:
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return c, vendor.ChannelError(ch.Name, "settings", "setting %s = %q: want a duration like 50ms", name, val)
			}
			if name == SettingLatency {
				c.knobs.Latency = d
			} else {
				c.knobs.Slow = d
			}
		default:
			return c, vendor.ChannelError(ch.Name, "settings", "unknown setting %q (sim takes %s, %s, %s)", name, SettingFault, SettingLatency, SettingSlow)
		}
	}
	return c, nil
}

func (v *Vendor) call(req *vendor.ChatRequest) (*Call, error) {
	v.mu.RLock()
	ch, ok := v.channels[req.Channel]
	v.mu.RUnlock()
	if !ok {
		return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "sim: channel " + req.Channel + " is not configured"}
	}
	if len(ch.protocols) > 0 && !slices.Contains(ch.protocols, req.Protocol) {
		return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "sim: channel " + req.Channel + " does not speak " + req.Protocol}
	}
	return &Call{
		Protocol: req.Protocol, Model: req.Model, Body: req.Body, Operation: req.Operation,
		Knobs: ch.knobs, Timeout: req.Timeout, IdleTimeout: req.IdleTimeout,
	}, nil
}

// Chat answers one non-streaming call.
func (v *Vendor) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	c, err := v.call(req)
	if err != nil {
		return nil, err
	}
	return v.engine.Chat(ctx, c)
}

// ChatStream answers one streaming call into sink.
func (v *Vendor) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	c, err := v.call(req)
	if err != nil {
		return err
	}
	return v.engine.Stream(ctx, c, sink)
}

var _ vendor.Vendor = (*Vendor)(nil)
