package vendorsim

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/anthropic"
	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/gemini"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The real vendor plugins pass the suite against the simulators: the
// markers travel in the prompt, the faults come back over HTTP.
func TestRealPluginsConformance(t *testing.T) {
	srv := httptest.NewServer(New(Options{APIKey: testKey}).Handler())
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		new       func() vendor.Vendor
		protocols []string
	}{
		{"openai", func() vendor.Vendor { return openai.New() }, []string{"openai_chat", "openai_responses"}},
		{"anthropic", func() vendor.Vendor { return anthropic.New() }, []string{"anthropic_messages"}},
		{"gemini", func() vendor.Vendor { return gemini.New() }, []string{"gemini_native"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conformance.Run(t, conformance.Target{
				Name: tc.name,
				New: func(t *testing.T) vendor.Vendor {
					v := tc.new()
					err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{
						Name: "main", BaseURL: srv.URL, APIKey: testKey, Protocols: tc.protocols,
					}}})
					if err != nil {
						t.Fatal(err)
					}
					return v
				},
				Protocols: tc.protocols,
				Request:   conformance.MarkerRequest,
			})
		})
	}
}
