// Command tollgate-plugin-testcrash serves the echo vendor
// (plugins/conformance/echo) as a plugin process. Tests of the plugin host
// use it: it honours the conformance fault markers, reports its environment
// on [env] and exits mid-call on [crash].
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/conformance/echo"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(echo.New())
}
