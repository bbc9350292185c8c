// Command tollgate-plugin-anthropic is the anthropic vendor plugin. The gateway starts
// it (hashicorp/go-plugin); it is not meant to be run by hand.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/anthropic"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(anthropic.New())
}
