package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// agentIDs are the model ids coding agents send by default.
var agentIDs = []string{"claude-sonnet-4-5", "claude-sonnet-5", "claude-opus-4-8", "claude-haiku-4-5-20251001", "gpt-5-codex"}

func TestDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		env  map[string]string
		// channel names serving each model, in ChannelsFor order
		want map[string][]string
		// owned_by per model where it is not "sim"
		owners   map[string]string
		plugins  []string
		channels int
	}{
		{
			desc:     "no vendor keys: sim only",
			env:      nil,
			want:     map[string][]string{"sim-chat": {"sim"}, "gpt-4o-mini": {"sim"}, "claude-sonnet-4-5": {"sim"}, "gemini-2.5-flash": {"sim"}},
			plugins:  []string{"sim"},
			channels: 1,
		},
		{
			desc:     "empty keys count as unset",
			env:      map[string]string{"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": ""},
			want:     map[string][]string{"gpt-4o-mini": {"sim"}},
			plugins:  []string{"sim"},
			channels: 1,
		},
		{
			desc:     "openai key",
			env:      map[string]string{"OPENAI_API_KEY": "sk-o"},
			want:     map[string][]string{"gpt-4o-mini": {"openai", "sim"}, "claude-sonnet-4-5": {"sim"}, "sim-chat": {"sim"}},
			owners:   map[string]string{"gpt-4o-mini": "openai"},
			plugins:  []string{"openai", "sim"},
			channels: 2,
		},
		{
			desc: "anthropic key",
			env:  map[string]string{"ANTHROPIC_API_KEY": "sk-a"},
			want: map[string][]string{
				"claude-sonnet-4-5": {"anthropic", "sim"}, "claude-haiku-4-5-20251001": {"anthropic", "sim"},
				"claude-opus-4-8": {"sim"}, "gpt-4o-mini": {"sim"},
			},
			owners:   map[string]string{"claude-sonnet-4-5": "anthropic", "claude-haiku-4-5-20251001": "anthropic"},
			plugins:  []string{"anthropic", "sim"},
			channels: 2,
		},
		{
			desc:     "gemini key",
			env:      map[string]string{"GEMINI_API_KEY": "g-1"},
			want:     map[string][]string{"gemini-2.5-flash": {"gemini", "sim"}, "gpt-4o-mini": {"sim"}},
			owners:   map[string]string{"gemini-2.5-flash": "gemini"},
			plugins:  []string{"gemini", "sim"},
			channels: 2,
		},
		{
			desc: "all three keys",
			env:  map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a", "GEMINI_API_KEY": "g-1"},
			want: map[string][]string{
				"gpt-4o-mini": {"openai", "sim"}, "claude-sonnet-4-5": {"anthropic", "sim"},
				"gemini-2.5-flash": {"gemini", "sim"}, "gpt-5-codex": {"sim"},
			},
			owners:   map[string]string{"gpt-4o-mini": "openai", "claude-sonnet-4-5": "anthropic", "claude-haiku-4-5-20251001": "anthropic", "gemini-2.5-flash": "gemini"},
			plugins:  []string{"anthropic", "gemini", "openai", "sim"},
			channels: 4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := Default(func(k string) string { return tc.env[k] })
			if len(cfg.Channels) != tc.channels {
				t.Fatalf("channels = %d, want %d: %+v", len(cfg.Channels), tc.channels, cfg.Channels)
			}
			for model, want := range tc.want {
				var got []string
				for _, ch := range cfg.ChannelsFor(model) {
					got = append(got, ch.Name)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("ChannelsFor(%q) = %v, want %v", model, got, want)
				}
			}
			for _, m := range cfg.Models {
				want := "sim"
				if o, ok := tc.owners[m.ID]; ok {
					want = o
				}
				if m.OwnedBy != want {
					t.Errorf("model %q owned_by %q, want %q", m.ID, m.OwnedBy, want)
				}
			}
			if got := cfg.PluginNames(); !reflect.DeepEqual(got, tc.plugins) {
				t.Errorf("PluginNames = %v, want %v", got, tc.plugins)
			}
			for _, ch := range cfg.Channels[1:] {
				if ch.APIKey != tc.env[envFor[ch.Vendor]] || ch.Priority <= cfg.Channels[0].Priority {
					t.Errorf("channel %q: key %q priority %d", ch.Name, ch.APIKey, ch.Priority)
				}
				if ch.BaseURL != baseFor[ch.Vendor] {
					t.Errorf("channel %q base_url %q", ch.Name, ch.BaseURL)
				}
			}
		})
	}
}

var envFor = map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
var baseFor = map[string]string{"openai": OpenAIBaseURL, "anthropic": AnthropicBaseURL, "gemini": GeminiBaseURL}

