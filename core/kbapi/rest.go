package kbapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/kb"
)

// Handler answers a knowledge-base route for an authenticated account.
// The error it returns is an *apierr.Error, for the caller to render in
// the completions-style shape; nil means it wrote the answer.
type Handler func(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error

// Route is one public route of the knowledge base. Every one takes a key
// (Bearer or x-api-key), bills nothing and needs no balance.
type Route struct {
	Method, Path string
	Serve        Handler
	// MaxBody, when above 0, is the most a body may hold: the server reads
	// it (after the key, within the body timeout) before Serve runs.
	MaxBody int64
}

// Options configure the API.
type Options struct {
	// LinkBase is the base of source links (files.BaseURL); nil: none.
	LinkBase func() string
	Logger   hclog.Logger
	// Version is the server version the MCP server reports.
	Version string
}

// API is the knowledge base's public face: the REST routes under
// /api/v1/ext/wiki, the MCP server at /mcp, and the admin routes.
type API struct {
	svc *kb.Service
	o   Options
	mcp http.Handler
}

// New builds the API over svc.
func New(svc *kb.Service, o Options) *API {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Version == "" {
		o.Version = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			o.Version = bi.Main.Version
		}
	}
	a := &API{svc: svc, o: o}
	a.mcp = a.newMCP()
	return a
}

// DefaultKB is the base a REST call without kb_id reads.
const DefaultKB = "default"

// Routes are the eight REST routes (spec: Knowledge-base REST) and the
// MCP server.
func (a *API) Routes() []Route {
	const p = "/api/v1/ext/wiki"
	return []Route{
		{Method: http.MethodGet, Path: p + "/search", Serve: a.search},
		{Method: http.MethodGet, Path: p + "/kbs", Serve: a.kbs},
		{Method: http.MethodGet, Path: p + "/tags", Serve: a.tags},
		{Method: http.MethodGet, Path: p + "/tags/{tag}", Serve: a.byTag},
		{Method: http.MethodGet, Path: p + "/pages", Serve: a.pages},
		{Method: http.MethodGet, Path: p + "/pages/{id}", Serve: a.page},
		{Method: http.MethodGet, Path: p + "/pages/{id}/backlinks", Serve: a.backlinks},
		{Method: http.MethodGet, Path: p + "/pages/{id}/source", Serve: a.source},
		{Method: http.MethodPost, Path: "/mcp", Serve: a.serveMCP, MaxBody: MCPMaxBody},
	}
}

// reply writes v as JSON; snippets keep their <mark> as written.
func reply(w http.ResponseWriter, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return apierr.Internal(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}

func list[T any](w http.ResponseWriter, data []T) error {
	if data == nil {
		data = []T{}
	}
	return reply(w, map[string]any{"object": "list", "data": data})
}

// kbOf is the kb_id parameter, `default` when absent.
func kbOf(r *http.Request) string {
	if k := strings.TrimSpace(r.URL.Query().Get("kb_id")); k != "" {
		return k
	}
	return DefaultKB
}

// intParam reads an integer query parameter: def when absent, 400 when it
// is not a whole number of at least lo; above hi it is hi when capped
// (the search limit), else 400.
func intParam(r *http.Request, name string, def, lo, hi int, capped bool) (int, error) {
	s := strings.TrimSpace(r.URL.Query().Get(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil || n < lo:
		return 0, apierr.Newf(apierr.InvalidRequest, "%s must be a whole number of at least %d, got %q", name, lo, s)
	case n > hi && capped:
		return hi, nil
	case n > hi:
		return 0, apierr.Newf(apierr.InvalidRequest, "%s must be at most %d, got %d", name, hi, n)
	}
	return n, nil
}

func (a *API) search(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		return apierr.New(apierr.InvalidRequest, "q is required: the words to search for")
	}
	limit, err := intParam(r, "limit", SearchDefault, 1, SearchMax, true)
	if err != nil {
		return err
	}
	offset, err := intParam(r, "offset", 0, 0, MaxOffset, false)
	if err != nil {
		return err
	}
	res, err := a.svc.Search(ctx, account, kb.SearchRequest{Query: q, KB: kbOf(r), Limit: limit, Offset: offset})
	if err != nil {
		return apiError(err)
	}
	return reply(w, searchOf(q, offset, res))
}

type kbView struct {
	KBID      string `json:"kb_id"`
	Name      string `json:"name"`
	PageCount int    `json:"page_count"`
}

func (a *API) kbs(ctx context.Context, w http.ResponseWriter, _ *http.Request, account string) error {
	kbs, err := a.svc.ReadableBases(ctx, account)
	if err != nil {
		return apiError(err)
	}
	out := make([]kbView, len(kbs))
	for i, k := range kbs {
		out[i] = kbView{KBID: k.ID, Name: k.Name, PageCount: k.PageCount}
	}
	return list(w, out)
}

func (a *API) tags(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	tags, err := a.svc.Tags(ctx, account, kbOf(r))
	if err != nil {
		return apiError(err)
	}
	return list(w, tags)
}

func (a *API) byTag(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	ps, err := a.svc.PagesByTag(ctx, account, kbOf(r), r.PathValue("tag"))
	if err != nil {
		return apiError(err)
	}
	return list(w, entries(ps))
}

// splitIDs reads a comma-separated ids parameter: blanks dropped, each id
// once, the first max kept (extras silently dropped, as the spec says).
func splitIDs(s string, max int) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id == "" || seen[id] {
			continue
		}
		seen[id] = true
		if len(out) == max {
			break
		}
		out = append(out, id)
	}
	return out
}

func (a *API) pages(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	ids := splitIDs(r.URL.Query().Get("ids"), MaxIDs)
	if len(ids) == 0 {
		return apierr.Newf(apierr.InvalidRequest, "ids is required: page ids separated by commas, at most %d", MaxIDs)
	}
	ps, err := a.svc.Pages(ctx, account, kbOf(r), ids)
	if err != nil {
		return apiError(err)
	}
	out := make([]page, len(ps))
	for i := range ps {
		if out[i], err = pageOf(ctx, a.svc, &ps[i], RESTExcerpt); err != nil {
			return apiError(err)
		}
	}
	return list(w, out)
}

func (a *API) page(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	p, err := a.svc.Page(ctx, account, kbOf(r), r.PathValue("id"))
	if err != nil {
		return apiError(err)
	}
	v, err := pageOf(ctx, a.svc, &p, 0)
	if err != nil {
		return apiError(err)
	}
	return reply(w, v)
}

func (a *API) backlinks(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	ps, err := a.svc.Backlinks(ctx, account, kbOf(r), r.PathValue("id"))
	if err != nil {
		return apiError(err)
	}
	return list(w, entries(ps))
}

// linkBase is the base of the links the API hands out.
func (a *API) linkBase() string {
	if a.o.LinkBase == nil {
		return ""
	}
	return a.o.LinkBase()
}

func (a *API) source(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	s, err := a.svc.Source(ctx, account, kbOf(r), r.PathValue("id"), a.linkBase())
	if err != nil {
		return apiError(err)
	}
	return reply(w, sourceOf(s))
}
