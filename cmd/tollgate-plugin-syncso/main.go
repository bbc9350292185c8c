// Command tollgate-plugin-syncso is the syncso vendor plugin (a
// sync.so-style lip-sync API), started by the gateway.
package main

import (
	"github.com/tollgate-gw/tollgate/plugins/syncso"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func main() { vendor.Serve(syncso.New()) }
