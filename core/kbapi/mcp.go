package kbapi

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-gw/tollgate/core/kb"
)

// The MCP server (spec: Knowledge-base MCP): streamable HTTP, stateless,
// JSON responses, POST only; six read-only tools whose scope is every
// base the key's account may read (they take no kb_id). Authentication
// happens before, in the read chain; the account reaches the tools in
// the request's context.

type accountKey struct{}

// baseKey carries the base URL of source links (it depends on the
// request's host when no public_url is set).
type baseKey struct{}

func accountOf(ctx context.Context) string {
	a, _ := ctx.Value(accountKey{}).(string)
	return a
}

const mcpInstructions = "Read-only search over the knowledge bases this API key may read. " +
	"Call search_wiki first, then read_page or read_pages with the ids it returns; " +
	"list_by_tag, backlinks and get_source explore from there."

func (a *API) newMCP() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tollgate-wiki", Title: "Tollgate knowledge base", Version: a.o.Version},
		&mcp.ServerOptions{Instructions: mcpInstructions})
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	args := map[string]string{}
	addTool(srv, args, &mcp.Tool{Name: "search_wiki", Annotations: ro,
		Description: "Search the knowledge base (BM25 over titles, headings, aliases, summaries, tags and bodies; any language). " +
			"Returns pages without their bodies, best first, each with a highlighted snippet."}, a.toolSearch)
	addTool(srv, args, &mcp.Tool{Name: "read_page", Annotations: ro,
		Description: "Read one page by id: its Markdown body (at most 8000 characters) and its outgoing links."}, a.toolReadPage)
	addTool(srv, args, &mcp.Tool{Name: "read_pages", Annotations: ro,
		Description: "Read up to 25 pages by id at once; each body is an excerpt of at most 1200 characters."}, a.toolReadPages)
	addTool(srv, args, &mcp.Tool{Name: "list_by_tag", Annotations: ro,
		Description: "List the pages carrying a tag (without bodies)."}, a.toolByTag)
	addTool(srv, args, &mcp.Tool{Name: "backlinks", Annotations: ro,
		Description: "List the pages that link to a page (without bodies)."}, a.toolBacklinks)
	addTool(srv, args, &mcp.Tool{Name: "get_source", Annotations: ro,
		Description: "Get a page's source file: its name, locator and a download link valid for one hour."}, a.toolSource)
	srv.AddReceivingMiddleware(argumentHints(args))
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true,
		// The key authenticates every call (spec: Authentication rule 8);
		// a gateway behind a proxy on the same host sees a public Host
		// on a loopback connection, which this check would refuse.
		DisableLocalhostProtection: true,
	})
}

// MCPMaxBody caps an MCP request's body: JSON-RPC messages of a few
// arguments. The SDK reads a body whole, with no cap and in no time
// bound of its own, so the server reads it first (Route.MaxBody).
const MCPMaxBody = 1 << 20

// serveMCP runs the MCP server for an authenticated account.
func (a *API) serveMCP(ctx context.Context, w http.ResponseWriter, r *http.Request, account string) error {
	ctx = context.WithValue(ctx, accountKey{}, account)
	ctx = context.WithValue(ctx, baseKey{}, a.linkBase())
	a.mcp.ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// addTool registers a tool and notes the arguments it takes (from In's
// JSON names), for the answer to a call whose arguments do not fit.
func addTool[In, Out any](srv *mcp.Server, args map[string]string, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	mcp.AddTool(srv, t, h)
	var names []string
	in := reflect.TypeFor[In]()
	for i := range in.NumField() {
		name, opts, _ := strings.Cut(in.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if !strings.Contains(opts, "omitempty") {
			name += " (required)"
		}
		names = append(names, name)
	}
	args[t.Name] = strings.Join(names, ", ")
}

// argumentHints adds to the SDK's answer to arguments that do not fit a
// tool's schema ("unexpected additional properties") the arguments the
// tool does take, so a model can call it again right.
func argumentHints(args map[string]string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			r, ok := res.(*mcp.CallToolResult)
			if err != nil || !ok || !r.IsError || len(r.Content) != 1 {
				return res, err
			}
			call, _ := req.(*mcp.CallToolRequest)
			text, _ := r.Content[0].(*mcp.TextContent)
			if call == nil || call.Params == nil || text == nil || !strings.HasPrefix(text.Text, `validating "arguments"`) {
				return res, err
			}
			if want, ok := args[call.Params.Name]; ok {
				text.Text += "; " + call.Params.Name + " takes these arguments: " + want
			}
			return res, err
		}
	}
}

