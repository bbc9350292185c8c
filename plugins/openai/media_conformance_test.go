package openai_test

import (
	"testing"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech/speechtest"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// mediaVendor is the openai plugin, built by wrap (in process, or behind
// the gRPC transport), on OpenAI's speech and videos APIs as
// internal/vendorsim serves them.
func mediaVendor(wrap familytest.Wrap) func(t *testing.T) vendor.Vendor {
	return func(t *testing.T) vendor.Vendor {
		v := wrap(t, openai.New())
		if err := v.Configure(t.Context(), vendor.Config{AllowPrivateURLs: true, Channels: []vendor.Channel{{Name: "main",
			BaseURL: vendorsim.Serve(t, vendorsim.Options{APIKey: "sk-media"}), APIKey: "sk-media",
			Settings: map[string]string{openai.SettingPollInterval: "20ms"}}}}); err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// The openai plugin passes the speech and video suites, in process and
// over gRPC.
func TestMediaConformance(t *testing.T) {
	familytest.Transports(t, func(t *testing.T, wrap familytest.Wrap) {
		runMediaSuites(t, mediaVendor(wrap))
	})
}

// runMediaSuites runs the speech and video suites against newV.
func runMediaSuites(t *testing.T, newV func(t *testing.T) vendor.Vendor) {
	t.Run("speech", func(t *testing.T) {
		speechtest.Run(t, speechtest.Target{Target: familytest.Target{Name: "openai", New: newV,
			Model: vendor.JobModel{ID: "tts", Upstream: "gpt-4o-mini-tts"}}, Voice: "alloy"})
	})
	t.Run("video", func(t *testing.T) {
		videotest.Run(t, videotest.Target{Target: familytest.Target{Name: "openai", New: newV,
			Model: vendor.JobModel{ID: "sora", Upstream: "sora-2", Settings: map[string]string{"max_duration": "10"}}},
			Tiered: vendor.JobModel{ID: "sora-tiered", Upstream: "sora-2-pro",
				Settings: map[string]string{"max_duration": "10", "resolutions": "720p"}, Tiers: []string{"720p"}}})
	})
}
