package main

import (
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// TestImagesConformance runs the image family's suite against the plugin
// process, through plugins/host as the gateway starts it.
func TestImagesConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	imagestest.Run(t, imagestest.Target{
		Name: "sim",
		New: func(t *testing.T) vendor.Vendor {
			return vt.StartBinary(t, "sim", vendor.Config{Channels: []vendor.Channel{{Name: "main"}}, AllowPrivateURLs: true})
		},
		Plain:     vendor.JobModel{ID: "sim-image", Upstream: "sim-image"},
		Grid:      vendor.JobModel{ID: "sim-image-grid", Upstream: "sim-image-grid", Settings: map[string]string{"grid": "4"}},
		Area:      vendor.JobModel{ID: "sim-image-area", Upstream: "sim-image-area", Settings: map[string]string{"area_threshold_mp": "2.61"}, Tiers: []string{"hd"}},
		GridRuns:  true,
		SmallSize: "1024x1024",
		LargeSize: "2048x2048",
	})
}
