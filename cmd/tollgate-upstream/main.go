// Command tollgate-upstream runs the vendor simulators (internal/vendorsim)
// on one port: OpenAI, Anthropic and Gemini chat APIs answered by the sim
// engine, for manual tests, the agent end-to-end runs and benchmarks.
//
//	tollgate-upstream --listen 127.0.0.1:9999 --api-key X [--fault SPEC] [--latency DUR] [--slow DUR]
//
// With --proxy-to URL it is instead the plainest fair reverse proxy there
// is: httputil.NewSingleHostReverseProxy, every read flushed, a keep-alive
// pool as large as the load's concurrency, and nothing else. It is the
// benchmark's reference: every figure of make bench is a ratio to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

func main() {
	os.Exit(exitCode(run(os.Args[1:], os.Stderr), os.Stderr))
}

// exitCode is 0 for a run that ended well or only printed its help
// (--help), else 1 with the error on log.
func exitCode(err error, log io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintln(log, "error:", err)
	return 1
}

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("tollgate-upstream", flag.ContinueOnError)
	fs.SetOutput(log)
	fs.Usage = func() {
		fmt.Fprintln(log, "tollgate-upstream runs the OpenAI, Anthropic and Gemini simulators on one port (tests, benchmarks).")
		fmt.Fprintln(log, "\nUsage: tollgate-upstream [flags]")
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:9999", "address to listen on")
	key := fs.String("api-key", "", "API key every call must carry (empty: any key)")
	fault := fs.String("fault", "", "default sim knobs, marker syntax without brackets (e.g. \"slow=5ms,chunks=20\")")
	latency := fs.Duration("latency", 0, "wait before each answer")
	slow := fs.Duration("slow", 0, "wait between stream events")
	proxyTo := fs.String("proxy-to", "", "be a bare reverse proxy to this URL instead (benchmark reference)")
	proxyConns := fs.Int("proxy-conns", 256, "with --proxy-to: idle upstream connections kept (at least the load's concurrency)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *proxyTo != "" {
		return proxy(*listen, *proxyTo, *proxyConns, log)
	}
	var k sim.Knobs
	if err := sim.ParseSpec(*fault, &k); err != nil {
		return err
	}
	if *latency > 0 {
		k.Latency = *latency
	}
	if *slow > 0 {
		k.Slow = *slow
	}
	srv := vendorsim.New(vendorsim.Options{APIKey: *key, Knobs: k})
	if err := srv.Start(*listen); err != nil {
		return err
	}
	fmt.Fprintf(log, "tollgate-upstream: serving OpenAI, Anthropic and Gemini chat APIs on %s\n", srv.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return srv.Close()
	}
	return nil
}

func proxy(listen, target string, conns int, log io.Writer) error {
	p, err := referenceProxy(target, conns)
	if err != nil {
		return err
	}
	h := declaredBodies(p)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "tollgate-upstream: a bare reverse proxy to %s on http://%s\n", target, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// referenceProxy is httputil's single-host reverse proxy to target with
// FlushInterval -1 (each read of the answer flushed, as a streaming proxy
// must) over the default transport, its idle pool raised to conns per host:
// with the default of 2, a loaded proxy reopens upstream connections and
// every ratio to it flatters the gateway.
func referenceProxy(target string, conns int) (*httputil.ReverseProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("--proxy-to %q: want an absolute URL", target)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(conns, 64)
	tr.MaxIdleConnsPerHost = max(conns, 64)
	p := httputil.NewSingleHostReverseProxy(u)
	p.Transport = tr
	p.FlushInterval = -1
	return p, nil
}

// declaredBodies hands the proxy each request body cut at its declared
// length, ending there by itself. Without it, a stream is cut now and
// then (golang/go#40747): once the answer's headers are written the server
// closes the inbound body, and the transport's check that the body held
// no more than declared (one more read after Content-Length bytes) then
// fails on the closed body and tears down the upstream connection
// mid-answer.
func declaredBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 0 {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(r.Body, r.ContentLength), r.Body}
		}
		next.ServeHTTP(w, r)
	})
}
