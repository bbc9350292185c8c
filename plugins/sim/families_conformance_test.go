package sim_test

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/avatar/avatartest"
	"github.com/tollgate-gw/tollgate/plugins/family/clip/cliptest"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/lipsync/lipsynctest"
	"github.com/tollgate-gw/tollgate/plugins/family/motion/motiontest"
	"github.com/tollgate-gw/tollgate/plugins/family/music/musictest"
	"github.com/tollgate-gw/tollgate/plugins/family/search/searchtest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech/speechtest"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle/subtitletest"
	"github.com/tollgate-gw/tollgate/plugins/family/transcript/transcripttest"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	"github.com/tollgate-gw/tollgate/plugins/family/voice/voicetest"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Every family the sim serves passes its conformance suite, in process
// and behind the real gRPC transport.
func TestFamiliesConformance(t *testing.T) {
	familytest.Transports(t, func(t *testing.T, wrap familytest.Wrap) {
		newSim := func(t *testing.T) vendor.Vendor {
			v := wrap(t, sim.New(nil))
			if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main"}}, AllowPrivateURLs: true}); err != nil {
				t.Fatal(err)
			}
			return v
		}
		model := func(id string, settings map[string]string, tiers ...string) vendor.JobModel {
			return vendor.JobModel{ID: id, Upstream: id, Settings: settings, Tiers: tiers}
		}
		t.Run("video", func(t *testing.T) {
			videotest.Run(t, videotest.Target{Target: familytest.Target{Name: "sim", New: newSim,
				Model: model("sim-video", map[string]string{"max_duration": "10"})},
				Tiered: model("sim-video-tiered", map[string]string{"max_duration": "10", "resolutions": "480p,720p"}, "480p", "720p")})
		})
		t.Run("music", func(t *testing.T) {
			musictest.Run(t, musictest.Target{Name: "sim", New: newSim, Model: model("sim-music", nil)})
		})
		t.Run("speech", func(t *testing.T) {
			speechtest.Run(t, speechtest.Target{Target: familytest.Target{Name: "sim", New: newSim, Model: model("sim-speech", nil)}, Voice: "alloy"})
		})
		t.Run("voice", func(t *testing.T) {
			voicetest.Run(t, voicetest.Target{Target: familytest.Target{Name: "sim", New: newSim, Model: model("sim-voice", nil)},
				SampleURL: "https://samples.example/ada.wav"})
		})
		t.Run("transcript", func(t *testing.T) {
			transcripttest.Run(t, transcripttest.Target{Name: "sim", New: newSim, Model: model("sim-transcript", nil)})
		})
		t.Run("search", func(t *testing.T) {
			searchtest.Run(t, searchtest.Target{Name: "sim", New: newSim, Model: model("sim-search", nil)})
		})
		t.Run("avatar", func(t *testing.T) {
			avatartest.Run(t, avatartest.Target{Target: familytest.Target{Name: "sim", New: newSim, Model: model("dh-avatar", nil)},
				Create: model("dh-avatar-create", nil), Preset: "anna", Voice: "alloy"})
		})
		t.Run("lipsync", func(t *testing.T) {
			lipsynctest.Run(t, lipsynctest.Target{Target: familytest.Target{Name: "sim", New: newSim,
				Model: model("dh-lipsync", map[string]string{"max_duration": "10"})}})
		})
		t.Run("motion", func(t *testing.T) {
			motiontest.Run(t, familytest.Target{Name: "sim", New: newSim, Model: model("dh-motion", nil, "fast", "max", "standard")})
		})
		t.Run("clip", func(t *testing.T) {
			cliptest.Run(t, familytest.Target{Name: "sim", New: newSim, Model: model("clip-compose", nil)})
		})
		t.Run("subtitle", func(t *testing.T) {
			subtitletest.Run(t, familytest.Target{Name: "sim", New: newSim, Model: model("clip-subtitle", nil)})
		})
	})
}
