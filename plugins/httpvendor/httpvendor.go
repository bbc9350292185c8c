package httpvendor

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Version is the version the shipped vendor plugins report.
const Version = "0.1.0"

// Body caps. An error body beyond MaxErrorBody is cut there (it is only
// shown to a person); a success body beyond MaxBody fails the call.
const (
	MaxErrorBody = 1 << 20
	MaxBody      = 64 << 20
)

// Route is one configured channel as its vendor sees it.
type Route interface {
	// Build returns the upstream URL for req and adds the vendor's auth,
	// version and forwarded headers to h (canonical names). An error means
	// the channel cannot serve the request (a config failure).
	Build(req *vendor.ChatRequest, h http.Header) (string, error)
}

// Spec is what a vendor adds to the shared machinery.
type Spec struct {
	Description vendor.Description
	// Prepare checks one channel at Configure time and returns its Route.
	Prepare func(ch vendor.Channel) (Route, error)
	// Settings lists the plugin-level settings the vendor takes; others are
	// refused at Configure.
	Settings []string
}

// Vendor is a vendor.Vendor speaking HTTP to its channels.
type Vendor struct {
	spec   Spec
	hc     *http.Client
	ua     []string
	routes atomic.Pointer[map[string]Route]

	// Fetching client URLs (fetch.go): with and without private targets.
	fetchPublic, fetchAny *http.Client
	allowPrivate          atomic.Bool
	maxEvent              atomic.Int64 // bytes an upstream SSE event may hold
}

// timingNone names no timeout in classify's messages.
var timingNone vendor.ChatRequest

// New returns a vendor with its own pooled client and no channels yet.
func New(spec Spec) *Vendor {
	v := &Vendor{
		spec:        spec,
		hc:          NewClient(NewTransport()),
		ua:          []string{"tollgate-plugin-" + spec.Description.Name + "/" + spec.Description.Version},
		fetchPublic: newFetchClient(false),
		fetchAny:    newFetchClient(true),
	}
	v.routes.Store(&map[string]Route{})
	return v
}

// NewTransport is the pooled transport of one plugin: keep-alive with many
// idle connections per host (every call of a plugin goes to a handful of
// hosts), HTTP/2 where the upstream offers it over TLS. Compression is off:
// an SSE stream must not wait on a compressor, and decompressing small
// JSON bodies costs more CPU than the bytes it saves.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// NewClient is the client of vendor calls. It never follows a redirect: a
// channel's base URL is the operator's, and a 3xx from it is an upstream
// error (RedirectFailure), so the channel's key and the call's body never
// go to another host.
func NewClient(t http.RoundTripper) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// RedirectFailure is the failure of a vendor call answered with a 3xx.
func RedirectFailure(status int) *vendor.Failure {
	return &vendor.Failure{Kind: vendor.FailureBroken,
		Message: "the upstream answered with a redirect (HTTP " + strconv.Itoa(status) + "), which vendor calls never follow"}
}

// Describe reports the vendor's description.
func (v *Vendor) Describe(context.Context) (vendor.Description, error) {
	return v.spec.Description, nil
}

// Configure replaces the channels. A bad channel fails the whole config and
// leaves the previous one in place.
func (v *Vendor) Configure(_ context.Context, cfg vendor.Config) error {
	for k := range cfg.Settings {
		known := false
		for _, s := range v.spec.Settings {
			known = known || s == k
		}
		if !known {
			return &vendor.ConfigError{Field: "settings", Message: fmt.Sprintf("%s: unknown plugin setting %q", v.spec.Description.Name, k)}
		}
	}
	routes := make(map[string]Route, len(cfg.Channels))
	for _, ch := range cfg.Channels {
		if ch.Name == "" {
			return fmt.Errorf("%s: a channel has no name", v.spec.Description.Name)
		}
		if _, dup := routes[ch.Name]; dup {
			return fmt.Errorf("%s: channel %q is configured twice", v.spec.Description.Name, ch.Name)
		}
		r, err := v.spec.Prepare(ch)
		if err != nil {
			return fmt.Errorf("%s: %w", v.spec.Description.Name, err)
		}
		routes[ch.Name] = r
	}
	v.routes.Store(&routes)
	v.allowPrivate.Store(cfg.AllowPrivateURLs)
	v.maxEvent.Store(cmp.Or(cfg.MaxEventBytes, sse.DefaultMaxEvent))
	return nil
}

