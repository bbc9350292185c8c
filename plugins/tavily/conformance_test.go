package tavily_test

import (
	"net/http/httptest"
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
	for _, tr := range []struct {
		name string
		wrap func(t *testing.T, v vendor.Vendor) vendor.Vendor
	}{
		{"in_process", func(_ *testing.T, v vendor.Vendor) vendor.Vendor { return v }},
		{"grpc", familytest.OverGRPC},
	} {
		t.Run(tr.name, func(t *testing.T) {
			searchtest.Run(t, searchtest.Target{Name: "tavily", Model: vendor.JobModel{ID: "web", Upstream: "basic"},
				New: func(t *testing.T) vendor.Vendor {
					up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "tvly-key"}).Handler())
					t.Cleanup(up.Close)
					v := tr.wrap(t, tavily.New())
					if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL,
						APIKey: "tvly-key"}}}); err != nil {
						t.Fatal(err)
					}
					return v
				}})
		})
	}
}
