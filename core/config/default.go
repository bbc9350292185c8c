package config

import (
	"cmp"
	"slices"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Real vendors the embedded default adds when their key is in the environment.
const (
	OpenAIBaseURL    = "https://api.openai.com"
	AnthropicBaseURL = "https://api.anthropic.com"
	GeminiBaseURL    = "https://generativelanguage.googleapis.com"
)

// agentTimeout is the chat timeout of the ids coding agents use: their turns
// run long.
const agentTimeout = 600 * time.Second

// Default is the embedded configuration `tollgate serve` runs without a
// file: the sim vendor serving a small demo chat model set on all four
// protocols, plus a real vendor channel for each of OPENAI_API_KEY,
// ANTHROPIC_API_KEY and GEMINI_API_KEY that env returns non-empty.
func Default(env func(string) string) *Config {
	all := make([]string, len(protocol.All))
	for i, p := range protocol.All {
		all[i] = string(p)
	}
	cfg := &Config{
		Server:   Server{Listen: DefaultListen, AllowPrivateURLs: true, DrainTimeout: DefaultDrainTimeout},
		Store:    Store{Kind: storeKindBadger, Dir: DefaultStoreDir},
		Limits:   Limits{RPM: 600, Concurrency: 64},
		Accounts: Accounts{SignupCredit: DefaultSignupCredit, Signup: SignupOpen},
		Console:  Console{Enabled: true, SessionTTL: DefaultSessionTTL},
		Billing:  simBilling(),
		Models: []Model{
			chatModel("sim-chat", 8192, 8192, DefaultModelTimeout, price("0.10", "0.40", "0.025", ""),
				Caps{Tools: []string{"web_search", "image_generation"}, Vision: true}),
			chatModel("claude-sonnet-4-5", 8192, 32000, agentTimeout, price("3", "15", "0.30", "3.75"),
				Caps{Reasoning: true, Vision: true}),
			chatModel("claude-sonnet-5", 8192, 32000, agentTimeout, price("3", "15", "0.30", "3.75"),
				Caps{Reasoning: true, Vision: true}),
			chatModel("claude-opus-4-8", 8192, 32000, agentTimeout, price("5", "25", "0.50", "6.25"),
				Caps{Reasoning: true, Vision: true}),
			chatModel("claude-haiku-4-5-20251001", 8192, 32000, agentTimeout, price("1", "5", "0.10", "1.25"),
				Caps{Reasoning: true, Vision: true}),
			chatModel("gpt-5-codex", 8192, 32000, agentTimeout, price("1.25", "10", "0.125", ""),
				Caps{Reasoning: true}),
			chatModel("gpt-4o-mini", 16384, 16384, DefaultModelTimeout, price("0.15", "0.60", "0.075", ""),
				Caps{Tools: []string{"web_search"}, Vision: true}),
			chatModel("gemini-2.5-flash", 8192, 32768, DefaultModelTimeout, price("0.30", "2.50", "0.03", ""),
				Caps{Reasoning: true, Vision: true}),
		},
	}
	cfg.Models = append(cfg.Models, simImageModels()...)
	cfg.Models = append(cfg.Models, simMediaModels()...)
	cfg.Models = append(cfg.Models, digitalHumanModels()...)
	simModels := make([]string, len(cfg.Models))
	var families []string // the sim serves the family of every model it lists
	for i, md := range cfg.Models {
		simModels[i] = md.ID
		if f := cmp.Or(md.Family, "chat"); !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	cfg.Channels = []Channel{{
		Name: "sim", Vendor: "sim", BaseURL: "sim://local",
		Families: families, Protocols: all, Models: simModels, Weight: 1,
	}}

	real := []struct {
		env, vendor, baseURL string
		protocols            []protocol.ID
		models               []string
	}{
		{"OPENAI_API_KEY", "openai", OpenAIBaseURL, []protocol.ID{protocol.OpenAIChat, protocol.OpenAIResponses}, []string{"gpt-4o-mini"}},
		{"ANTHROPIC_API_KEY", "anthropic", AnthropicBaseURL, []protocol.ID{protocol.AnthropicMessages}, []string{"claude-sonnet-4-5", "claude-haiku-4-5-20251001"}},
		{"GEMINI_API_KEY", "gemini", GeminiBaseURL, []protocol.ID{protocol.GeminiNative}, []string{"gemini-2.5-flash"}},
	}
	for _, r := range real {
		key := env(r.env)
		if key == "" {
			continue
		}
		ps := make([]string, len(r.protocols))
		for i, p := range r.protocols {
			ps[i] = string(p)
		}
		// Above sim, so the real upstream serves and sim is the fallback.
		cfg.Channels = append(cfg.Channels, Channel{
			Name: r.vendor, Vendor: r.vendor, BaseURL: r.baseURL, APIKey: key,
			Families: []string{"chat"}, Protocols: ps, Models: r.models, Priority: 10, Weight: 1,
		})
		for _, id := range r.models {
			m, _ := cfg.Model(id)
			m.OwnedBy = r.vendor
		}
	}
	// A search and an MCP client answer at once: the docs, readable by
	// every account.
	cfg.KnowledgeBases = []KnowledgeBase{{ID: "default", Name: "Tollgate documentation", Docs: BuiltinDocs}}
	cfg.index()
	return cfg
}

// simBilling takes card top-ups through the simulated processor, so the
// whole top-up shows without a processor's account (docs/billing.md).
func simBilling() Billing {
	b := DefaultBilling()
	b.Enabled, b.Processor = true, ProcessorSim
	return b
}

// simImageModels are the demo image models, one per rule of the spec's
// images part that a model decides (docs/sim.md).
func simImageModels() []Model {
	img := func(id, perImage string) Model {
		return Model{ID: id, OwnedBy: "sim", Family: "image", Price: Price{PerImage: money.MustParse(perImage)},
			DefaultMaxTokens: DefaultMaxTokens, MaxOutputTokens: DefaultMaxTokens, Timeout: DefaultModelTimeout}
	}
	grid := img("sim-image-grid", "0.02")
	grid.Grid = 4
	area := img("sim-image-area", "0.04")
	area.Price.PerImageHD, area.Price.AreaThresholdMP = money.MustParse("0.08"), "2.61"
	nosize := img("sim-image-nosize", "0.03")
	nosize.IgnoreSize = true
	return []Model{img("sim-image", "0.04"), grid, area, nosize}
}

// simMediaModels are the demo models of the other media families, one per
// family (and a video model priced by resolution), priced per unit.
func simMediaModels() []Model {
	media := func(id, family string, p Price) Model {
		return Model{ID: id, OwnedBy: "sim", Family: family, Price: p,
			DefaultMaxTokens: DefaultMaxTokens, MaxOutputTokens: DefaultMaxTokens, Timeout: DefaultModelTimeout}
	}
	m := money.MustParse
	vid := media("sim-video", "video", Price{PerSecond: m("0.05")})
	vid.MaxDuration = 10
	vid.Settings = map[string]string{"min_duration": "1", "modes": "text-to-video,image-to-video", "ratios": "16:9,9:16,1:1",
		"max_refs": "4", "audio": "true"}
	tiered := media("sim-video-hd", "video", Price{PerSecondByResolution: map[string]money.Nano{"480p": m("0.03"), "720p": m("0.06")}})
	tiered.MaxDuration = 10
	tiered.Settings = map[string]string{"resolutions": "480p,720p", "default_resolution": "720p", "resolution_with_video": "true",
		"modes": "text-to-video,video-to-video", "ratios": "16:9,9:16"}
	return []Model{
		vid, tiered,
		media("sim-music", "music", Price{PerGeneration: m("0.20")}),
		media("sim-speech", "speech", Price{PerCharacter: m("0.000015")}),
		media("sim-voice", "voice", Price{PerCall: m("0.50")}),
		media("sim-transcript", "transcript", Price{PerCall: m("0.02")}),
		media("sim-search", "search", Price{PerCall: m("0.005")}),
	}
}

// digitalHumanModels are the digital-human and editing models at the
// spec's prices: every one is a model id the spec names, served by the
// sim. Recognition is priced 0 (free = true), charged only on success.
func digitalHumanModels() []Model {
	dh := func(id, family string, p Price) Model {
		return Model{ID: id, OwnedBy: "sim", Family: family, Price: p,
			DefaultMaxTokens: DefaultMaxTokens, MaxOutputTokens: DefaultMaxTokens, Timeout: DefaultModelTimeout}
	}
	m := money.MustParse
	subtitle := dh("clip-subtitle", "subtitle", Price{})
	subtitle.Free = true
	return []Model{
		dh("dh-avatar", "avatar", Price{PerSecond: m("3.96")}),
		dh("dh-avatar-create", "avatar", Price{PerCall: m("220.11")}),
		dh("dh-lipsync", "lipsync", Price{PerSecond: m("4.04")}),
		dh("dh-lipsync-pro", "lipsync", Price{PerSecond: m("8.09")}),
		dh("dh-lipsync-max", "lipsync", Price{PerSecond: m("12.13")}),
		dh("dh-motion", "motion", Price{PerSecondByResolution: map[string]money.Nano{"fast": m("4.04"), "standard": m("8.09"), "max": m("12.13")}}),
		dh("clip-compose", "clip", Price{PerCall: m("90")}),
		subtitle,
	}
}

func chatModel(id string, defMax, maxOut int, timeout time.Duration, p Price, caps Caps) Model {
	return Model{
		ID: id, OwnedBy: "sim", Family: "chat", Price: p,
		DefaultMaxTokens: defMax, MaxOutputTokens: maxOut, Timeout: timeout, Caps: caps,
	}
}

// price builds a token price per million tokens; an empty cacheWrite leaves
// cache writes billed at the input price.
func price(input, output, cachedInput, cacheWrite string) Price {
	p := Price{Input: money.MustParse(input), Output: money.MustParse(output), CachedInput: money.MustParse(cachedInput)}
	if cacheWrite != "" {
		p.CacheWrite = money.MustParse(cacheWrite)
	}
	return p
}
