package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// testEnv is the environment env() sees in these tests.
var testEnv = map[string]string{
	"TG_TOKEN": "admin-secret",
	"TG_KEY":   "sk-upstream",
	"TG_EMPTY": "",
}

func parseTest(t *testing.T, src string) (*Config, error) {
	t.Helper()
	return parse([]byte(src), "t.hcl", func(k string) (string, bool) {
		v, ok := testEnv[k]
		return v, ok
	})
}

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := parseTest(t, src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return cfg
}

// chatModels declares models m1 and m2 for channel tests.
const chatModels = `
model "m1" { free = true }
model "m2" { free = true }
`

func TestParseBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		src   string
		check func(t *testing.T, c *Config)
	}{
		{
			desc: "empty file gets the defaults",
			src:  ``,
			check: func(t *testing.T, c *Config) {
				want := Server{Listen: "127.0.0.1:8080", DrainTimeout: 30 * time.Second}
				if !reflect.DeepEqual(c.Server, want) {
					t.Errorf("server = %+v, want %+v", c.Server, want)
				}
				if c.Store != (Store{Kind: "badger", Dir: "./data"}) {
					t.Errorf("store = %+v", c.Store)
				}
				if c.Limits != (Limits{}) || c.Pipeline.Stages != nil || c.Source != "t.hcl" {
					t.Errorf("limits %+v pipeline %+v source %q", c.Limits, c.Pipeline, c.Source)
				}
			},
		},
		{
			desc: "server block, every attribute",
			src: `server {
  listen             = "0.0.0.0:9000"
  admin_token        = env("TG_TOKEN")
  master_key         = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
  allow_private_urls = true
  durability         = "strict"
  metrics_listen     = "127.0.0.1:9090"
  drain_timeout      = "5s"
  tls {
    domains              = ["GW.example.com", "api.example.com"]
    email                = "ops@example.com"
    ca                   = "https://127.0.0.1:14000/dir"
    ca_root              = "/etc/pebble.pem"
    storage              = "/var/lib/certs"
    renew_interval       = "1m"
    renewal_window_ratio = 0.5
  }
}`,
			check: func(t *testing.T, c *Config) {
				want := Server{
					Listen: "0.0.0.0:9000", AdminToken: "admin-secret",
					MasterKey:        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
					AllowPrivateURLs: true, Durability: "strict",
					HTTPListen: ":80", MetricsListen: "127.0.0.1:9090", DrainTimeout: 5 * time.Second,
					TLS: &TLS{Domains: []string{"gw.example.com", "api.example.com"}, Email: "ops@example.com",
						CA: "https://127.0.0.1:14000/dir", CARoot: "/etc/pebble.pem", Storage: "/var/lib/certs",
						RenewInterval: time.Minute, RenewalWindowRatio: 0.5},
				}
				if !reflect.DeepEqual(c.Server, want) {
					t.Errorf("server = %+v, want %+v", c.Server, want)
				}
			},
		},
		{
			desc: "server timeouts, size caps, admin_listen, master_key_file",
			src: `server {
  admin_listen    = ":9091"
  master_key_file = "/etc/tollgate/master.key"
  header_timeout  = "5s"
  body_timeout    = "10s"
  idle_timeout    = "1m"
  write_timeout   = "20s"
  max_body_memory = "256MB"
  max_event_size  = 1048576
  memory_limit    = "96MB"
}`,
			check: func(t *testing.T, c *Config) {
				s := c.Server
				if s.AdminListen != ":9091" || s.MasterKeyFile != "/etc/tollgate/master.key" ||
					s.HeaderTimeout != 5*time.Second || s.BodyTimeout != 10*time.Second || s.IdleTimeout != time.Minute ||
					s.WriteTimeout != 20*time.Second || s.MaxBodyMemory != 256<<20 || s.MaxEventSize != 1<<20 ||
					s.MemoryLimitOrDefault() != 96<<20 {
					t.Errorf("server = %+v", s)
				}
				var d Server
				if d.BodyTimeoutOrDefault() != DefaultBodyTimeout || d.MaxEventSizeOrDefault() != 16<<20 ||
					d.MaxBodyMemoryOrDefault() != 512<<20 || d.IdleTimeoutOrDefault() != DefaultIdleTimeout ||
					d.MemoryLimitOrDefault() != DefaultMemoryLimit {
					t.Errorf("defaults of an empty server block")
				}
			},
		},
		{
			desc: "server durability empty string is the default",
			src:  `server { durability = "" }`,
			check: func(t *testing.T, c *Config) {
				if c.Server.Durability != "" || c.Server.Listen != DefaultListen {
					t.Errorf("server = %+v", c.Server)
				}
			},
		},
		{
			desc: "store badger dir",
			src:  `store "badger" { dir = "/var/lib/tollgate" }`,
			check: func(t *testing.T, c *Config) {
				if c.Store != (Store{Kind: "badger", Dir: "/var/lib/tollgate"}) {
					t.Errorf("store = %+v", c.Store)
				}
			},
		},
		{
			desc: "plugin path and settings, scalars become strings",
			src: `plugin "openai" {
  path     = "/opt/tollgate/tollgate-plugin-openai"
  settings = { org = "org-1", retries = 3, debug = true }
  gomaxprocs = 2
  memory_limit = "64MB"
}
plugin "sim" {}`,
			check: func(t *testing.T, c *Config) {
				want := []Plugin{
					{Name: "openai", Path: "/opt/tollgate/tollgate-plugin-openai", Settings: map[string]string{"org": "org-1", "retries": "3", "debug": "true"}, GOMAXPROCS: 2, MemoryLimit: 64 << 20},
					{Name: "sim"},
				}
				if !reflect.DeepEqual(c.Plugins, want) {
					t.Errorf("plugins = %+v, want %+v", c.Plugins, want)
				}
			},
		},
		{
			desc: "channel, every attribute",
			src: chatModels + `
channel "main" {
  vendor    = "openai"
  base_url  = "https://api.openai.com"
  api_key   = env("TG_KEY")
  families  = ["chat"]
  protocols = ["openai_chat", "openai_responses"]
  models    = ["m1", "m2=gpt-4o-2024-08-06"]
  priority  = -2
  weight    = 5
  timeout   = "90s"
  tools     = ["web_search"]
  settings  = { organization = "org-9" }
}`,
			check: func(t *testing.T, c *Config) {
				want := []Channel{{
					Name: "main", Vendor: "openai", BaseURL: "https://api.openai.com", APIKey: "sk-upstream",
					Families: []string{"chat"}, Protocols: []string{"openai_chat", "openai_responses"},
					Models: []string{"m1", "m2=gpt-4o-2024-08-06"}, Priority: -2, Weight: 5,
					Timeout: 90 * time.Second, Tools: []string{"web_search"},
					Settings: map[string]string{"organization": "org-9"},
				}}
				if !reflect.DeepEqual(c.Channels, want) {
					t.Errorf("channels = %+v, want %+v", c.Channels, want)
				}
				if up, ok := c.Channels[0].UpstreamModel("m2"); !ok || up != "gpt-4o-2024-08-06" {
					t.Errorf("UpstreamModel(m2) = %q, %v", up, ok)
				}
			},
		},
		{
			desc: "transport: in process for one vendor, out of process (said or not) for another",
			src: chatModels + `
channel "a" {
  vendor    = "openai"
  protocols = ["openai_chat"]
  transport = "in-process"
}
channel "b" {
  vendor    = "sim"
  protocols = ["openai_chat"]
  transport = "out-of-process"
}
channel "c" {
  vendor    = "sim"
  protocols = ["openai_chat"]
}`,
			check: func(t *testing.T, c *Config) {
				if c.Channels[0].Transport != TransportInProcess || c.Channels[1].Transport != "" || c.Channels[2].Transport != "" {
					t.Errorf("transports %q %q %q", c.Channels[0].Transport, c.Channels[1].Transport, c.Channels[2].Transport)
				}
				if !c.InProcess("openai") || c.InProcess("sim") || c.InProcess("gemini") {
					t.Error("InProcess is wrong")
				}
			},
		},
		{
			desc: "channel defaults: families chat, weight 1",
			src: chatModels + `
channel "c" {
  vendor    = "sim"
  protocols = ["gemini_native"]
}`,
			check: func(t *testing.T, c *Config) {
				want := []Channel{{Name: "c", Vendor: "sim", Families: []string{"chat"}, Protocols: []string{"gemini_native"}, Weight: 1}}
				if !reflect.DeepEqual(c.Channels, want) {
					t.Errorf("channels = %+v, want %+v", c.Channels, want)
				}
			},
		},
		{
			desc: "non-chat channel needs no protocols",
			src: `model "img" {
  family = "image"
  free   = true
}
channel "pics" {
  vendor   = "sim"
  families = ["image", "video"]
  models   = ["img"]
}`,
			check: func(t *testing.T, c *Config) {
				if got := c.Channels[0]; !reflect.DeepEqual(got.Families, []string{"image", "video"}) || got.Protocols != nil {
					t.Errorf("channel = %+v", got)
				}
			},
		},
		{
			desc: "model, every attribute",
			src: `model "claude-x" {
  owned_by           = "anthropic"
  family             = "chat"
  aliases            = ["claude-x-latest", "cx"]
  default_max_tokens = 8192
  max_output_tokens  = 64000
  translate_from     = ["openai_responses", "gemini_native"]
  timeout            = "10m"
  price {
    input          = "3"
    output         = "15"
    cached_input   = "0.30"
    cache_write    = "3.75"
    per_image      = "0.04"
    per_second     = "0.1"
    per_call       = "0.002"
    per_character  = "0.000015"
    per_generation = "1.5"
  }
  caps {
    tools     = ["web_search", "image_generation"]
    reasoning = true
    vision    = true
  }
}
channel "c" {
  vendor    = "sim"
  protocols = ["anthropic_messages"]
  models    = ["claude-x"]
}`,
			check: func(t *testing.T, c *Config) {
				want := []Model{{
					ID: "claude-x", OwnedBy: "anthropic", Family: "chat", Aliases: []string{"claude-x-latest", "cx"},
					DefaultMaxTokens: 8192, MaxOutputTokens: 64000,
					TranslateFrom: []string{"openai_responses", "gemini_native"}, Timeout: 10 * time.Minute,
					Price: Price{
						Input: money.MustParse("3"), Output: money.MustParse("15"), CachedInput: money.MustParse("0.3"),
						CacheWrite: money.MustParse("3.75"), PerImage: money.MustParse("0.04"), PerSecond: money.MustParse("0.1"),
						PerCall: money.MustParse("0.002"), PerCharacter: money.MustParse("0.000015"), PerGeneration: money.MustParse("1.5"),
					},
					Caps: Caps{Tools: []string{"web_search", "image_generation"}, Reasoning: true, Vision: true},
				}}
				if !reflect.DeepEqual(c.Models, want) {
					t.Errorf("models = %+v\nwant %+v", c.Models, want)
				}
				if m, ok := c.Model("cx"); !ok || m.ID != "claude-x" {
					t.Errorf("Model(cx) = %v, %v", m, ok)
				}
			},
		},
		{
			desc: "model defaults",
			src:  `model "m" { free = true }`,
			check: func(t *testing.T, c *Config) {
				want := []Model{{ID: "m", Family: "chat", DefaultMaxTokens: 4096, MaxOutputTokens: 4096, Timeout: 180 * time.Second, Free: true}}
				if !reflect.DeepEqual(c.Models, want) {
					t.Errorf("models = %+v, want %+v", c.Models, want)
				}
			},
		},
		{
			desc: "max_output_tokens defaults to default_max_tokens",
			src:  "model \"m\" {\n  default_max_tokens = 16384\n  free = true\n}",
			check: func(t *testing.T, c *Config) {
				if m := c.Models[0]; m.DefaultMaxTokens != 16384 || m.MaxOutputTokens != 16384 {
					t.Errorf("tokens = %d/%d", m.DefaultMaxTokens, m.MaxOutputTokens)
				}
			},
		},
		{
			desc: "null attributes keep the defaults",
			src:  "model \"m\" {\n  default_max_tokens = null\n  free = true\n}",
			check: func(t *testing.T, c *Config) {
				if m := c.Models[0]; m.DefaultMaxTokens != 4096 {
					t.Errorf("default_max_tokens = %d", m.DefaultMaxTokens)
				}
			},
		},
		{
			desc: "limits",
			src:  "limits {\n  rpm         = 600\n  concurrency = 32\n}",
			check: func(t *testing.T, c *Config) {
				if c.Limits != (Limits{RPM: 600, Concurrency: 32}) {
					t.Errorf("limits = %+v", c.Limits)
				}
			},
		},
		{
			desc: "audit",
			src:  `audit { every = "1h" }`,
			check: func(t *testing.T, c *Config) {
				if c.Audit.Every != time.Hour || len(c.Warnings()) != 0 {
					t.Errorf("audit = %+v, warnings %v", c.Audit, c.Warnings())
				}
			},
		},
		{
			desc: "a short audit period loads with a warning",
			src:  `audit { every = "10s" }`,
			check: func(t *testing.T, c *Config) {
				w := c.Warnings()
				if c.Audit.Every != 10*time.Second || len(w) != 1 || !strings.Contains(w[0], "audit: every: 10s is short") {
					t.Errorf("audit = %+v, warnings %q", c.Audit, w)
				}
			},
		},
		{
			desc: "pipeline stages keep their order",
			src:  `pipeline { stages = ["auth", "redact", "allowlist"] }`,
			check: func(t *testing.T, c *Config) {
				if !reflect.DeepEqual(c.Pipeline.Stages, []string{"auth", "redact", "allowlist"}) {
					t.Errorf("stages = %v", c.Pipeline.Stages)
				}
			},
		},
		{
			desc: "comments of every style",
			src: `# hash
// slashes
/* block */
limits { rpm = 1 }`,
			check: func(t *testing.T, c *Config) {
				if c.Limits.RPM != 1 {
					t.Errorf("rpm = %d", c.Limits.RPM)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			tc.check(t, mustParse(t, tc.src))
		})
	}
}

func TestEnvFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		expr    string
		want    string
		wantErr string
	}{
		{desc: "set variable", expr: `env("TG_TOKEN")`, want: "admin-secret"},
		{desc: "set but empty is set", expr: `env("TG_EMPTY", "fallback")`, want: ""},
		{desc: "unset with default", expr: `env("TG_UNSET", "fallback")`, want: "fallback"},
		{desc: "unset with empty default", expr: `env("TG_UNSET", "")`, want: ""},
		{desc: "inside a template", expr: `"Bearer ${env("TG_TOKEN")}"`, want: "Bearer admin-secret"},
		{
			desc: "unset without default names the variable", expr: `env("TG_UNSET")`,
			wantErr: `t.hcl:1,24-39: server: admin_token: environment variable "TG_UNSET" is not set (give a default to allow that: env("TG_UNSET", ""))`,
		},
		{
			desc: "too many arguments", expr: `env("A", "b", "c")`,
			wantErr: `t.hcl:1,24-42: server: admin_token: env takes a name and at most one default, got 3 arguments`,
		},
		{
			desc: "unknown function", expr: `file("x")`,
			wantErr: `t.hcl:1,24-28: server: admin_token: Call to unknown function; There is no function named "file".`,
		},
		{
			desc: "variables are not allowed", expr: `var.token`,
			wantErr: `t.hcl:1,24-27: server: admin_token: Variables not allowed; Variables may not be used here.`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseTest(t, `server { admin_token = `+tc.expr+` }`)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant  %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Server.AdminToken != tc.want {
				t.Errorf("admin_token = %q, want %q", cfg.Server.AdminToken, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
		want string // the whole error text
	}{
		{
			desc: "syntax error",
			src:  "server {\n  listen = \n}",
			want: `t.hcl:2,12-3,1: Invalid expression; Expected the start of an expression, but found an invalid expression token.`,
		},
		{
			desc: "unknown top-level block",
			src:  "server {}\nbackend {}",
			want: `t.hcl:2,1-8: Unsupported block type; Blocks of type "backend" are not expected here.`,
		},
		{
			desc: "unknown top-level attribute",
			src:  `listen = "x"`,
			want: `t.hcl:1,1-7: Unsupported argument; An argument named "listen" is not expected here.`,
		},
		{
			desc: "a size that is not one",
			src:  "server {\n  max_event_size = \"lots\"\n}",
			want: `t.hcl:2,20-26: server: max_event_size: "lots" is not a size (want e.g. "16MB", "512MB", "1GB")`,
		},
		{
			desc: "admin_listen not host:port",
			src:  "server {\n  admin_listen = \"9090\"\n}",
			want: `t.hcl:2,18-24: server: admin_listen: "9090" is not host:port (address 9090: missing port in address)`,
		},
		{
			desc: "knowledge base id",
			src:  "knowledge_base \"a b\" {\n  docs = \"x\"\n}",
			want: `t.hcl:1,16-21: knowledge_base id "a b": use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
		},
		{
			desc: "knowledge base without docs",
			src:  "knowledge_base \"kb\" {\n  name = \"x\"\n}",
			want: `t.hcl:1,21-21: knowledge_base "kb": Missing required argument; The argument "docs" is required, but no definition was found.`,
		},
		{
			desc: "unknown server attribute",
			src:  "server {\n  port = 80\n}",
			want: `t.hcl:2,3-7: server: Unsupported argument; An argument named "port" is not expected here.`,
		},
		{
			desc: "duplicate server block",
			src:  "server {}\nserver {}",
			want: `t.hcl:2,1-7: duplicate server block (the first is at t.hcl:1)`,
		},
		{
			desc: "duplicate limits block",
			src:  "limits {}\n\nlimits {}",
			want: `t.hcl:3,1-7: duplicate limits block (the first is at t.hcl:1)`,
		},
		{
			desc: "listen is not host:port",
			src:  `server { listen = "8080" }`,
			want: `t.hcl:1,19-25: server: listen: "8080" is not host:port (address 8080: missing port in address)`,
		},
		{
			desc: "listen must be a string",
			src:  `server { listen = 8080 }`,
			want: `t.hcl:1,19-23: server: listen: want a string, got number`,
		},
		{
			desc: "allow_private_urls must be a bool",
			src:  `server { allow_private_urls = "yes" }`,
			want: `t.hcl:1,31-36: server: allow_private_urls: want true or false, got string`,
		},
		{
			desc: "bad durability",
			src:  `server { durability = "fsync" }`,
			want: `t.hcl:1,23-30: server: durability: unknown value "fsync" (want "" or "strict")`,
		},
		{
			desc: "short master key",
			src:  `server { master_key = "abcd" }`,
			want: `t.hcl:1,23-29: server: master_key: want 64 hex characters (32 bytes), got 4 characters`,
		},
		{
			desc: "tls without domains",
			src:  "server {\n  tls {\n    email = \"a@b.c\"\n  }\n}",
			want: `t.hcl:2,3-6: server.tls: domains is required for automatic certificates (domains = ["gw.example.com"]), or give cert_file and key_file`,
		},
		{
			desc: "tls domain is not a host name",
			src:  "server {\n  tls {\n    domains = [\"ok.example\", \"*.example\"]\n  }\n}",
			want: `t.hcl:3,30-41: server.tls: domains: "*.example" is not a host name (IP addresses and wildcards cannot be validated over HTTP or TLS-ALPN)`,
		},
		{
			desc: "tls cert without key",
			src:  "server {\n  tls {\n    cert_file = \"/c.pem\"\n  }\n}",
			want: `t.hcl:3,17-25: server.tls: cert_file and key_file go together: give both (your own certificate) or neither (automatic certificates for domains)`,
		},
		{
			desc: "tls static with an acme setting",
			src:  "server {\n  tls {\n    cert_file = \"/c.pem\"\n    key_file = \"/k.pem\"\n    email = \"a@b.c\"\n  }\n}",
			want: `t.hcl:5,5-10: server.tls: email: only automatic certificates use it, and this block names its own cert_file; remove one or the other`,
		},
		{
			desc: "tls window ratio out of range",
			src:  "server {\n  tls {\n    domains = [\"a.example\"]\n    renewal_window_ratio = 1.5\n  }\n}",
			want: `t.hcl:4,28-31: server.tls: renewal_window_ratio: want a number between 0 and 1 (the part of a certificate's lifetime left when it is renewed; default 0.333)`,
		},
		{
			desc: "tls ca not a URL",
			src:  "server {\n  tls {\n    domains = [\"x.example\"]\n    ca     = \"acme\"\n  }\n}",
			want: "t.hcl:4,14-20: server.tls: ca: \"acme\" is not an http(s) URL",
		},
		{
			desc: "metrics_listen not host:port",
			src:  `server { metrics_listen = "9090" }`,
			want: `t.hcl:1,27-33: server: metrics_listen: "9090" is not host:port (address 9090: missing port in address)`,
		},
		{
			desc: "telemetry protocol unknown",
			src:  `telemetry { protocol = "http/json" }`,
			want: `t.hcl:1,24-35: telemetry: protocol: unknown value "http/json" (want http/protobuf or grpc)`,
		},
		{
			desc: "telemetry sampler ratio",
			src:  `telemetry { sampler_ratio = "half" }`,
			want: `t.hcl:1,29-35: telemetry: sampler_ratio: want a number from 0 to 1 (the share of new traces recorded)`,
		},
		{
			desc: "tls twice",
			src:  "server {\n  tls { domains = [\"a.example\"] }\n  tls { domains = [\"b.example\"] }\n}",
			want: `t.hcl:3,3-6: server: duplicate tls block (the first is at t.hcl:2)`,
		},
		{
			desc: "unknown store kind",
			src:  `store "mysql" { dir = "x" }`,
			want: `t.hcl:1,7-14: unknown store kind "mysql" (want "badger", or "postgres" for several instances sharing one state)`,
		},
		{
			desc: "postgres store without a url",
			src:  `store "postgres" { dir = "x" }`,
			want: `t.hcl:1,20-20: store "postgres": Missing required argument; The argument "url" is required, but no definition was found.`,
		},
		{
			desc: "postgres url of another scheme",
			src:  "store \"postgres\" {\n  url = \"mysql://u:secret@h/db\"\n}",
			want: `t.hcl:2,9-32: store "postgres": url: not a postgres:// URL; want postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
		},
		{
			desc: "postgres url without a host",
			src:  "store \"postgres\" {\n  url = \"postgres:///db\"\n}",
			want: `t.hcl:2,9-25: store "postgres": url: the URL names no host; want postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
		},
		{
			desc: "postgres lease out of range",
			src:  "store \"postgres\" {\n  url = \"postgres://h/db\"\n  lease = \"100ms\"\n}",
			want: `t.hcl:3,11-18: store "postgres": lease: 100ms is out of range (want 1s to 1h; default 15s)`,
		},
		{
			desc: "badger store with a url",
			src:  "store \"badger\" {\n  url = \"postgres://h/db\"\n}",
			want: `t.hcl:2,3-6: store "badger": Unsupported argument; An argument named "url" is not expected here.`,
		},
		{
			desc: "store without a label",
			src:  `store { dir = "x" }`,
			want: `t.hcl:1,7-8: Missing kind for store; All store blocks must have 1 labels (kind).`,
		},
		{
			desc: "store dir empty",
			src:  `store "badger" { dir = "" }`,
			want: `t.hcl:1,24-26: store "badger": dir must not be empty`,
		},
		{
			desc: "unknown store attribute",
			src:  `store "badger" { path = "x" }`,
			want: `t.hcl:1,18-22: store "badger": Unsupported argument; An argument named "path" is not expected here.`,
		},
		{
			desc: "duplicate plugin",
			src:  "plugin \"sim\" {}\nplugin \"sim\" {}",
			want: `t.hcl:2,8-13: duplicate plugin "sim" (first defined at t.hcl:1)`,
		},
		{
			desc: "plugin settings not a map",
			src:  `plugin "sim" { settings = ["a"] }`,
			want: `t.hcl:1,27-32: plugin "sim": settings: want a map such as { key = "value" }, got tuple`,
		},
		{
			desc: "plugin settings nested value",
			src:  `plugin "sim" { settings = { a = ["x"] } }`,
			want: `t.hcl:1,27-40: plugin "sim": settings: "a": want a string, number or bool, got tuple`,
		},
		{
			desc: "plugin gomaxprocs zero",
			src:  `plugin "sim" { gomaxprocs = 0 }`,
			want: `t.hcl:1,29-30: plugin "sim": gomaxprocs: must be at least 1, got 0`,
		},
		{
			desc: "plugin memory_limit without a unit",
			src:  `plugin "sim" { memory_limit = 64 }`,
			want: `t.hcl:1,31-33: plugin "sim": memory_limit: at least "16MB", got 64 bytes (a size is bytes unless it says KB, MB or GB)`,
		},
		{
			desc: "server memory_limit not a size",
			src:  "server {\n  memory_limit = \"lots\"\n}",
			want: `t.hcl:2,18-24: server: memory_limit: "lots" is not a size (want e.g. "16MB", "512MB", "1GB")`,
		},
		{
			desc: "plugin gomaxprocs too many",
			src:  `plugin "sim" { gomaxprocs = 20000 }`,
			want: `t.hcl:1,29-34: plugin "sim": gomaxprocs: at most 1024, got 20000`,
		},
		{
			desc: "empty plugin name",
			src:  `plugin "" {}`,
			want: `t.hcl:1,8-10: plugin name must not be empty`,
		},
		{
			desc: "duplicate channel",
			src:  chatModels + "channel \"c\" {\n  vendor = \"sim\"\n  protocols = [\"openai_chat\"]\n}\nchannel \"c\" {\n  vendor = \"sim\"\n  protocols = [\"openai_chat\"]\n}",
			want: `t.hcl:8,9-12: duplicate channel "c" (first defined at t.hcl:4)`,
		},
		{
			desc: "channel without vendor",
			src:  "channel \"c\" {\n  protocols = [\"openai_chat\"]\n}",
			want: `t.hcl:1,13-13: channel "c": Missing required argument; The argument "vendor" is required, but no definition was found.`,
		},
		{
			desc: "channel vendor empty",
			src:  "channel \"c\" {\n  vendor = \" \"\n  protocols = [\"openai_chat\"]\n}",
			want: `t.hcl:2,12-15: channel "c": vendor must not be empty`,
		},
		{
			desc: "unknown channel attribute",
			src:  "channel \"c\" {\n  vendor = \"sim\"\n  protocols = [\"openai_chat\"]\n  region = \"eu\"\n}",
			want: `t.hcl:4,3-9: channel "c": Unsupported argument; An argument named "region" is not expected here.`,
		},
		{
			desc: "unknown transport",
			src:  "channel \"c\" {\n  vendor = \"sim\"\n  protocols = [\"openai_chat\"]\n  transport = \"grpc\"\n}",
			want: `t.hcl:4,15-21: channel "c": transport: "grpc" is not a transport (want "out-of-process", the default, or "in-process" for a vendor built into tollgate)`,
		},
		{
			desc: "one vendor, two transports",
			src:  "channel \"a\" {\n  vendor = \"sim\"\n  protocols = [\"openai_chat\"]\n}\nchannel \"b\" {\n  vendor = \"sim\"\n  protocols = [\"openai_chat\"]\n  transport = \"in-process\"\n}",
			want: `t.hcl:8,15-27: channel "b": transport: the vendor "sim" runs out-of-process for channel "a" and in-process here; all channels of one vendor use one transport`,
		},
		{
			desc: "unknown vendor protocol",
			src:  "channel \"openai-main\" {\n  vendor    = \"openai\"\n  protocols = [\"openai_chat\", \"openai_chats\"]\n}",
			want: `t.hcl:3,31-45: channel "openai-main": protocols: unknown protocol "openai_chats" (want one of openai_chat, anthropic_messages, openai_responses, gemini_native)`,
		},
		{
			desc: "protocol listed twice",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"gemini_native\", \"gemini_native\"]\n}",
			want: `t.hcl:3,33-48: channel "c": protocols: "gemini_native" is listed twice`,
		},
		{
			desc: "chat channel without protocols",
			src:  "channel \"c\" {\n  vendor = \"sim\"\n}",
			want: `t.hcl:1,1-12: channel "c": a chat channel needs protocols (one or more of openai_chat, anthropic_messages, openai_responses, gemini_native)`,
		},
		{
			desc: "chat channel with empty protocols",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = []\n}",
			want: `t.hcl:3,15-17: channel "c": a chat channel needs protocols (one or more of openai_chat, anthropic_messages, openai_responses, gemini_native)`,
		},
		{
			desc: "protocols not a list",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = \"openai_chat\"\n}",
			want: `t.hcl:3,15-28: channel "c": protocols: want a list of strings, got string`,
		},
		{
			desc: "empty family",
			src:  "channel \"c\" {\n  vendor   = \"sim\"\n  families = [\"\"]\n}",
			want: `t.hcl:3,15-17: channel "c": families: a family must not be empty`,
		},
		{
			desc: "channel model not declared",
			src:  chatModels + "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  models    = [\"m1\", \"gpt-9\"]\n}",
			want: `t.hcl:7,22-29: channel "c": models: "gpt-9" is not a declared model (add a model "gpt-9" block)`,
		},
		{
			desc: "channel model misspelt: the near one is named",
			src:  "model \"gpt-4o-mini\" { free = true }\nchannel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  models    = [\"gpt-4o-mnii\"]\n}",
			want: `t.hcl:5,16-29: channel "c": models: "gpt-4o-mnii" is not a declared model (did you mean "gpt-4o-mini"? else add a model "gpt-4o-mnii" block)`,
		},
		{
			desc: "billing_url not a URL",
			src:  "server {\n  billing_url = \"billing\"\n}",
			want: `t.hcl:2,17-26: server: billing_url: "billing" is not an http(s) URL`,
		},
		{
			desc: "channel lists an alias",
			src:  "model \"m\" {\n  aliases = [\"mm\"]\n  free    = true\n}\nchannel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  models    = [\"mm\"]\n}",
			want: `t.hcl:8,16-20: channel "c": models: "mm" is an alias of model "m"; list the model id`,
		},
		{
			desc: "channel model mapping without upstream",
			src:  chatModels + "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  models    = [\"m1=\"]\n}",
			want: `t.hcl:7,16-21: channel "c": models: "m1=": want a model id, or client=upstream`,
		},
		{
			desc: "channel model listed twice",
			src:  chatModels + "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  models    = [\"m1\", \"m1=x\"]\n}",
			want: `t.hcl:7,22-28: channel "c": models: "m1" is listed twice`,
		},
		{
			desc: "channel family does not cover the model",
			src:  "model \"img\" {\n  family = \"image\"\n  free   = true\n}\nchannel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  models    = [\"img\"]\n}",
			want: `t.hcl:8,16-21: channel "c": models: model "img" is of family "image", which the channel's families (chat) do not include`,
		},
		{
			desc: "weight below 1",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  weight    = 0\n}",
			want: `t.hcl:4,15-16: channel "c": weight: must be at least 1, got 0`,
		},
		{
			desc: "priority not whole",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  priority  = 1.5\n}",
			want: `t.hcl:4,15-18: channel "c": priority: want a whole number between -1000000000 and 1000000000, got 1.5`,
		},
		{
			desc: "bad channel timeout",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  timeout   = \"30\"\n}",
			want: `t.hcl:4,15-19: channel "c": timeout: "30" is not a duration (want e.g. "30s", "10m")`,
		},
		{
			desc: "negative channel timeout",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  timeout   = \"-1s\"\n}",
			want: `t.hcl:4,15-20: channel "c": timeout: "-1s" must not be negative`,
		},
		{
			desc: "unknown channel tool",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  tools     = [\"code_interpreter\"]\n}",
			want: `t.hcl:4,16-34: channel "c": tools: unknown built-in tool "code_interpreter" (want one of web_search, image_generation)`,
		},
		{
			desc: "channel base_url without scheme",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  base_url  = \"api.openai.com\"\n  protocols = [\"openai_chat\"]\n}",
			want: `t.hcl:3,15-31: channel "c": base_url: "api.openai.com" is not a URL (want e.g. https://api.openai.com)`,
		},
		{
			desc: "duplicate model",
			src:  "model \"m\" { free = true }\nmodel \"m\" { free = true }",
			want: `t.hcl:2,7-10: duplicate model "m" (first defined at t.hcl:1)`,
		},
		{
			desc: "model alias clashes with a model id",
			src:  "model \"a\" { free = true }\nmodel \"b\" {\n  aliases = [\"a\"]\n  free    = true\n}",
			want: `t.hcl:3,14-17: model "b": aliases: "a" is already a model id or alias (declared at t.hcl:1)`,
		},
		{
			desc: "model id clashes with an earlier alias",
			src:  "model \"b\" {\n  aliases = [\"a\"]\n  free    = true\n}\nmodel \"a\" { free = true }",
			want: `t.hcl:5,7-10: model id "a" is already an alias (declared at t.hcl:2)`,
		},
		{
			desc: "empty model family",
			src:  "model \"m\" {\n  free   = true\n  family = \" \"\n}",
			want: `t.hcl:3,12-15: model "m": family must not be empty (chat, or a family a vendor plugin serves)`,
		},
		{
			desc: "bad translate_from",
			src:  "model \"m\" {\n  free           = true\n  translate_from = [\"anthropic\"]\n}",
			want: `t.hcl:3,21-32: model "m": translate_from: unknown protocol "anthropic" (want one of openai_chat, anthropic_messages, openai_responses, gemini_native)`,
		},
		{
			desc: "translate_from on a model no chat channel serves",
			src:  "model \"m\" {\n  translate_from = [\"gemini_native\"]\n  free = true\n}\nchannel \"img\" {\n  vendor   = \"sim\"\n  families = [\"image\"]\n  models   = []\n}",
			want: `t.hcl:2,20-37: model "m": translate_from: no chat channel serves this model, so nothing can be translated to it (list "m" in a chat channel's models)`,
		},
		{
			desc: "default_max_tokens zero",
			src:  "model \"m\" {\n  free               = true\n  default_max_tokens = 0\n}",
			want: `t.hcl:3,24-25: model "m": default_max_tokens: must be at least 1, got 0`,
		},
		{
			desc: "max_output_tokens below default_max_tokens",
			src:  "model \"m\" {\n  default_max_tokens = 8192\n  max_output_tokens  = 4096\n  free = true\n}",
			want: `t.hcl:3,24-28: model "m": max_output_tokens (4096) is below default_max_tokens (8192); it is the ceiling, so it must be at least as high`,
		},
		{
			desc: "model timeout zero",
			src:  "model \"m\" {\n  free    = true\n  timeout = \"0s\"\n}",
			want: `t.hcl:3,13-17: model "m": timeout must be above 0s`,
		},
		{
			desc: "price as a number",
			src:  "model \"m\" {\n  price {\n    input = 0.15\n  }\n}",
			want: `t.hcl:3,13-17: model "m" price: input: write a price as a decimal string, e.g. input = "0.15" (got number; numbers are not exact)`,
		},
		{
			desc: "negative price",
			src:  "model \"m\" {\n  price {\n    output = \"-1\"\n  }\n}",
			want: `t.hcl:3,14-18: model "m" price: output: price "-1" must not be negative`,
		},
		{
			desc: "price not a decimal",
			src:  "model \"m\" {\n  price {\n    per_image = \"4 cents\"\n  }\n}",
			want: `t.hcl:3,17-26: model "m" price: per_image: invalid amount "4 cents"`,
		},
		{
			desc: "price with too many decimals",
			src:  "model \"m\" {\n  price {\n    per_call = \"0.0000000001\"\n  }\n}",
			want: `t.hcl:3,16-30: model "m" price: per_call: amount "0.0000000001" has more than 9 decimal places`,
		},
		{
			desc: "unknown price field",
			src:  "model \"m\" {\n  price {\n    per_token = \"1\"\n  }\n}",
			want: `t.hcl:3,5-14: model "m" price: Unsupported argument; An argument named "per_token" is not expected here.`,
		},
		{
			desc: "two price blocks",
			src:  "model \"m\" {\n  price { input = \"1\" }\n  price {}\n}",
			want: `t.hcl:3,3-8: model "m": duplicate price block (the first is at t.hcl:2)`,
		},
		{
			desc: "unknown caps tool",
			src:  "model \"m\" {\n  caps {\n    tools = [\"browser\"]\n  }\n  free = true\n}",
			want: `t.hcl:3,14-23: model "m" caps: tools: unknown built-in tool "browser" (want one of web_search, image_generation)`,
		},
		{
			desc: "caps reasoning not a bool",
			src:  "model \"m\" {\n  caps {\n    reasoning = 1\n  }\n  free = true\n}",
			want: `t.hcl:3,17-18: model "m" caps: reasoning: want true or false, got number`,
		},
		{
			desc: "negative rpm",
			src:  `limits { rpm = -1 }`,
			want: `t.hcl:1,16-18: limits: rpm: must be at least 0, got -1`,
		},
		{
			desc: "unknown limits attribute",
			src:  `limits { burst = 5 }`,
			want: `t.hcl:1,10-15: limits: Unsupported argument; An argument named "burst" is not expected here.`,
		},
		{
			desc: "pipeline stage twice",
			src:  `pipeline { stages = ["auth", "auth"] }`,
			want: `t.hcl:1,30-36: pipeline: stages: stage "auth" is listed twice`,
		},
		{
			desc: "pipeline empty stage",
			src:  `pipeline { stages = [""] }`,
			want: `t.hcl:1,22-24: pipeline: stages: a stage name must not be empty`,
		},
		{
			// A family's problems (its name, its price unit) are the
			// plugins' to tell: core/gateway's TestFamilyProblems.
			desc: "several problems in file order",
			src:  "model \"m\" {}\nlimits { rpm = -1 }\nserver { durability = \"y\" }",
			want: `t.hcl:1,1-10: model "m": no price {} block; every model needs a price (chat: per million tokens, e.g. price { input = "0.15" output = "0.60" }), or free = true to serve it at no charge on purpose` + "\n" +
				`t.hcl:2,16-18: limits: rpm: must be at least 0, got -1` + "\n" +
				`t.hcl:3,23-26: server: durability: unknown value "y" (want "" or "strict")`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseTest(t, tc.src)
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("config returned with an error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not *config.Error", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func TestLoadExample(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "docs", "examples", "tollgate.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc     string
		env      map[string]string
		plugins  []string
		disabled []string
	}{
		{desc: "without vendor keys", plugins: []string{"sim"}, disabled: []string{"openai-main", "anthropic-main"}},
		{
			desc: "with vendor keys", env: map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"},
			plugins: []string{"anthropic", "openai", "sim"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := parse(src, path, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.PluginNames(); !reflect.DeepEqual(got, tc.plugins) {
				t.Errorf("PluginNames = %v, want %v", got, tc.plugins)
			}
			if !reflect.DeepEqual(cfg.Disabled, tc.disabled) {
				t.Errorf("Disabled = %v, want %v", cfg.Disabled, tc.disabled)
			}
			for _, m := range cfg.Models {
				if len(cfg.ChannelsFor(m.ID)) == 0 {
					t.Errorf("model %q has no channel in the example", m.ID)
				}
			}
			if w := cfg.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			back, err := parseTest(t, Render(cfg))
			if err != nil {
				t.Fatalf("rendered example does not load: %v", err)
			}
			back.Source, cfg.Source, cfg.Disabled = "", "", nil // Render leaves disabled channels out
			unindex(back, cfg)
			if !reflect.DeepEqual(back, cfg) {
				t.Errorf("render round trip differs:\n got %+v\nwant %+v", back, cfg)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "tollgate.hcl")
	if err := os.WriteFile(bad, []byte("limits {\n  rpm = \"many\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		path string
		want string
	}{
		{desc: "missing file", path: filepath.Join(dir, "nope.hcl"), want: "config: open " + filepath.Join(dir, "nope.hcl") + ": no such file or directory"},
		{desc: "error names the file", path: bad, want: bad + `:2,9-15: limits: rpm: want a whole number, got string`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tc.path)
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
}

func TestChannelsFor(t *testing.T) {
	t.Parallel()
	src := `
model "m" {
  aliases = ["m-latest"]
  free    = true
}
model "lonely" { free = true }
channel "b-low"  {
  vendor = "openai"
  protocols = ["openai_chat"]
  models = ["m"]
}
channel "a-high" {
  vendor = "anthropic"
  protocols = ["anthropic_messages"]
  models = ["m=claude-x"]
  priority = 5
}
channel "c-high" {
  vendor = "openai"
  protocols = ["openai_chat"]
  models = ["m"]
  priority = 5
}
`
	loaded := mustParse(t, src)
	manual := &Config{Models: loaded.Models, Channels: loaded.Channels} // no index: scans
	tests := []struct {
		desc  string
		model string
		want  []string
	}{
		{desc: "priority desc then name", model: "m", want: []string{"a-high", "c-high", "b-low"}},
		{desc: "alias resolves", model: "m-latest", want: []string{"a-high", "c-high", "b-low"}},
		{desc: "model without channel", model: "lonely", want: nil},
		{desc: "unknown model", model: "nope", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			for name, cfg := range map[string]*Config{"indexed": loaded, "scanned": manual} {
				var got []string
				for _, ch := range cfg.ChannelsFor(tc.model) {
					got = append(got, ch.Name)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s: ChannelsFor(%q) = %v, want %v", name, tc.model, got, tc.want)
				}
			}
		})
	}
	if got := loaded.PluginNames(); !reflect.DeepEqual(got, []string{"anthropic", "openai"}) {
		t.Errorf("PluginNames = %v", got)
	}
	if got := (&Config{}).PluginNames(); got != nil {
		t.Errorf("PluginNames of empty = %v", got)
	}
}

func TestErrorListsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := parseTest(t, "limits { rpm = -1 }\npipeline { stages = [1] }\n")
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Diagnostics) != 2 {
		t.Fatalf("err = %v", err)
	}
	if n := strings.Count(err.Error(), "\n"); n != 1 {
		t.Errorf("want 2 lines, got %d: %s", n+1, err)
	}
}

func TestRenderRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
	}{
		{desc: "empty", src: ``},
		{desc: "server with tls", src: `server {
  listen             = "0.0.0.0:443"
  admin_token        = "t"
  master_key         = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
  allow_private_urls = true
  durability         = "strict"
  metrics_listen     = "127.0.0.1:9090"
  drain_timeout      = "5s"
  tls {
    domains              = ["gw.example.com"]
    email                = "ops@example.com"
    ca                   = "https://127.0.0.1:14000/dir"
    renew_interval       = "1m"
    renewal_window_ratio = 0.25
  }
}`},
		{desc: "server timeouts and caps", src: `server {
  admin_listen    = "127.0.0.1:9091"
  master_key_file = "/etc/tollgate/master.key"
  body_timeout    = "10s"
  write_timeout   = "20s"
  max_body_memory = "1GB"
  max_event_size  = "4MB"
  memory_limit    = "40MB"
}`},
		{desc: "server with static tls", src: `server {
  http_listen = "127.0.0.1:8081"
  tls {
    cert_file = "/etc/tls/cert.pem"
    key_file  = "/etc/tls/key.pem"
  }
}`},
		{desc: "telemetry", src: `telemetry {
  endpoint      = "http://127.0.0.1:4318"
  protocol      = "grpc"
  sampler_ratio = 0.5
  service_name  = "gw"
  headers       = { "api-key" = "x" }
}`},
		{desc: "plugins and channels", src: chatModels + `
plugin "openai" {
  path       = "/opt/p"
  settings   = { "dotted.key" = "1", empty = "" }
  gomaxprocs = 3
  memory_limit = "24MB"
}
plugin "bare" {}
channel "c" {
  vendor    = "openai"
  api_key   = "k"
  protocols = ["openai_chat"]
  models    = ["m1", "m2=up"]
  priority  = 3
  weight    = 2
  timeout   = "1m30s"
  transport = "in-process"
  tools     = ["web_search"]
  settings  = {}
}`},
		{desc: "postgres store", src: `store "postgres" {
  url   = "postgres://tollgate:pw@db.internal:5432/tollgate?sslmode=require"
  dir   = "/var/lib/tollgate"
  lease = "20s"
}`},
		{desc: "audit", src: `audit {
  every = "30m0s"
}`},
		{desc: "media model", src: `model "v" {
  family = "video"
  price {
    per_second = "0.5"
    per_call   = "0.000000001"
  }
}
pipeline {
  stages = ["auth"]
}`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := mustParse(t, tc.src)
			out := Render(cfg)
			back, err := parseTest(t, out)
			if err != nil {
				t.Fatalf("rendered config does not load: %v\n%s", err, out)
			}
			unindex(back, cfg)
			if !reflect.DeepEqual(back, cfg) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v\n%s", back, cfg, out)
			}
		})
	}
}

// unindex drops the lookup maps so configs compare by content.
func unindex(cs ...*Config) {
	for _, c := range cs {
		c.models, c.byModel, c.ranges, c.warnings = nil, nil, nil, nil
	}
}

func TestStageSettings(t *testing.T) {
	cfg, err := Parse([]byte(`
pipeline {
  stages = ["auth", "allowlist", "prompt-denylist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"]
}
stage "prompt-denylist" {
  settings = { phrases = "alpha, beta" }
}
`), "t.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Pipeline.Settings["prompt-denylist"]["phrases"]; got != "alpha, beta" {
		t.Fatalf("settings %v", cfg.Pipeline.Settings)
	}
	_, err = Parse([]byte("stage \"x\" {\n  nope = 1\n}\nstage \"x\" {}\n"), "t.hcl")
	if err == nil || !strings.Contains(err.Error(), `t.hcl:2`) || !strings.Contains(err.Error(), `duplicate stage "x"`) {
		t.Fatalf("want an unknown-attribute error at line 2 and a duplicate stage error, got %v", err)
	}
}