func TestDefaultShape(t *testing.T) {
	t.Parallel()
	cfg := Default(func(string) string { return "" })
	checks := []struct {
		desc string
		ok   bool
	}{
		{"listen 127.0.0.1:8080", cfg.Server.Listen == "127.0.0.1:8080"},
		{"private urls allowed", cfg.Server.AllowPrivateURLs},
		{"badger in ./data", cfg.Store == Store{Kind: "badger", Dir: "./data"}},
		{"limits 600 rpm, 64 in flight", cfg.Limits == Limits{RPM: 600, Concurrency: 64}},
		{"no source file", cfg.Source == ""},
		{"sim channel speaks all four protocols", len(cfg.Channels) == 1 &&
			reflect.DeepEqual(cfg.Channels[0].Protocols, []string{string(protocol.OpenAIChat), string(protocol.AnthropicMessages), string(protocol.OpenAIResponses), string(protocol.GeminiNative)})},
		{"sim channel: vendor, base_url, families", cfg.Channels[0].Vendor == "sim" && cfg.Channels[0].BaseURL == "sim://local" &&
			reflect.DeepEqual(cfg.Channels[0].Families, []string{"chat", "image", "video", "music", "speech", "voice", "transcript", "search",
				"avatar", "lipsync", "motion", "clip", "subtitle"}) &&
			cfg.Channels[0].Weight == 1},
		{"a priced model of every media family", func() bool {
			for _, f := range []string{"image", "video", "music", "speech", "voice", "transcript", "search", "avatar", "lipsync", "motion", "clip", "subtitle"} {
				found := false
				for i := range cfg.Models {
					m := &cfg.Models[i]
					found = found || m.Family == f && (!m.Price.IsZero() || m.Free) && len(cfg.ChannelsFor(m.ID)) > 0
				}
				if !found {
					return false
				}
			}
			return true
		}()},
		{"gpt-5-codex reasons", func() bool { m, ok := cfg.Model("gpt-5-codex"); return ok && m.Caps.Reasoning }()},
	}
	for _, c := range checks {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			if !c.ok {
				t.Errorf("embedded default: %s does not hold: %+v", c.desc, cfg)
			}
		})
	}
	for _, id := range append([]string{"sim-chat", "gpt-4o-mini", "gemini-2.5-flash"}, agentIDs...) {
		t.Run("model "+id, func(t *testing.T) {
			t.Parallel()
			m, ok := cfg.Model(id)
			if !ok {
				t.Fatalf("model %q missing", id)
			}
			if m.Family != "chat" || m.OwnedBy != "sim" || m.Price.Input <= 0 || m.Price.Output <= m.Price.Input {
				t.Errorf("model %+v", m)
			}
			if m.DefaultMaxTokens < 4096 || m.MaxOutputTokens < m.DefaultMaxTokens || m.Timeout < DefaultModelTimeout {
				t.Errorf("model %q tokens %d/%d timeout %v", id, m.DefaultMaxTokens, m.MaxOutputTokens, m.Timeout)
			}
			if slices.Contains(agentIDs, id) && m.Timeout < 600*time.Second {
				t.Errorf("agent model %q timeout %v, want at least 600s", id, m.Timeout)
			}
			if len(cfg.ChannelsFor(id)) != 1 {
				t.Errorf("model %q not served by sim", id)
			}
		})
	}
}

// The default must pass the same validation as a file: render it as HCL
// and load it back.
func TestDefaultValidates(t *testing.T) {
	t.Parallel()
	cfg := Default(func(k string) string { return "key-" + k })
	src := Render(cfg)
	back, err := parseTest(t, src)
	if err != nil {
		t.Fatalf("rendered default does not load: %v\n%s", err, src)
	}
	back.Source = ""
	unindex(back, cfg)
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, cfg)
	}
}

// Model and ChannelsFor run on every request: no allocation.
func TestLookupsDoNotAllocate(t *testing.T) {
	cfg := Default(func(string) string { return "k" })
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := cfg.Model("claude-sonnet-4-5"); !ok {
			t.Fatal("model missing")
		}
		if len(cfg.ChannelsFor("claude-sonnet-4-5")) != 2 {
			t.Fatal("channels missing")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup, want 0", allocs)
	}
}

func BenchmarkChannelsFor(b *testing.B) {
	cfg := Default(func(string) string { return "k" })
	b.ReportAllocs()
	for b.Loop() {
		_ = cfg.ChannelsFor("gpt-4o-mini")
	}
}

// docs/config.md shows the embedded default as Render prints it.
func TestDocsShowTheDefault(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## The embedded default")
	_, block, ok2 := strings.Cut(after, "```hcl\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/config.md has no hcl block under \"## The embedded default\"")
	}
	if want := Render(Default(func(string) string { return "" })); block != want {
		t.Errorf("docs/config.md shows another embedded default; paste this:\n%s", want)
	}
}
