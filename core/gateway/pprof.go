package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/hashicorp/go-hclog"
)

// servePprof serves net/http/pprof on its own loopback address (set by
// TOLLGATE_PPROF_ADDR) so `make bench` can profile the gateway under load.
func servePprof(addr string, log hclog.Logger) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !(host == "127.0.0.1" || host == "localhost" || host == "::1") {
		return nil, fmt.Errorf("TOLLGATE_PPROF_ADDR must be a loopback address, got %q", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	log.Info("pprof serving", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}
