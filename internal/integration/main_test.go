package integration

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testpg"
)

// TestMain records every chat call the tests make (the raw ones and the
// official SDKs', which all use http.DefaultTransport) so that each row's
// cost can be checked against what its upstream reported (cost_test.go).
// That transport drops a connection idle for clientIdle: see there.
func TestMain(m *testing.M) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = clientIdle
	http.DefaultTransport = recording{tr}
	os.Exit(testpg.Main(m)) // stops the PostgreSQL the tests shared, if one started
}

// clientIdle is how long the tests' client keeps a connection idle: half
// the shortest idle_timeout a gateway here runs with (2 s). A server
// closes a kept-alive connection at its idle timeout whatever the client
// is doing; a POST the client sent on it just then meets a reset, and
// HTTP/1.1 lets a client retry only an idempotent request. Real clients
// are spared this by the default idle_timeout (120 s) outlasting their
// pools' (Go's 90 s), as the tests' is here.
const clientIdle = time.Second
