package suno_test

import (
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
	familytest.Transports(t, func(t *testing.T, wrap familytest.Wrap) {
		musictest.Run(t, musictest.Target{Name: "suno", Model: vendor.JobModel{ID: "suno", Upstream: "V4_5ALL"},
			New: func(t *testing.T) vendor.Vendor {
				v := wrap(t, suno.New())
				if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main",
					BaseURL: vendorsim.Serve(t, vendorsim.Options{APIKey: "sk-suno"}), APIKey: "sk-suno",
					Settings: map[string]string{suno.SettingPollInterval: "20ms"}}}}); err != nil {
					t.Fatal(err)
				}
				return v
			}})
	})
}
