// Package builtin lists the vendors built into the tollgate binary: the
// ones a channel may run inside the gateway's process (channel {
// transport = "in-process" }), through the same Go interfaces as their
// plugin binaries serve. Third-party plugins always run out of process.
package builtin

import (
	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/plugins/anthropic"
	"github.com/tollgate-gw/tollgate/plugins/elevenlabs"
	"github.com/tollgate-gw/tollgate/plugins/gemini"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/openaicompat"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/suno"
	"github.com/tollgate-gw/tollgate/plugins/syncso"
	"github.com/tollgate-gw/tollgate/plugins/tavily"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Vendors returns a fresh map of the built-in vendors by plugin name (the
// NAME of their binary tollgate-plugin-NAME).
func Vendors() map[string]host.Builtin {
	return map[string]host.Builtin{
		"anthropic":         func(hclog.Logger) vendor.Vendor { return anthropic.New() },
		"elevenlabs":        func(hclog.Logger) vendor.Vendor { return elevenlabs.New() },
		"gemini":            func(hclog.Logger) vendor.Vendor { return gemini.New() },
		"openai":            func(hclog.Logger) vendor.Vendor { return openai.New() },
		"openai-compatible": func(hclog.Logger) vendor.Vendor { return openaicompat.New() },
		"sim":               func(log hclog.Logger) vendor.Vendor { return sim.New(log) },
		"suno":              func(hclog.Logger) vendor.Vendor { return suno.New() },
		"syncso":            func(hclog.Logger) vendor.Vendor { return syncso.New() },
		"tavily":            func(hclog.Logger) vendor.Vendor { return tavily.New() },
	}
}