// AllowPrivateURLs reports Config.AllowPrivateURLs: the links a client
// hands over may reach private addresses (the family rules check them).
func (v *Vendor) AllowPrivateURLs() bool { return v.allowPrivate.Load() }

// CloseIdleConnections closes the pool's idle connections.
func (v *Vendor) CloseIdleConnections() { v.hc.CloseIdleConnections() }

// Shared header values; http.Header values are only read by the transport.
var (
	ctJSON     = []string{"application/json"}
	acceptSSE  = []string{"text/event-stream"}
	acceptJSON = []string{"application/json"}
	identity   = []string{"identity"}
)

func (v *Vendor) newRequest(ctx context.Context, req *vendor.ChatRequest, stream bool) (*http.Request, error) {
	r, ok := (*v.routes.Load())[req.Channel]
	if !ok {
		return nil, configFailure("unknown channel %q", req.Channel)
	}
	h := make(http.Header, 8)
	h["Content-Type"] = ctJSON
	if stream {
		h["Accept"] = acceptSSE
	} else {
		h["Accept"] = acceptJSON
	}
	h["User-Agent"] = v.ua
	h["Accept-Encoding"] = identity // compressed answers are not asked for (decode.go)
	forwardTrace(h, req.Headers)
	target, err := r.Build(req, h)
	if err != nil {
		return nil, configFailure("channel %q: %v", req.Channel, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(req.Body))
	if err != nil {
		return nil, configFailure("channel %q: %v", req.Channel, err)
	}
	hr.Header = h
	return hr, nil
}

// forwardTrace passes the W3C trace context the gateway sent (its span of
// this upstream attempt) on to the upstream, so the upstream's own spans
// join the gateway's trace.
func forwardTrace(h http.Header, from map[string]string) {
	if tp := from["traceparent"]; tp != "" && printable(tp) {
		h["Traceparent"] = []string{tp}
		if ts := from["tracestate"]; ts != "" && printable(ts) {
			h["Tracestate"] = []string{ts}
		}
	}
}

// printable reports whether s can go in a header value as it is.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Chat makes one non-streaming call.
func (v *Vendor) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	hr, err := v.newRequest(ctx, req, false)
	if err != nil {
		return nil, err
	}
	resp, err := v.hc.Do(hr)
	if err != nil {
		return nil, classify(ctx, err, req)
	}
	defer resp.Body.Close()
	if redirect(resp.StatusCode) {
		return nil, RedirectFailure(resp.StatusCode)
	}
	return answer(ctx, resp, MaxBody, req)
}

func redirect(status int) bool { return status >= 300 && status <= 399 }

// answer reads a non-streaming answer: a 2xx body up to limit, another
// status's error body up to MaxErrorBody (cut there). timing names the
// call's timeouts in a failure's message.
func answer(ctx context.Context, resp *http.Response, limit int64, timing *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	out := &vendor.ChatResponse{Status: resp.StatusCode, Headers: selectHeaders(resp.Header)}
	if f := decode(resp); f != nil {
		return nil, f
	}
	var err error
	if ok2xx(resp.StatusCode) {
		out.Body, err = readBody(resp, limit, false)
	} else {
		out.Body, err = readBody(resp, MaxErrorBody, true)
	}
	if err != nil {
		var f *vendor.Failure
		if errors.As(err, &f) {
			return nil, f
		}
		return nil, classify(ctx, err, timing)
	}
	return out, nil
}

