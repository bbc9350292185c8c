package main

import (
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/lipsync/lipsynctest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// TestLipsyncConformance runs the lip-sync family's suite against the
// plugin process, through plugins/host as the gateway starts it.
func TestLipsyncConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	lipsynctest.Run(t, lipsynctest.Target{Target: familytest.Target{Name: "syncso",
		New: func(t *testing.T) vendor.Vendor {
			base := vendorsim.Serve(t, vendorsim.Options{APIKey: "sync-key"})
			return vt.StartBinary(t, "syncso", vendor.Config{AllowPrivateURLs: true, Channels: []vendor.Channel{
				{Name: "main", BaseURL: base, APIKey: "sync-key", Settings: map[string]string{"poll_after": "20ms"}}}})
		},
		Model: vendor.JobModel{ID: "dh-lipsync", Upstream: "lipsync-2", Settings: map[string]string{"max_duration": "10"}}}})
}
