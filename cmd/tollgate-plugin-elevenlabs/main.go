// Command tollgate-plugin-elevenlabs is the elevenlabs vendor plugin. The gateway starts
// it (hashicorp/go-plugin); it is not meant to be run by hand.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/elevenlabs"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(elevenlabs.New())
}
