// Package server is Tollgate's HTTP front: routes, the request id, and the
// handlers that feed calls into the pipeline or answer from the store.
package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/kbapi"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/routes"
	"github.com/tollgate-gw/tollgate/core/tasksapi"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// MaxChatBody is the largest chat request body accepted (coding agents send
// long conversations).
const MaxChatBody = 32 << 20

// Server routes public requests. Every route that takes a key runs
// through the pipeline's chains (chat, job or read): auth, limits, money,
// idempotency and the log row are written once, there.
type Server struct {
	cfg     *config.Config
	store   store.Store
	chains  *pipeline.Chains
	log     hclog.Logger
	now     func() time.Time
	mux     *routes.Mux
	usage   *usageCache
	vendors map[string]vendor.Vendor
	tasks   *tasksapi.API
	routes  []Route
	specs   map[string]*vendor.FamilySpec // the families served, by name
	bodies  *Bodies
}

// KeyHandler serves an endpoint for an authenticated key (logs, billing).
type KeyHandler func(w http.ResponseWriter, r *http.Request, key store.Key)

// Options are the server's dependencies.
type Options struct {
	Config *config.Config
	Store  store.Store
	Chains *pipeline.Chains
	Logger hclog.Logger
	Now    func() time.Time
	// Vendors are the running vendor plugins (count_tokens calls them).
	Vendors map[string]vendor.Vendor
	// Families are the endpoint families the plugins serve, with their
	// routes (from their Describe).
	Families []*vendor.FamilySpec
	// Logs serves /v1/logs*, Billing /v1/dashboard/billing/*; both optional.
	Logs, Billing KeyHandler
	// Admin is mounted at /admin/v1/ when set; Files at /files/; Console
	// (the web console, on the main listener) at /console/.
	Admin, Files, Console http.Handler
	// LinkBase is the base of the links to hosted files (files.BaseURL);
	// never taken from a request.
	LinkBase func() string
	// Knowledge are the knowledge base's REST routes and its MCP server.
	Knowledge []kbapi.Route
	// Webhook receives the payment processor's events at the config's
	// billing { webhook_path }: no key, the signature is the credential.
	Webhook http.Handler
	// Healthz and Readyz answer the probes, GET /healthz (the process
	// is alive) and GET /readyz (it can serve calls); no key. Optional.
	Healthz, Readyz http.Handler
	// Bodies is the gateway-wide budget of large request bodies; nil:
	// the server has its own, of server { max_body_memory }.
	Bodies *Bodies
}

// Route is one public route: how it is reached and which chain serves it
// ("" for the routes that take no key).
type Route struct {
	Method, Path string
	Kind         pipeline.Kind
	Family       string // for family routes: the families that declared it, comma-separated
}

// New builds the server and its routes.
func New(o Options) *Server {
	s := &Server{
		cfg: o.Config, store: o.Store, chains: o.Chains,
		log: o.Logger.Named("http"), now: o.Now, mux: routes.New(),
		usage: newUsageCache(o.Store, o.Now, time.Minute), vendors: o.Vendors,
		tasks: tasksapi.New(o.Store, o.Now, o.Logger), specs: map[string]*vendor.FamilySpec{}, bodies: o.Bodies,
	}
	if s.bodies == nil {
		s.bodies = NewBodies(o.Config.Server.MaxBodyMemoryOrDefault())
	}
	for _, sp := range o.Families {
		s.specs[sp.Name] = sp
	}
	chat := func(p protocol.ID) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.serveChat(w, r, p, "", false) }
	}
	s.handle(http.MethodPost, "/v1/chat/completions", pipeline.KindChat, chat(protocol.OpenAIChat))
	s.handle(http.MethodPost, "/v1/messages", pipeline.KindChat, chat(protocol.AnthropicMessages))
	s.handle(http.MethodPost, "/v1/messages/count_tokens", pipeline.KindRead,
		s.read(s.countTokens, readOpts{protocol: protocol.AnthropicMessages}))
	s.handle(http.MethodPost, "/v1/responses", pipeline.KindChat, chat(protocol.OpenAIResponses))
	s.handle(http.MethodPost, "/v1beta/models/{call}", pipeline.KindChat, s.serveGemini)
	// The Gemini API serves v1 too, and @google/genai 3.x calls it by default.
	s.handle(http.MethodPost, "/v1/models/{call}", pipeline.KindChat, s.serveGemini)
	s.handle(http.MethodGet, "/v1/models", pipeline.KindRead, s.read(s.models, readOpts{forms: pipeline.HeaderForms}))
	s.handle(http.MethodGet, "/v1/key/balance", pipeline.KindRead, s.read(s.balance, readOpts{quiet: true}))
	s.handle(http.MethodGet, "/v1/catalog", pipeline.KindRead, s.read(s.catalog, readOpts{quiet: true}))
	s.handle(http.MethodGet, "/api/v1/models/public", "", s.servePublicModels)
	s.handle(http.MethodPost, "/v1/embeddings", pipeline.KindRead, s.read(s.embeddings, readOpts{}))
	if o.Logs != nil {
		// The logs API has its own rate limit, not the account's.
		logs := s.read(keyHandler(o.Logs), readOpts{uncounted: true})
		s.handle(http.MethodGet, "/v1/logs", pipeline.KindRead, logs)
		s.handle(http.MethodGet, "/v1/logs/", pipeline.KindRead, logs)
	}
	if o.Billing != nil {
		s.handle(http.MethodGet, "/v1/dashboard/billing/", pipeline.KindRead, s.read(keyHandler(o.Billing), readOpts{}))
	}
	for _, rt := range o.Knowledge {
		// Knowledge-base REST and MCP accept Bearer and x-api-key
		// (spec: Authentication rule 4); free, no balance needed.
		h := accountHandler(rt.Serve)
		if rt.MaxBody > 0 {
			h = s.withBody(h, rt.MaxBody)
		}
		s.handle(rt.Method, rt.Path, pipeline.KindRead, s.read(h, readOpts{forms: pipeline.HeaderForms}))
	}
	s.families(o.Families, o.LinkBase)
	if o.Files != nil {
		s.handle(http.MethodGet, "/files/{id}", "", o.Files.ServeHTTP)
		s.handle(http.MethodHead, "/files/{id}", "", o.Files.ServeHTTP)
	}
	if o.Admin != nil {
		s.mux.Handle("/admin/v1/", o.Admin)
	}
	home := "Tollgate is running. See /v1/models.\n"
	if o.Console != nil {
		s.mux.Handle("/console/", o.Console)
		home = "Tollgate is running. See /v1/models; people sign in at /console/.\n"
	}
	if o.Webhook != nil {
		path := o.Config.Billing.WebhookPath
		if path == "" {
			path = config.DefaultWebhookPath
		}
		s.handle(http.MethodPost, path, "", o.Webhook.ServeHTTP)
	}
	if o.Healthz != nil {
		s.handle(http.MethodGet, "/healthz", "", o.Healthz.ServeHTTP)
	}
	if o.Readyz != nil {
		s.handle(http.MethodGet, "/readyz", "", o.Readyz.ServeHTTP)
	}
	s.handle(http.MethodHead, "/{$}", "", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s.handle(http.MethodGet, "/{$}", "", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, home)
	})
	return s
}

