// Package config is the operator's configuration: the HCL file of
// PRODUCT.md §2, or the embedded default when there is none.
package config

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Config is one loaded, validated configuration.
type Config struct {
	// Source is the file it came from; empty for the embedded default.
	Source   string
	Server   Server
	Store    Store
	Plugins  []Plugin
	Channels []Channel
	Models   []Model
	Limits   Limits
	Pipeline Pipeline
	Accounts Accounts
	// Console is the `console {}` block: the web console.
	Console Console
	// Billing is the `billing {}` block: card top-ups.
	Billing Billing
	// Telemetry is the `telemetry {}` block: OpenTelemetry traces.
	Telemetry Telemetry
	// Audit is the `audit {}` block: the periodic audit of the books.
	Audit Audit
	// Disabled names the channels written with `enabled = false`: checked
	// like any other, then left out of Channels, so no plugin starts for
	// them and no call reaches them.
	Disabled []string
	// KnowledgeBases are bases the gateway seeds at each start (the
	// embedded default's `default` base of the project's docs).
	KnowledgeBases []KnowledgeBase

	// Indexes by model id and alias, built by Load, Parse and Default: the
	// lookups run on every request. A Config built by hand has none and is
	// scanned instead.
	models  map[string]*Model
	byModel map[string][]*Channel // ordered as ChannelsFor returns them

	// Where each block and attribute was written, for problems found after
	// loading (plugins, the pipeline); and what loaded but looks wrong.
	ranges   map[Ref]hcl.Range
	warnings hcl.Diagnostics
}

// Server is the `server {}` block.
type Server struct {
	// Listen is the address to serve on; default 127.0.0.1:8080.
	Listen string
	// AdminToken guards /admin/v1; empty means generate one into the data dir.
	AdminToken string
	// MasterKey is 64 hex characters (AES-256) sealing raw API keys; empty
	// means MasterKeyFile.
	MasterKey string
	// AllowPrivateURLs lets client-supplied URLs reach private addresses.
	AllowPrivateURLs bool
	// Durability is "" (default: the write-ahead log is written before the
	// response ends, fsync left to the OS) or "strict" (fsync, group commit).
	Durability string
	// TLS, when set, serves HTTPS: automatic certificates for Domains
	// (ACME, certmagic), or the operator's own CertFile and KeyFile.
	TLS *TLS
	// PublicURL is the base of the links the gateway hands out for files
	// it hosts (https://gw.example.com); empty means https:// and the TLS
	// domain when TLS is on, else the request's own host.
	PublicURL string
	// BillingURL is the top-up page ({billing_url}); a 402 tells the
	// client to top up there. Empty means the gateway has none: a 402
	// names the console's billing page when the console runs, else says
	// to ask the operator for credit.
	BillingURL string
	// HTTPListen serves plain HTTP beside HTTPS: ACME HTTP-01 challenges
	// and a redirect of everything else to HTTPS. Default ":80" with
	// automatic certificates, off otherwise; "" turns it off.
	HTTPListen string
	// MetricsListen serves GET /metrics (Prometheus text format) on its
	// own address; empty (the default) means off.
	MetricsListen string
	// DrainTimeout bounds how long calls under way may take to finish
	// once the gateway is told to stop (SIGTERM); default 30s.
	DrainTimeout time.Duration
	// SweepEvery is how often hosted files past their retention are
	// deleted, and the tasks whose results they were are marked expired
	// (0: every 10 minutes).
	SweepEvery time.Duration
	// PluginRestartWait is how long a call waits for its plugin while the
	// host restarts it (0: plugins/host's default, 2 s).
	PluginRestartWait time.Duration
	// AdminListen serves the admin API on its own address, and no longer
	// on Listen; a port alone (":9090") is on loopback. Empty: the admin
	// API is served on Listen.
	AdminListen string
	// MasterKeyFile is the file the master key is read from (generated
	// there on first start): outside the data directory, a backup of the
	// data directory holds no key that opens the sealed API keys. Empty:
	// <data dir>/master.key.
	MasterKeyFile string
	// Timeouts and size caps of the HTTP server (edge.go; 0 = default):
	// reading a request's headers, reading its body once its key is
	// known, a kept-alive connection left idle, a client that takes no
	// byte of an answer; the bytes large request bodies may hold at once;
	// the bytes one upstream SSE event may hold.
	HeaderTimeout, BodyTimeout, IdleTimeout, WriteTimeout time.Duration
	MaxBodyMemory, MaxEventSize                           int64
	// MemoryLimit is the gateway process's soft memory limit (Go's
	// runtime/debug.SetMemoryLimit; 0 = default); GOMEMLIMIT wins.
	MemoryLimit int64
}

