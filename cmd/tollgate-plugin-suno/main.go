// Command tollgate-plugin-suno is the suno vendor plugin. The gateway starts
// it (hashicorp/go-plugin); it is not meant to be run by hand.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/suno"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(suno.New())
}
