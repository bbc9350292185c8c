// Package server is Tollgate's HTTP front: routes, the request id, and the
// handlers that feed calls into the pipeline or answer from the store.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/core/routes"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// MaxChatBody is the largest chat request body accepted (coding agents send
// long conversations).
const MaxChatBody = 32 << 20

// Server routes public requests.
type Server struct {
	cfg     *config.Config
	store   store.Store
	chain   *pipeline.Chain
	auth    *pipeline.Authenticator
	limits  *ratelimit.Account
	log     hclog.Logger
	now     func() time.Time
	mux     *routes.Mux
	usage   *usageCache
	vendors map[string]vendor.Vendor
}

// KeyHandler serves an endpoint for an authenticated key (logs, billing).
type KeyHandler func(w http.ResponseWriter, r *http.Request, key store.Key)

// Options are the server's dependencies.
type Options struct {
	Config *config.Config
	Store  store.Store
	Chain  *pipeline.Chain
	Auth   *pipeline.Authenticator
	Limits *ratelimit.Account // nil = no account limits
	Logger hclog.Logger
	Now    func() time.Time
	// Vendors are the running vendor plugins (count_tokens calls them).
	Vendors map[string]vendor.Vendor
	// Logs serves /v1/logs*, Billing /v1/dashboard/billing/*; both optional.
	Logs, Billing KeyHandler
	// Admin is mounted at /admin/v1/ when set.
	Admin http.Handler
}

// New builds the server and its routes.
func New(o Options) *Server {
	s := &Server{
		cfg: o.Config, store: o.Store, chain: o.Chain, auth: o.Auth, limits: o.Limits,
		log: o.Logger.Named("http"), now: o.Now, mux: routes.New(),
		usage: newUsageCache(o.Store, o.Now, time.Minute), vendors: o.Vendors,
	}
	chat := func(p protocol.ID) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.serveChat(w, r, p, "", false) }
	}
	m := s.mux
	m.HandleFunc("POST /v1/chat/completions", chat(protocol.OpenAIChat))
	m.HandleFunc("POST /v1/messages", chat(protocol.AnthropicMessages))
	m.HandleFunc("POST /v1/messages/count_tokens", s.serveCountTokens)
	m.HandleFunc("POST /v1/responses", chat(protocol.OpenAIResponses))
	m.HandleFunc("POST /v1beta/models/{call}", s.serveGemini)
	// The Gemini API serves v1 too, and @google/genai 3.x calls it by default.
	m.HandleFunc("POST /v1/models/{call}", s.serveGemini)
	m.HandleFunc("GET /v1/models", s.serveModels)
	m.HandleFunc("GET /v1/key/balance", s.serveBalance)
	m.HandleFunc("GET /v1/catalog", s.serveCatalog)
	m.HandleFunc("GET /api/v1/models/public", s.servePublicModels)
	m.HandleFunc("POST /v1/embeddings", s.serveEmbeddings)
	if o.Logs != nil {
		logs := s.keyOnly(o.Logs)
		m.HandleFunc("GET /v1/logs", logs)
		m.HandleFunc("GET /v1/logs/", logs)
	}
	if o.Billing != nil {
		m.HandleFunc("GET /v1/dashboard/billing/", s.withKey(o.Billing))
	}
	if o.Admin != nil {
		m.Handle("/admin/v1/", o.Admin)
	}
	m.HandleFunc("HEAD /{$}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "Tollgate is running. See /v1/models.\n")
	})
	return s
}

// Routes is the route table: docs/reference.md is tested against it.
func (s *Server) Routes() *routes.Mux { return s.mux }

// ServeHTTP gives every response its trace id, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		apierr.Write(w, protocolOfPath(r.URL.Path), apierr.Newf(apierr.NotFound, "no route for %s %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
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
		Protocol:   p,
		Billed:     true,
		Request:    r,
		W:          pipeline.NewResponseWriter(w),
		ModelID:    model,
		StreamPath: streamPath,
	}
	body, err := readBody(w, r, MaxChatBody)
	if err != nil {
		// The chain still runs: a known key gets its rejected row.
		c.BodyErr = err
	}
	c.Body = body
	s.chain.Run(r.Context(), c)
}

func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apierr.Error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	var buf []byte
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf = make([]byte, 0, r.ContentLength)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				e := apierr.Newf(apierr.InvalidRequest, "request body is larger than %d MB", limit>>20)
				e.Status = http.StatusRequestEntityTooLarge
				return nil, e
			}
			return nil, apierr.New(apierr.InvalidRequest, "could not read the request body")
		}
	}
}

// authenticate checks the key of a non-chat endpoint and counts the request
// against the account's limits. On failure the error is already written.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, forms pipeline.KeyForms, countLimits bool) (*store.Key, *store.Account, func(), bool) {
	return s.authenticateAs(w, r, forms, countLimits, protocol.OpenAIChat)
}

// authenticateAs is authenticate with errors in protocol p's shape.
func (s *Server) authenticateAs(w http.ResponseWriter, r *http.Request, forms pipeline.KeyForms, countLimits bool, p protocol.ID) (*store.Key, *store.Account, func(), bool) {
	k, acct, release, ok := s.authenticateQuietly(w, r, forms, countLimits, p)
	if ok {
		s.auth.Used(r.Context(), k)
	}
	return k, acct, release, ok
}

// authenticateQuietly authenticates without recording the key's use (the
// balance and catalog endpoints: spec).
func (s *Server) authenticateQuietly(w http.ResponseWriter, r *http.Request, forms pipeline.KeyForms, countLimits bool, p protocol.ID) (*store.Key, *store.Account, func(), bool) {
	k, acct, err := s.auth.Authenticate(r.Context(), r, forms)
	if err != nil {
		apierr.Write(w, p, apierr.As(err))
		return nil, nil, nil, false
	}
	release := func() {}
	if countLimits && s.limits != nil {
		rel, lerr := s.limits.Acquire(acct.ID, acct.RPM, acct.Concurrency)
		if lerr != nil {
			apierr.Write(w, p, lerr)
			return nil, nil, nil, false
		}
		release = rel
	}
	return k, acct, release, true
}

// withKey authenticates (counting account limits) before h.
func (s *Server) withKey(h KeyHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, _, release, ok := s.authenticate(w, r, pipeline.AllForms, true)
		if !ok {
			return
		}
		defer release()
		h(w, r, *k)
	}
}

// keyOnly authenticates without the account's inference limits (the logs
// API has its own).
func (s *Server) keyOnly(h KeyHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, _, _, ok := s.authenticate(w, r, pipeline.AllForms, false)
		if !ok {
			return
		}
		h(w, r, *k)
	}
}
