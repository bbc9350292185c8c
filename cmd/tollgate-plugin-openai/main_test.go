package main

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech/speechtest"
	"github.com/tollgate-gw/tollgate/plugins/family/video/videotest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestBinary(t *testing.T) {
	vt.CheckBinary(t, vt.BinaryCase{Name: "openai", Protocol: "openai_chat", Model: "gpt-4o-mini",
		Path: "/v1/chat/completions", AuthHeader: "Authorization", AuthValue: "Bearer key-1"})
}

// TestConformance runs the suite against the plugin process, over gRPC.
func TestConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	conformance.Run(t, conformance.Target{
		Name:      "openai",
		Protocols: []string{"openai_chat", "openai_responses"},
		New: func(t *testing.T) vendor.Vendor {
			up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-conformance"}).Handler())
			t.Cleanup(up.Close)
			return vt.StartBinary(t, "openai", vendor.Config{Channels: []vendor.Channel{
				{Name: "main", BaseURL: up.URL, APIKey: "sk-conformance"}}})
		},
		Request: conformance.MarkerRequest,
	})
}

// TestImagesConformance runs the image family's suite against the plugin
// process, through plugins/host as the gateway starts it.
func TestImagesConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	imagestest.Run(t, imagestest.Target{
		Name: "openai",
		New: func(t *testing.T) vendor.Vendor {
			up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-images"}).Handler())
			t.Cleanup(up.Close)
			return vt.StartBinary(t, "openai", vendor.Config{AllowPrivateURLs: true,
				Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL, APIKey: "sk-images"}}})
		},
		Plain: vendor.JobModel{ID: "gpt-image-1", Upstream: "gpt-image-1"},
		Area: vendor.JobModel{ID: "gpt-image-1-area", Upstream: "gpt-image-1",
			Settings: map[string]string{"area_threshold_mp": "1.2"}, Tiers: []string{"hd"}},
		SmallSize:         "1024x1024",
		LargeSize:         "1536x1024",
		FetchesReferences: true,
	})
}

// TestMediaConformance runs the speech and video suites against the
// plugin process.
func TestMediaConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	newV := func(t *testing.T) vendor.Vendor {
		up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-media"}).Handler())
		t.Cleanup(up.Close)
		return vt.StartBinary(t, "openai", vendor.Config{AllowPrivateURLs: true, Channels: []vendor.Channel{{Name: "main",
			BaseURL: up.URL, APIKey: "sk-media", Settings: map[string]string{"poll_interval": "20ms"}}}})
	}
	t.Run("speech", func(t *testing.T) {
		speechtest.Run(t, speechtest.Target{Target: familytest.Target{Name: "openai", New: newV,
			Model: vendor.JobModel{ID: "tts", Upstream: "gpt-4o-mini-tts"}}, Voice: "alloy"})
	})
	t.Run("video", func(t *testing.T) {
		videotest.Run(t, videotest.Target{Target: familytest.Target{Name: "openai", New: newV,
			Model: vendor.JobModel{ID: "sora", Upstream: "sora-2", Settings: map[string]string{"max_duration": "10"}}}})
	})
}
