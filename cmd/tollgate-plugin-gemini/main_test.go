package main

import (
	"net/http/httptest"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/conformance"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestBinary(t *testing.T) {
	vt.CheckBinary(t, vt.BinaryCase{Name: "gemini", Protocol: "gemini_native", Model: "gemini-2.5-flash",
		Path: "/v1beta/models/gemini-2.5-flash:generateContent", AuthHeader: "X-Goog-Api-Key", AuthValue: "key-1"})
}

// TestConformance runs the suite against the plugin process, over gRPC.
func TestConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	conformance.Run(t, conformance.Target{
		Name:      "gemini",
		Protocols: []string{"gemini_native"},
		New: func(t *testing.T) vendor.Vendor {
			up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-conformance"}).Handler())
			t.Cleanup(up.Close)
			return vt.StartBinary(t, "gemini", vendor.Config{Channels: []vendor.Channel{
				{Name: "main", BaseURL: up.URL, APIKey: "sk-conformance"}}})
		},
		Request: conformance.MarkerRequest,
	})
}
