package conformance_test

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/conformance/echo"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The echo vendor passes the suite in-process.
func TestEchoInProcess(t *testing.T) {
	conformance.Run(t, conformance.Target{
		Name: echo.Name,
		New: func(t *testing.T) vendor.Vendor {
			v := echo.New()
			if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main"}}}); err != nil {
				t.Fatal(err)
			}
			return v
		},
		Protocols: []string{"openai_chat", "anthropic_messages", "openai_responses", "gemini_native"},
		Request:   conformance.MarkerRequest,
	})
}
