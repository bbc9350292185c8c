package elevenlabs_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/elevenlabs"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech/speechtest"
	"github.com/tollgate-gw/tollgate/plugins/family/voice/voicetest"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// sampleServer serves a voice sample on loopback (the plugin fetches a
// clone's audio_url itself: ElevenLabs takes files only).
func sampleServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(sim.AudioWAV(200))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/samples/ada.wav"
}

// newVendor is the elevenlabs plugin, built by wrap, on ElevenLabs' API as
// internal/vendorsim serves it.
func newVendor(wrap familytest.Wrap) func(t *testing.T) vendor.Vendor {
	return func(t *testing.T) vendor.Vendor {
		v := wrap(t, elevenlabs.New())
		if err := v.Configure(t.Context(), vendor.Config{AllowPrivateURLs: true, Channels: []vendor.Channel{{Name: "main",
			BaseURL: vendorsim.Serve(t, vendorsim.Options{APIKey: "xi-key"}), APIKey: "xi-key"}}}); err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// The elevenlabs plugin passes the voice and speech suites, in process
// and over gRPC.
func TestConformance(t *testing.T) {
	familytest.Transports(t, func(t *testing.T, wrap familytest.Wrap) {
		newV := newVendor(wrap)
		t.Run("voice", func(t *testing.T) {
			voicetest.Run(t, voicetest.Target{Target: familytest.Target{Name: "elevenlabs", New: newV,
				Model: vendor.JobModel{ID: "clone", Upstream: "ivc"}}, SampleURL: sampleServer(t)})
		})
		t.Run("speech", func(t *testing.T) {
			speechtest.Run(t, speechtest.Target{Target: familytest.Target{Name: "elevenlabs", New: newV,
				Model: vendor.JobModel{ID: "eleven", Upstream: "eleven_multilingual_v2"}}, Voice: "21m00Tcm4TlvDq8ikWAM"})
		})
	})
}
