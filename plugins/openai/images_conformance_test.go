package openai_test

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// imagesTarget is the openai plugin against OpenAI's images API as
// internal/vendorsim serves it, built by wrap (in process, or behind the
// gRPC transport).
func imagesTarget(wrap func(t *testing.T, v vendor.Vendor) vendor.Vendor) imagestest.Target {
	return imagestest.Target{
		Name: "openai",
		New: func(t *testing.T) vendor.Vendor {
			up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-images"}).Handler())
			t.Cleanup(up.Close)
			v := wrap(t, openai.New())
			if err := v.Configure(t.Context(), vendor.Config{AllowPrivateURLs: true,
				Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL, APIKey: "sk-images"}}}); err != nil {
				t.Fatal(err)
			}
			return v
		},
		Plain: vendor.JobModel{ID: "gpt-image-1", Upstream: "gpt-image-1"},
		// OpenAI serves no fixed-grid model: only the hold is checked.
		Grid: vendor.JobModel{ID: "grid", Upstream: "gpt-image-1", Settings: map[string]string{"grid": "4"}},
		Area: vendor.JobModel{ID: "gpt-image-1-area", Upstream: "gpt-image-1",
			Settings: map[string]string{"area_threshold_mp": "1.2"}, Tiers: []string{"hd"}},
		SmallSize:         "1024x1024",
		LargeSize:         "1536x1024",
		FetchesReferences: true,
		Reject: &imagestest.Reject{Body: `{"prompt":"a cat","size":"999x999"}`, Status: 400,
			Message: "Invalid value: '999x999'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'."},
	}
}

func TestImagesConformance(t *testing.T) {
	imagestest.Run(t, imagesTarget(func(_ *testing.T, v vendor.Vendor) vendor.Vendor { return v }))
}

func TestImagesConformanceOverGRPC(t *testing.T) {
	imagestest.Run(t, imagesTarget(imagestest.OverGRPC))
}