// ChatStream makes one streaming call: the sink gets the head, then each
// upstream event as it arrives. The stream ending at EOF is a success even
// without the protocol's terminator: the gateway's codec judges completeness.
func (v *Vendor) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	hr, err := v.newRequest(ctx, req, true)
	if err != nil {
		return err
	}
	// The idle timer runs while waiting on the upstream (for its head, then
	// for each event), not while the sink is busy. Its firing cancels ctx,
	// which aborts the request or the body read.
	var idle *time.Timer
	if req.IdleTimeout > 0 {
		idle = time.AfterFunc(req.IdleTimeout, func() { cancelCause(errIdle) })
		defer idle.Stop()
	}
	resp, err := v.hc.Do(hr)
	if err != nil {
		return classify(ctx, err, req)
	}
	defer resp.Body.Close()
	if redirect(resp.StatusCode) {
		return RedirectFailure(resp.StatusCode)
	}
	if f := decode(resp); f != nil {
		return f
	}
	head := vendor.Head{Status: resp.StatusCode, Headers: selectHeaders(resp.Header)}
	if !ok2xx(resp.StatusCode) {
		if head.Body, err = readBody(resp, MaxErrorBody, true); err != nil {
			return classify(ctx, err, req)
		}
		if idle != nil {
			idle.Stop()
		}
		if err := sink.Head(head); err != nil {
			return stopped(err)
		}
		return nil
	}
	if idle != nil {
		idle.Stop()
	}
	if err := sink.Head(head); err != nil {
		return stopped(err)
	}
	if idle != nil {
		idle.Reset(req.IdleTimeout)
	}
	br := bufPool.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() {
		br.Reset(nil)
		bufPool.Put(br)
	}()
	rd := sse.NewReader(br) // takes br as is: it is already big enough
	rd.SetMaxEvent(int(cmp.Or(v.maxEvent.Load(), sse.DefaultMaxEvent)))
	// Events that arrived together go to the sink together (one frame to
	// the host, one flush to the client); none waits for a later read.
	batch := make([]vendor.Event, 0, 8)
	for {
		ev, err := rd.Next()
		if err != nil {
			if serr := vendor.SendEvents(sink, batch); serr != nil {
				return stopped(serr)
			}
			if err == io.EOF {
				return nil
			}
			return classify(ctx, err, req)
		}
		batch = append(batch, vendor.Event{Name: ev.Name, Data: ev.Data})
		if rd.Ready() {
			continue
		}
		if idle != nil {
			idle.Stop()
		}
		if err := vendor.SendEvents(sink, batch); err != nil {
			return stopped(err)
		}
		clear(batch)
		batch = batch[:0]
		if ctx.Err() != nil {
			return classify(ctx, ctx.Err(), req)
		}
		if idle != nil {
			idle.Reset(req.IdleTimeout)
		}
	}
}

// sseBufSize matches core/sse's own reader size, so sse.NewReader reuses
// the pooled reader instead of allocating one per stream.
const sseBufSize = 32 << 10

var bufPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, sseBufSize) }}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads a whole body: into an exact-size slice when the length is
// known, else through a pooled buffer. Past limit it cuts (truncate) or
// fails.
func readBody(resp *http.Response, limit int64, truncate bool) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= limit {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 4<<20 {
			buf.Reset()
			bodyPool.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		if !truncate {
			return nil, &vendor.Failure{Kind: vendor.FailureBroken,
				Message: fmt.Sprintf("the upstream answer is larger than %d bytes", limit)}
		}
		buf.Truncate(int(limit))
	}
	return bytes.Clone(buf.Bytes()), nil
}

func ok2xx(status int) bool { return status >= 200 && status <= 299 }

// selectHeaders keeps the upstream headers the gateway may act on. Rate
// limit headers and upstream request ids are left out on purpose: the
// gateway must not leak them to its clients.
func selectHeaders(h http.Header) map[string]string {
	ct, ra := h["Content-Type"], h["Retry-After"]
	if len(ct) == 0 && len(ra) == 0 {
		return nil
	}
	out := make(map[string]string, 2)
	if len(ct) > 0 {
		out["content-type"] = ct[0]
	}
	if len(ra) > 0 {
		out["retry-after"] = ra[0]
	}
	return out
}

var _ vendor.Vendor = (*Vendor)(nil)
