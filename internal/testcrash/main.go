// Command testcrash is a test fixture, not a vendor: it serves the echo vendor
// (plugins/conformance/echo) as a plugin process. Tests of the plugin host
// use it: it honours the conformance fault markers, reports its environment
// on [env] and exits mid-call on [crash]. It lives under internal/ so that
// `go build ./cmd/...` puts only real plugins beside the gateway.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/conformance/echo"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() {
	vendor.Serve(echo.New())
}
