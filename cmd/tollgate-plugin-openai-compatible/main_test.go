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
	vt.CheckBinary(t, vt.BinaryCase{Name: "openai-compatible", Protocol: "openai_chat", Model: "llama3.1:8b",
		Path: "/v1/chat/completions", AuthHeader: "Authorization", AuthValue: "Bearer key-1"})
}

// TestConformance runs the suite against the plugin process, over gRPC.
func TestConformance(t *testing.T) {
	testkind.Short(t, "builds and runs the plugin binary")
	conformance.Run(t, conformance.Target{
		Name:      "openai-compatible",
		Protocols: []string{"openai_chat", "openai_responses"},
		New: func(t *testing.T) vendor.Vendor {
			up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-conformance"}).Handler())
			t.Cleanup(up.Close)
			return vt.StartBinary(t, "openai-compatible", vendor.Config{Channels: []vendor.Channel{
				{Name: "main", BaseURL: up.URL, APIKey: "sk-conformance"}}})
		},
		Request: conformance.MarkerRequest,
	})
}