// DefaultDrainTimeout is server.drain_timeout when it is not written.
const DefaultDrainTimeout = 30 * time.Second

// TLS is the `server { tls {} }` block: automatic certificates for
// Domains from an ACME CA, or static CertFile and KeyFile.
type TLS struct {
	// Domains are the names served; the first is the host of links to
	// hosted files when no public_url is set. Required for automatic
	// certificates.
	Domains []string
	// Email is the ACME account's contact (expiry notices).
	Email string
	// CA is the ACME directory URL; empty = Let's Encrypt.
	CA string
	// CARoot is a PEM file of the root that signs the ACME directory's own
	// HTTPS certificate (a private ACME server such as step-ca); empty =
	// the system's roots.
	CARoot string
	// Storage is the directory certificates and the ACME account are kept
	// in; empty = <data dir>/certs.
	Storage string
	// RenewInterval is how often certificates are checked for renewal
	// (default 10m); RenewalWindowRatio the part of a certificate's
	// lifetime left when it is renewed (default 1/3). Caddy's names.
	RenewInterval      time.Duration
	RenewalWindowRatio float64
	// CertFile and KeyFile are the operator's own PEM certificate chain
	// and key, read again when they change and on SIGHUP.
	CertFile, KeyFile string
}

// Automatic reports whether certificates come from an ACME CA.
func (t *TLS) Automatic() bool { return t != nil && t.CertFile == "" }

// Telemetry is the `telemetry {}` block: traces exported over OTLP. The
// standard OTEL_* environment variables configure what the block leaves
// out; traces are off unless an endpoint is set by either.
type Telemetry struct {
	// Endpoint is the OTLP collector URL (http://127.0.0.1:4318 for
	// http/protobuf, http://127.0.0.1:4317 for grpc).
	Endpoint string
	// Protocol is "http/protobuf" (default) or "grpc".
	Protocol string
	// SamplerRatio is the share of new traces recorded, 0 to 1 (default
	// 1); a client's traceparent decides for its own trace.
	SamplerRatio *float64
	// ServiceName is service.name on every span; default "tollgate".
	ServiceName string
	// Headers are sent with every export (a collector's API key).
	Headers map[string]string
}

// Store is the `store "badger" {}` or `store "postgres" {}` block.
type Store struct {
	Kind string // "badger" or "postgres"
	// Dir is the data directory: Badger's files, and with either store the
	// hosted files and the generated master key and admin token.
	Dir string // default ./data
	// URL is PostgreSQL's connection string (postgres://...), usually
	// env("DATABASE_URL"); postgres only.
	URL string
	// Lease is how long an instance's holds and limit slots outlive its
	// last renewal in a postgres store (default 15s); another instance
	// releases them afterwards.
	Lease time.Duration
	// ReserveMB is the disk space a badger store keeps in reserve for a
	// full disk, in MB (0: the default, 32).
	ReserveMB int
}

// Postgres reports whether the store is PostgreSQL (several instances may
// share it).
func (s Store) Postgres() bool { return s.Kind == StoreKindPostgres }

// Plugin is a `plugin "NAME" { path }` block: where a vendor binary is.
// Without one, a vendor is found as tollgate-plugin-NAME beside the gateway.
type Plugin struct {
	Name     string
	Path     string
	Settings map[string]string
	// GOMAXPROCS is how many threads the plugin process runs Go code on;
	// 0 leaves it to the host (half the gateway's, at least 1).
	GOMAXPROCS int
	// MemoryLimit is the plugin process's soft memory limit (its
	// GOMEMLIMIT); 0 leaves it to the host.
	MemoryLimit int64
}