// handle registers a route and records it in the route table.
func (s *Server) handle(method, path string, kind pipeline.Kind, h http.HandlerFunc) {
	s.mux.HandleFunc(method+" "+path, h)
	s.routes = append(s.routes, Route{Method: method, Path: path, Kind: kind})
}

// Table is the route table (the admin API aside), in registration order,
// with the chain each route runs.
func (s *Server) Table() []Route { return slices.Clone(s.routes) }

// Routes is the mux: docs/reference.md is tested against its patterns.
func (s *Server) Routes() *routes.Mux { return s.mux }

// readOpts say how a read route authenticates.
type readOpts struct {
	protocol  protocol.ID       // the error shape; completions-style when empty
	forms     pipeline.KeyForms // the key forms it accepts
	quiet     bool              // leaves the key's last use alone
	uncounted bool              // outside the account's rpm and concurrency
}

// readHandler answers a read call; an error it returns is rendered in the
// call's protocol shape.
type readHandler func(ctx context.Context, c *pipeline.Call) error

// read runs a read route through the read chain (authentication and the
// account's limits), then h.
func (s *Server) read(h readHandler, o readOpts) http.HandlerFunc {
	p := o.protocol
	if p == "" {
		p = protocol.OpenAIChat
	}
	return func(w http.ResponseWriter, r *http.Request) {
		c := &pipeline.Call{
			ID: requestID(r), Start: s.now(), Kind: pipeline.KindRead, Protocol: p, Request: r, Pattern: r.Pattern,
			Forms: o.forms, Quiet: o.quiet, Uncounted: o.uncounted,
			Handler: h,
		}
		c.W = s.writer(c, w)
		s.chains.Run(r.Context(), c)
	}
}

// keyHandler adapts a handler that writes its own answer.
func keyHandler(h KeyHandler) readHandler {
	return func(_ context.Context, c *pipeline.Call) error {
		h(c.W, c.Request, *c.Key)
		return nil
	}
}

// withBody reads a read route's body as the chat routes do (refused by
// its length, within the body timeout, in the caller's error shape)
// before h, which then reads it from memory.
func (s *Server) withBody(h readHandler, limit int64) readHandler {
	return func(ctx context.Context, c *pipeline.Call) error {
		b, err := s.readBody(c.W, c.Request, limit)
		if err != nil {
			return err
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(b))
		return h(ctx, c)
	}
}

// accountHandler adapts a handler of a service below the pipeline that
// needs only the authenticated account.
func accountHandler(h kbapi.Handler) readHandler {
	return func(ctx context.Context, c *pipeline.Call) error {
		return h(ctx, c.W, c.Request, c.Account.ID)
	}
}

