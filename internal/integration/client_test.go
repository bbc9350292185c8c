package integration

import "net/http"

// httpClient is the client of the tests' raw calls.
var httpClient = http.DefaultClient