// Channel is one upstream route: a vendor plugin, an address, a secret.
type Channel struct {
	Name      string
	Vendor    string        // the plugin name
	BaseURL   string        // vendor root without /v1
	APIKey    string        // usually env("...")
	Families  []string      // chat, image, ...
	Protocols []string      // for chat: the protocol ids this upstream speaks
	Models    []string      // model ids served; "client=upstream" maps to another upstream id
	Priority  int           // higher first
	Weight    int           // share within one priority; default 1
	Timeout   time.Duration // chat timeout on this channel; replaces the model's
	// IdleTimeout is the longest wait between two stream events on this
	// channel; 0 means the model's.
	IdleTimeout time.Duration
	Tools       []string // built-in tools this channel supports (narrows the model's)
	Settings    map[string]string
	// Transport is how the gateway reaches the channel's vendor: "" (out
	// of process, the default: its plugin process) or TransportInProcess
	// (a vendor built into the gateway, called in its own process). Every
	// channel of one vendor uses the same.
	Transport string
}

// The transports of a channel's vendor.
const (
	TransportOutOfProcess = "out-of-process"
	TransportInProcess    = "in-process"
)

// InProcess reports whether the vendor's channels run inside the
// gateway's process (all of them do, or none: the loader sees to it).
func (c *Config) InProcess(vendor string) bool {
	for i := range c.Channels {
		if c.Channels[i].Vendor == vendor {
			return c.Channels[i].Transport == TransportInProcess
		}
	}
	return false
}