// ServeHTTP gives every response its trace id, then routes. A write
// deadline left by the call before on the connection is lifted: each call
// sets its own. A body is read within the body timeout, by whichever
// handler reads it after checking the key.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w, end := guardBody(w, r, s.cfg.Server.BodyTimeoutOrDefault())
	defer end()
	id := NewRequestID()
	h := w.Header()
	h.Set("x-gateway-trace", id)
	h.Set("x-request-id", id)
	r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
	if _, pattern := s.mux.Handler(r); pattern == "" {
		if allowed := s.allowedMethods(r); allowed != "" {
			e := apierr.Newf(apierr.InvalidRequest, "method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allowed)
			e.Status = http.StatusMethodNotAllowed
			apierr.Write(w, protocolOfPath(r.URL.Path), e.WithHeader("Allow", allowed))
			return
		}
		msg := "no route for " + r.Method + " " + r.URL.Path
		if r.URL.Path == "/metrics" {
			msg += "; " + s.metricsAt()
		}
		apierr.Write(w, protocolOfPath(r.URL.Path), apierr.New(apierr.NotFound, msg))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// metricsAt says where /metrics is: never on the API's listener, on its
// own when it is on.
func (s *Server) metricsAt() string {
	if a := s.cfg.Server.MetricsListen; a != "" {
		if _, port, _ := net.SplitHostPort(a); port == "0" {
			return "metrics are served on their own listener, at the address the start-up banner names"
		}
		return "metrics are served on their own listener: GET http://" + a + "/metrics"
	}
	return "metrics are off; serve them on a listener of their own with tollgate serve --metrics-listen 127.0.0.1:9090 (or server { metrics_listen })"
}

// allowedMethods lists the methods that do have a route for r's path.
func (s *Server) allowedMethods(r *http.Request) string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "" && !strings.HasSuffix(pattern, "/{$}") {
			allowed = append(allowed, m)
		}
	}
	return strings.Join(allowed, ", ")
}

type requestIDKey struct{}

func requestID(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey{}).(string)
	return id
}

// NewRequestID returns a fresh request id.
func NewRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

func protocolOfPath(path string) protocol.ID {
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		return protocol.AnthropicMessages
	case strings.HasPrefix(path, "/v1beta/"), strings.HasPrefix(path, "/v1/models/") && strings.Contains(path, ":"):
		return protocol.GeminiNative
	}
	return protocol.OpenAIChat
}

// serveGemini splits /v1beta/models/{model}:{method}.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	call := r.PathValue("call")
	i := strings.LastIndexByte(call, ':')
	if i <= 0 {
		apierr.Write(w, protocol.GeminiNative, apierr.Newf(apierr.NotFound, "no route for POST %s: want models/{model}:generateContent or :streamGenerateContent", r.URL.Path))
		return
	}
	model, method := call[:i], call[i+1:]
	switch method {
	case "generateContent":
		s.serveChat(w, r, protocol.GeminiNative, model, false)
	case "streamGenerateContent":
		s.serveChat(w, r, protocol.GeminiNative, model, true)
	default:
		apierr.Write(w, protocol.GeminiNative, apierr.Newf(apierr.NotFound, "unknown method %q: want generateContent or streamGenerateContent", method))
	}
}

// serveChat runs a chat call through the pipeline.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, p protocol.ID, model string, streamPath bool) {
	c := &pipeline.Call{
		ID:         requestID(r),
		Start:      s.now(),
		Kind:       pipeline.KindChat,
		Protocol:   p,
		Billed:     true,
		Request:    r,
		Pattern:    r.Pattern,
		ModelID:    model,
		StreamPath: streamPath,
	}
	c.W = s.writer(c, w)
	s.runWithBody(w, r, c, MaxChatBody)
}

// writer wraps w for c's chain, with the write timeout, in c's storage.
func (s *Server) writer(c *pipeline.Call, w http.ResponseWriter) *pipeline.ResponseWriter {
	return c.Writer(w).WithWriteTimeout(s.cfg.Server.WriteTimeoutOrDefault())
}

// runWithBody runs a call whose body the chain reads once the key is
// known; a body over limit by its Content-Length is refused unread. The
// chain still runs then: a known key gets its rejected row.
func (s *Server) runWithBody(w http.ResponseWriter, r *http.Request, c *pipeline.Call, limit int64) {
	b := &body{w: w, r: r, limit: limit, bodies: s.bodies, timeout: s.cfg.Server.BodyTimeoutOrDefault()}
	defer b.done()
	if err := b.precheck(); err != nil {
		c.BodyErr = err
	} else {
		c.ReadBody = b.Read
	}
	s.chains.Run(r.Context(), c)
}

// readBody reads a body in a handler that runs after authentication
// (count_tokens), within the body timeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apierr.Error) {
	b := &body{w: w, r: r, limit: limit, timeout: s.cfg.Server.BodyTimeoutOrDefault()}
	if err := b.precheck(); err != nil {
		return nil, err
	}
	out, err := b.Read()
	if err != nil {
		return nil, apierr.As(err)
	}
	return out, nil
}
