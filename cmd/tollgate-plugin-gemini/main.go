// Command tollgate-plugin-gemini is the gemini vendor plugin. The gateway starts
// it (hashicorp/go-plugin); it is not meant to be run by hand.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/gemini"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(gemini.New())
}
