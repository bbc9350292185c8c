package sim_test

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// imagesTarget is the sim as an image plugin, built by wrap (in process,
// or behind the gRPC transport).
func imagesTarget(wrap func(t *testing.T, v vendor.Vendor) vendor.Vendor) imagestest.Target {
	return imagestest.Target{
		Name: "sim",
		New: func(t *testing.T) vendor.Vendor {
			v := wrap(t, sim.New(nil))
			if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main"}}, AllowPrivateURLs: true}); err != nil {
				t.Fatal(err)
			}
			return v
		},
		Plain:     vendor.JobModel{ID: "sim-image", Upstream: "sim-image"},
		Grid:      vendor.JobModel{ID: "sim-image-grid", Upstream: "sim-image-grid", Settings: map[string]string{"grid": "4"}},
		Area:      vendor.JobModel{ID: "sim-image-area", Upstream: "sim-image-area", Settings: map[string]string{"area_threshold_mp": "2.61"}, Tiers: []string{"hd"}},
		GridRuns:  true,
		SmallSize: "1024x1024",
		LargeSize: "2048x2048",
		Reject: &imagestest.Reject{Body: `{"prompt":"a cat","size":"10x10"}`, Status: 400,
			Message: "Invalid size '10x10'. Each side must be between 64 and 4096 pixels."},
	}
}

func TestImagesConformance(t *testing.T) {
	imagestest.Run(t, imagesTarget(func(_ *testing.T, v vendor.Vendor) vendor.Vendor { return v }))
}

func TestImagesConformanceOverGRPC(t *testing.T) {
	imagestest.Run(t, imagesTarget(imagestest.OverGRPC))
}
