package main

import (
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/search/searchtest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// TestConformance runs the search suite against the plugin process,
// through plugins/host as the gateway starts it.
func TestConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	searchtest.Run(t, searchtest.Target{Name: "tavily", Model: vendor.JobModel{ID: "web", Upstream: "basic"},
		New: func(t *testing.T) vendor.Vendor {
			upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "tvly-key"})
			return vt.StartBinary(t, "tavily", vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: upURL, APIKey: "tvly-key"}}})
		}})
}
