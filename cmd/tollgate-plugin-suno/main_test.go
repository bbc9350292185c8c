package main

import (
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/music/musictest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// TestConformance runs the music suite against the plugin process,
// through plugins/host as the gateway starts it.
func TestConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	musictest.Run(t, musictest.Target{Name: "suno", Model: vendor.JobModel{ID: "suno", Upstream: "V4_5ALL"},
		New: func(t *testing.T) vendor.Vendor {
			upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "sk-suno"})
			return vt.StartBinary(t, "suno", vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: upURL,
				APIKey: "sk-suno", Settings: map[string]string{"poll_interval": "20ms"}}}})
		}})
}
