// Command tollgate-plugin-openai-compatible is the openai-compatible vendor
// plugin. The gateway starts it (hashicorp/go-plugin); it is not meant to be
// run by hand.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/openaicompat"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(openaicompat.New())
}