// UpstreamModel returns the upstream id for a client model id on this channel
// and whether the channel serves it at all.
func (c *Channel) UpstreamModel(id string) (string, bool) {
	for _, m := range c.Models {
		client, upstream, mapped := cut(m, '=')
		if client == id {
			if mapped {
				return upstream, true
			}
			return id, true
		}
	}
	return "", false
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Model is a `model "ID" {}` block.
type Model struct {
	ID               string
	OwnedBy          string
	Family           string // chat, image, video, ...
	Aliases          []string
	Price            Price
	DefaultMaxTokens int // hold size when max_tokens is omitted (capped at 32768)
	MaxOutputTokens  int // on-wire ceiling when max_tokens is omitted; default DefaultMaxTokens
	// TranslateFrom lets clients of these protocols reach the model through
	// channels of another protocol (completions clients always may).
	TranslateFrom []string
	Timeout       time.Duration // total chat timeout; default 180s
	// IdleTimeout is the longest wait between two stream events; 0 means
	// the gateway's default (120s).
	IdleTimeout time.Duration
	Caps        Caps

	// Media models (family other than chat).
	// Grid makes an image model fixed-grid: it always returns Grid images
	// and holds max(n, Grid).
	Grid int
	// IgnoreSize: the image model takes no size (the aspect ratio goes in
	// the prompt).
	IgnoreSize bool
	// KeepAliveAfter replaces the family's wait before a synchronous
	// answer is kept alive with whitespace (tests shorten it).
	KeepAliveAfter time.Duration
	// MaxDuration is the hold, in seconds, of a per-second model called
	// without a duration.
	MaxDuration int
	// MaxRuntime and CallTimeout shorten the family's longest task run
	// and its synchronous wait for this model (0: the family's); they
	// never lengthen them.
	MaxRuntime  time.Duration
	CallTimeout time.Duration
	// Retention shortens how long the family keeps the model's hosted
	// results (0: the family's).
	Retention time.Duration
	// Settings are further family settings handed to the plugin.
	Settings map[string]string
	// Free says the model is served at no charge on purpose. A model needs
	// a non-zero price {} or free = true: a prepaid gateway must not give
	// calls away because a block was forgotten.
	Free bool
}

// Price is a model's `price {}` block. Token prices are per million tokens;
// media prices are per one unit.
type Price struct {
	Input         money.Nano
	Output        money.Nano
	CachedInput   money.Nano
	CacheWrite    money.Nano
	PerImage      money.Nano
	PerSecond     money.Nano
	PerCall       money.Nano
	PerCharacter  money.Nano
	PerGeneration money.Nano
	// PerImageHD prices an image above AreaThresholdMP megapixels (a
	// decimal string, e.g. "2.61") on an area-priced model.
	PerImageHD      money.Nano
	AreaThresholdMP string
	// PerSecondByResolution prices a per-second model by tier (fast,
	// standard, max).
	PerSecondByResolution map[string]money.Nano
}

// Unit returns the price of one unit of kind priceUnit (per_image,
// per_second, per_character, per_call, per_generation) at tier ("" is the
// base price), and whether the model prices it. It fails closed: a model
// that prices the unit by a tier table (per_second_by_resolution,
// per_image_hd) bills a tier at its entry and a tier the table lacks not
// at all; a model without a table bills every tier at its flat price; a
// model that prices the unit only by table has no base price.
func (p *Price) Unit(priceUnit, tier string) (money.Nano, bool) {
	switch priceUnit {
	case "per_second":
		if len(p.PerSecondByResolution) > 0 {
			if tier == "" {
				return p.PerSecond, p.PerSecond > 0
			}
			n, ok := p.PerSecondByResolution[tier]
			return n, ok
		}
		return p.PerSecond, true
	case "per_image":
		switch {
		case tier == "":
			return p.PerImage, true
		case tier == "hd" && p.PerImageHD > 0:
			return p.PerImageHD, true
		case p.PerImageHD > 0:
			return 0, false // an area-priced model knows only hd
		}
		return p.PerImage, true
	case "per_character":
		return p.PerCharacter, true
	case "per_call":
		return p.PerCall, true
	case "per_generation":
		return p.PerGeneration, true
	}
	return 0, false
}

// Prices reports whether the model's price block sets the unit priceUnit
// bills (a tier table counts for per_second): a media model called on a
// route that bills a unit it does not price would serve for nothing.
func (p *Price) Prices(priceUnit string) bool {
	switch priceUnit {
	case "per_second":
		return p.PerSecond > 0 || len(p.PerSecondByResolution) > 0
	case "per_image":
		return p.PerImage > 0
	case "per_character":
		return p.PerCharacter > 0
	case "per_call":
		return p.PerCall > 0
	case "per_generation":
		return p.PerGeneration > 0
	}
	return false
}

// Tiers lists the price tiers the model has besides the base one.
func (p *Price) Tiers() []string {
	var out []string
	if p.PerImageHD > 0 {
		out = append(out, "hd")
	}
	for t := range p.PerSecondByResolution {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// FamilySettings are the settings a family plugin gets for the model: the
// model block's media attributes and its settings map.
func (m *Model) FamilySettings() map[string]string {
	out := make(map[string]string, len(m.Settings)+4)
	for k, v := range m.Settings {
		out[k] = v
	}
	if m.Grid > 0 {
		out["grid"] = strconv.Itoa(m.Grid)
	}
	if m.IgnoreSize {
		out["ignore_size"] = "true"
	}
	if m.Price.AreaThresholdMP != "" {
		out["area_threshold_mp"] = m.Price.AreaThresholdMP
	}
	if m.MaxDuration > 0 {
		out["max_duration"] = strconv.Itoa(m.MaxDuration)
	}
	return out
}

// IsZero reports whether no price is set at all: such a model is refused
// unless it says free = true. A new price field that is not comparable (a
// map of tiers) must be checked here by hand.
func (p Price) IsZero() bool {
	for _, n := range p.PerSecondByResolution {
		if n != 0 {
			return false
		}
	}
	return p.Input == 0 && p.Output == 0 && p.CachedInput == 0 && p.CacheWrite == 0 &&
		p.PerImage == 0 && p.PerSecond == 0 && p.PerCall == 0 && p.PerCharacter == 0 &&
		p.PerGeneration == 0 && p.PerImageHD == 0
}

// Caps is a model's `caps {}` block.
type Caps struct {
	Tools     []string // built-in tools: web_search, image_generation
	Reasoning bool
	Vision    bool
}

// Audit is the `audit {}` block: the gateway audits its store's books
// (store/audit) every Every, in a snapshot that pauses no call, and shows
// the result on /metrics and in its log. 0, the default, runs none
// (`tollgate audit` and GET /admin/v1/audit still do).
type Audit struct {
	Every time.Duration
}

// MinAuditEvery is the shortest audit period that draws no warning: an
// audit reads every entry and row of the books.
const MinAuditEvery = time.Minute

// Limits is the `limits {}` block: account-wide request limits.
type Limits struct {
	RPM         int // requests per minute (60 s sliding window); 0 = unlimited
	Concurrency int // requests in flight; 0 = unlimited
}

// Accounts is the `accounts {}` block: who may sign up in the console,
// and what a new account starts with.
type Accounts struct {
	// SignupCredit is the credit of an account created without
	// initial_credit (admin API), of an account made by sign-up and of
	// the demo account; default DefaultSignupCredit, the spec's trial
	// credit.
	SignupCredit money.Nano
	// Signup is who may sign up in the console: SignupOpen (signup =
	// true: anyone, each sign-up a new account with SignupCredit),
	// SignupInvite (signup = "invite": only with an invitation, joining
	// the inviting account) or SignupClosed (signup = false, the default
	// of a config file: people are added by the operator).
	Signup string
}

// The accounts.signup modes.
const (
	SignupClosed = "closed"
	SignupOpen   = "open"
	SignupInvite = "invite"
)

// Console is the `console {}` block: the web console people sign into.
// A config file without the block serves no console; the embedded
// default serves it on the main listener.
type Console struct {
	// Enabled serves the console (a console block turns it on unless it
	// says enabled = false).
	Enabled bool
	// Listen serves the console on its own address; empty (the default)
	// serves it on the main listener under /console/.
	Listen string
	// SessionTTL is how long a sign-in lasts; default DefaultSessionTTL.
	SessionTTL time.Duration
}

// Billing is the `billing {}` block: top-ups by card at the console's
// billing page, through a payment processor. A config file without the
// block takes no card payments; the embedded default takes them through
// the simulated processor.
type Billing struct {
	// Enabled takes card top-ups (a billing block turns it on unless it
	// says enabled = false).
	Enabled bool
	// Processor is ProcessorStripe (Stripe Checkout) or ProcessorSim (a
	// simulated Stripe the gateway runs itself, for demos and tests).
	Processor string
	// SecretKey is the processor's API key (Stripe: sk_live_..., or a
	// restricted key rk_... with Checkout Sessions and PaymentIntents
	// write); write it as env("STRIPE_SECRET_KEY").
	SecretKey string
	// WebhookSecret is the signing secret of the webhook endpoint
	// (Stripe: whsec_...); write it as env("STRIPE_WEBHOOK_SECRET").
	WebhookSecret string
	// WebhookPath is where the processor posts its events, on the main
	// listener; default DefaultWebhookPath.
	WebhookPath string
	// WebhookTolerance is how old an event's signature may be; default
	// five minutes (Stripe's own).
	WebhookTolerance time.Duration
	// Currency is what the processor charges in, lower-case ISO 4217;
	// default "usd".
	Currency string
	// CreditsPerUnit is how many credits one unit of Currency buys;
	// default 1.
	CreditsPerUnit money.Nano
	// Minimum is the smallest top-up, in credits; default the spec's
	// 404.4. Maximum the largest (0: what the processor takes in one
	// payment).
	Minimum, Maximum money.Nano
	// Presets are the amounts the page offers, in credits; default the
	// minimum, 1000 and 2500.
	Presets []money.Nano
	// APIURL is the processor's API address; empty is Stripe's own. Set
	// it to reach a Stripe-compatible test server.
	APIURL string
	// SimListen is where the simulated processor (ProcessorSim) serves
	// its API and its payment pages; default "127.0.0.1:0", a free port.
	SimListen string
}

// The billing processors.
const (
	ProcessorStripe = "stripe"
	ProcessorSim    = "sim"
)

// Billing defaults.
const (
	DefaultWebhookPath      = "/billing/webhook"
	DefaultWebhookTolerance = 5 * time.Minute
	DefaultCurrency         = "usd"
	DefaultSimListen        = "127.0.0.1:0"
)

// DefaultMinimumTopUp is the spec's minimum top-up (404.4).
var DefaultMinimumTopUp = money.MustParse("404.4")

// DefaultBilling is the billing block's settings before a file sets any.
func DefaultBilling() Billing {
	return Billing{
		Processor: ProcessorStripe, WebhookPath: DefaultWebhookPath, WebhookTolerance: DefaultWebhookTolerance,
		Currency: DefaultCurrency, CreditsPerUnit: money.Credits(1), Minimum: DefaultMinimumTopUp,
		Presets:   []money.Nano{DefaultMinimumTopUp, money.Credits(1000), money.Credits(2500)},
		SimListen: DefaultSimListen,
	}
}

// DefaultSessionTTL is console.session_ttl when it is not written.
const DefaultSessionTTL = 7 * 24 * time.Hour

// DefaultSignupCredit is the spec's trial credit (121.32).
var DefaultSignupCredit = money.MustParse("121.32")

// Pipeline is the `pipeline {}` block.
type Pipeline struct {
	// Stages in order; empty means the default chain.
	Stages []string
	// Settings of each stage, from `stage "NAME" { settings = {...} }`.
	Settings map[string]map[string]string
}

// BuiltinDocs, as a KnowledgeBase's Docs, is the project's own docs/
// folder, embedded in the binary.
const BuiltinDocs = "builtin:docs"

// KnowledgeBase is a base seeded at start: created readable by every
// account when missing (an operator's later changes to it are kept), and
// its pages created or updated from a folder of Markdown files.
type KnowledgeBase struct {
	ID   string
	Name string
	// Docs is the folder of Markdown pages: a directory, or BuiltinDocs.
	Docs string
}

// Model looks a model up by id or alias.
func (c *Config) Model(id string) (*Model, bool) {
	if c.models != nil {
		m, ok := c.models[id]
		return m, ok
	}
	for i := range c.Models {
		if c.Models[i].ID == id {
			return &c.Models[i], true
		}
	}
	for i := range c.Models {
		for _, a := range c.Models[i].Aliases {
			if a == id {
				return &c.Models[i], true
			}
		}
	}
	return nil, false
}

// ChannelsFor returns the channels serving a model (by id or alias), highest
// priority first, then by name. The slice is shared: do not modify it.
// A Config built by hand (not by Load, Parse or Default) is scanned per call.
func (c *Config) ChannelsFor(modelID string) []*Channel {
	if c.byModel != nil {
		return c.byModel[modelID]
	}
	if m, ok := c.Model(modelID); ok {
		modelID = m.ID
	}
	return c.channelsFor(modelID)
}

func (c *Config) channelsFor(modelID string) []*Channel {
	var out []*Channel
	for i := range c.Channels {
		if _, ok := c.Channels[i].UpstreamModel(modelID); ok {
			out = append(out, &c.Channels[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *Channel) int {
		if a.Priority != b.Priority {
			if a.Priority > b.Priority {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// index builds the lookup maps; call it once Channels and Models are final.
func (c *Config) index() {
	c.models = make(map[string]*Model, len(c.Models))
	c.byModel = make(map[string][]*Channel, len(c.Models))
	for i := range c.Models {
		m := &c.Models[i]
		c.models[m.ID] = m
		chs := c.channelsFor(m.ID)
		if len(chs) > 0 {
			c.byModel[m.ID] = chs
		}
		for _, a := range m.Aliases {
			if _, taken := c.models[a]; !taken {
				c.models[a] = m
				if len(chs) > 0 {
					c.byModel[a] = chs
				}
			}
		}
	}
}

// PluginNames returns the distinct vendors the channels use, sorted: the
// plugin binaries the gateway has to start.
func (c *Config) PluginNames() []string {
	var out []string
	for i := range c.Channels {
		if v := c.Channels[i].Vendor; !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
