// Command tollgate-plugin-sim is the sim vendor plugin process.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(sim.New(vendor.NewLogger("sim")))
}
