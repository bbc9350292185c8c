package sim_test

import (
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The sim vendor passes the suite every vendor plugin passes.
func TestConformance(t *testing.T) {
	var protos []string
	for _, p := range protocol.All {
		protos = append(protos, string(p))
	}
	conformance.Run(t, conformance.Target{
		Name: "sim",
		New: func(t *testing.T) vendor.Vendor {
			v := sim.New(nil)
			if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main"}}}); err != nil {
				t.Fatal(err)
			}
			return vendor.InProcess(v, nil) // as the gateway runs it in process
		},
		Protocols: protos,
		Request:   conformance.MarkerRequest,
	})
}
