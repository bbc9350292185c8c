// Command tollgate-upstream runs the vendor simulators (internal/vendorsim)
// on one port: OpenAI, Anthropic and Gemini chat APIs answered by the sim
// engine, for manual tests, the agent end-to-end runs and benchmarks.
//
//	tollgate-upstream --listen 127.0.0.1:9999 --api-key X [--fault SPEC] [--latency DUR] [--slow DUR]
//
// With --proxy-to URL it is instead a bare reverse proxy to URL (net/http
// server and client, keep-alive pool, each read of the answer flushed): the
// benchmark's reference for what any Go proxy costs, with no auth, money,
// logs or plugin.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *proxyTo != "" {
		return proxy(*listen, *proxyTo, log)
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

func proxy(listen, target string, log io.Writer) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
	// A request forwarded as it came, its answer relayed read by read,
	// each read flushed: what a minimal streaming proxy does. The body is
	// read first: handed to the client as the server's request body, the
	// transport now and then closed the upstream connection mid-answer.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for _, k := range []string{"Authorization", "Content-Type", "X-Api-Key", "Anthropic-Version"} {
			if v := r.Header.Get(k); v != "" {
				out.Header.Set(k, v)
			}
		}
		resp, err := hc.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for _, k := range []string{"Content-Type", "Cache-Control", "Content-Length"} {
			if v := resp.Header.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		f, _ := w.(http.Flusher)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				if f != nil {
					f.Flush()
				}
			}
			if err != nil {
				return
			}
		}
	})
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
