package suno_test

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/music/musictest"
	"github.com/tollgate-gw/tollgate/plugins/suno"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The suno plugin passes the music suite against the Suno-style API
// internal/vendorsim serves, in process and over gRPC.
func TestConformance(t *testing.T) {
	for _, tr := range []struct {
		name string
		wrap func(t *testing.T, v vendor.Vendor) vendor.Vendor
	}{
		{"in_process", func(_ *testing.T, v vendor.Vendor) vendor.Vendor { return v }},
		{"grpc", familytest.OverGRPC},
	} {
		t.Run(tr.name, func(t *testing.T) {
			musictest.Run(t, musictest.Target{Name: "suno", Model: vendor.JobModel{ID: "suno", Upstream: "V4_5ALL"},
				New: func(t *testing.T) vendor.Vendor {
					up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-suno"}).Handler())
					t.Cleanup(up.Close)
					v := tr.wrap(t, suno.New())
					if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL,
						APIKey: "sk-suno", Settings: map[string]string{suno.SettingPollInterval: "20ms"}}}}); err != nil {
						t.Fatal(err)
					}
					return v
				}})
		})
	}
}