type searchIn struct {
	Q      string `json:"q" jsonschema:"what to search for: words in any language"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many results to return: default 10, at most 50"`
	Offset int    `json:"offset,omitempty" jsonschema:"how many results to skip, for the next page of results"`
}

type idIn struct {
	ID string `json:"id" jsonschema:"a page id, as search_wiki returns it"`
}

type idsIn struct {
	IDs []string `json:"ids" jsonschema:"page ids, at most 25 (more are ignored)"`
}

type tagIn struct {
	Tag string `json:"tag" jsonschema:"a tag, matched without regard to case"`
}

type pagesOut struct {
	Pages []page `json:"pages"`
}

type entriesOut struct {
	Pages []entry `json:"pages"`
}

// toolError is what a tool answers for a refused call: a tool result with
// isError, whose text the model reads.
func toolError(err error) error {
	if errors.Is(err, kb.ErrNotFound) || kb.IsInvalid(err) {
		return err
	}
	return errors.New("the knowledge base failed to answer; try again")
}

func (a *API) toolSearch(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchResult, error) {
	q := strings.TrimSpace(in.Q)
	switch {
	case q == "":
		return nil, searchResult{}, errors.New("q is required: the words to search for")
	case in.Limit < 0 || in.Offset < 0:
		return nil, searchResult{}, errors.New("limit and offset must not be negative")
	case in.Offset > MaxOffset:
		return nil, searchResult{}, errors.New("offset must be at most 10000")
	}
	limit := in.Limit
	if limit == 0 {
		limit = MCPSearchLimit
	}
	limit = min(limit, SearchMax)
	res, err := a.svc.Search(ctx, accountOf(ctx), kb.SearchRequest{Query: q, Limit: limit, Offset: in.Offset})
	if err != nil {
		return nil, searchResult{}, toolError(err)
	}
	return nil, searchOf(q, in.Offset, res), nil
}

func (a *API) toolReadPage(ctx context.Context, _ *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, page, error) {
	p, err := a.svc.Page(ctx, accountOf(ctx), "", strings.TrimSpace(in.ID))
	if err != nil {
		return nil, page{}, toolError(err)
	}
	v, err := pageOf(ctx, a.svc, &p, MCPPageBody)
	if err != nil {
		return nil, page{}, toolError(err)
	}
	return nil, v, nil
}

func (a *API) toolReadPages(ctx context.Context, _ *mcp.CallToolRequest, in idsIn) (*mcp.CallToolResult, pagesOut, error) {
	ids := splitIDs(strings.Join(in.IDs, ","), MaxIDs)
	if len(ids) == 0 {
		return nil, pagesOut{}, errors.New("ids is required: one to 25 page ids")
	}
	ps, err := a.svc.Pages(ctx, accountOf(ctx), "", ids)
	if err != nil {
		return nil, pagesOut{}, toolError(err)
	}
	if len(ps) == 0 {
		return nil, pagesOut{}, errors.New("none of these pages exists: " + strings.Join(ids, ", "))
	}
	out := pagesOut{Pages: make([]page, len(ps))}
	for i := range ps {
		if out.Pages[i], err = pageOf(ctx, a.svc, &ps[i], MCPExcerpt); err != nil {
			return nil, pagesOut{}, toolError(err)
		}
	}
	return nil, out, nil
}

func (a *API) toolByTag(ctx context.Context, _ *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, entriesOut, error) {
	if strings.TrimSpace(in.Tag) == "" {
		return nil, entriesOut{}, errors.New("tag is required")
	}
	ps, err := a.svc.PagesByTag(ctx, accountOf(ctx), "", in.Tag)
	if err != nil {
		return nil, entriesOut{}, toolError(err)
	}
	return nil, entriesOut{Pages: entries(ps)}, nil
}

func (a *API) toolBacklinks(ctx context.Context, _ *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, entriesOut, error) {
	ps, err := a.svc.Backlinks(ctx, accountOf(ctx), "", strings.TrimSpace(in.ID))
	if err != nil {
		return nil, entriesOut{}, toolError(err)
	}
	return nil, entriesOut{Pages: entries(ps)}, nil
}

func (a *API) toolSource(ctx context.Context, _ *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, sourceLink, error) {
	base, _ := ctx.Value(baseKey{}).(string)
	s, err := a.svc.Source(ctx, accountOf(ctx), "", strings.TrimSpace(in.ID), base)
	if err != nil {
		return nil, sourceLink{}, toolError(err)
	}
	return nil, sourceOf(s), nil
}
