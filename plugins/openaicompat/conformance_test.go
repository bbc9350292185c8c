package openaicompat_test

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/conformance"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openaicompat"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestConformance(t *testing.T) {
	v := openaicompat.New()
	conformance.Run(t, conformance.Target{
		Name:      "openai-compatible",
		Protocols: []string{"openai_chat", "openai_responses"},
		New: func(t *testing.T) vendor.Vendor {
			up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-conformance"}).Handler())
			t.Cleanup(up.Close)
			vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "sk-conformance"})
			return vendor.InProcess(v, nil) // as the gateway runs it in process
		},
		Request: conformance.MarkerRequest,
	})
}
