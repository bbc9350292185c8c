package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech/speechtest"
	"github.com/tollgate-gw/tollgate/plugins/family/voice/voicetest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// TestConformance runs the voice and speech suites against the plugin
// process, through plugins/host as the gateway starts it.
func TestConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	sample := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(sim.AudioWAV(100))
	}))
	t.Cleanup(sample.Close)
	newV := func(t *testing.T) vendor.Vendor {
		upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "xi-key"})
		return vt.StartBinary(t, "elevenlabs", vendor.Config{AllowPrivateURLs: true,
			Channels: []vendor.Channel{{Name: "main", BaseURL: upURL, APIKey: "xi-key"}}})
	}
	t.Run("voice", func(t *testing.T) {
		voicetest.Run(t, voicetest.Target{Target: familytest.Target{Name: "elevenlabs", New: newV,
			Model: vendor.JobModel{ID: "clone", Upstream: "ivc"}}, SampleURL: sample.URL + "/ada.wav"})
	})
	t.Run("speech", func(t *testing.T) {
		speechtest.Run(t, speechtest.Target{Target: familytest.Target{Name: "elevenlabs", New: newV,
			Model: vendor.JobModel{ID: "eleven", Upstream: "eleven_multilingual_v2"}}, Voice: "21m00Tcm4TlvDq8ikWAM"})
	})
}
