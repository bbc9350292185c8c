package integration

import (
	"net/http"
	"os"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testpg"
)

// TestMain records every chat call the tests make (the raw ones and the
// official SDKs', which all use http.DefaultTransport) so that each row's
// cost can be checked against what its upstream reported (cost_test.go).
func TestMain(m *testing.M) {
	http.DefaultTransport = recording{http.DefaultTransport}
	os.Exit(testpg.Main(m)) // stops the PostgreSQL the tests shared, if one started
}
