// Command tollgate-plugin-openai is the openai vendor plugin. The gateway starts
// it (hashicorp/go-plugin); it is not meant to be run by hand.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(openai.New())
}
