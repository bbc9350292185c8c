package tavily_test

import (
	"testing"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/search/searchtest"
	"github.com/tollgate-gw/tollgate/plugins/tavily"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The tavily plugin passes the search suite against Tavily's API as
// internal/vendorsim serves it, in process and over gRPC.
func TestConformance(t *testing.T) {
	familytest.Transports(t, func(t *testing.T, wrap familytest.Wrap) {
		searchtest.Run(t, searchtest.Target{Name: "tavily", Model: vendor.JobModel{ID: "web", Upstream: "basic"},
			New: func(t *testing.T) vendor.Vendor {
				v := wrap(t, tavily.New())
				if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main",
					BaseURL: vendorsim.Serve(t, vendorsim.Options{APIKey: "tvly-key"}), APIKey: "tvly-key"}}}); err != nil {
					t.Fatal(err)
				}
				return v
			}})
	})
}
