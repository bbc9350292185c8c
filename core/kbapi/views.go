package kbapi

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/kb"
	"github.com/tollgate-gw/tollgate/store"
)

// The spec's caps (Limits: sizes and counts).
const (
	SearchDefault  = 20   // REST search limit default
	SearchMax      = 50   // search limit maximum (REST and MCP)
	MCPSearchLimit = 10   // search_wiki limit default
	MaxIDs         = 25   // ids of a batch read
	RESTExcerpt    = 4000 // batch body excerpt, REST
	MCPExcerpt     = 1200 // batch body excerpt, MCP
	MCPPageBody    = 8000 // read_page body cap
	MaxOffset      = 10000
)

// entry is a page in a list (search results, a tag's pages, backlinks):
// the page without its body and links.
type entry struct {
	ID          string            `json:"id"`
	KBID        string            `json:"kb_id"`
	Title       string            `json:"title"`
	Summary     string            `json:"summary"`
	Tags        []string          `json:"tags"`
	Aliases     []string          `json:"aliases"`
	Confidence  string            `json:"confidence"`
	NeedsReview bool              `json:"needs_review"`
	Source      *store.PageSource `json:"source"`
}

func entryOf(p *store.Page) entry {
	return entry{
		ID: p.ID, KBID: p.KBID, Title: p.Title, Summary: p.Summary, Tags: nonNil(p.Tags),
		Aliases: nonNil(p.Aliases), Confidence: p.Confidence, NeedsReview: p.NeedsReview, Source: p.Source,
	}
}

func entries(ps []store.Page) []entry {
	out := make([]entry, len(ps))
	for i := range ps {
		out[i] = entryOf(&ps[i])
	}
	return out
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// hit is a search result: an entry with its snippet and score.
type hit struct {
	entry
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
}

// link is an outgoing link of a page.
type link struct {
	ID       string `json:"id"`
	Resolved bool   `json:"resolved"`
	Title    string `json:"title"`
}

// page is a page read in full or in a batch: links resolved, the body
// (cut in batches, body_truncated then says whether it was).
type page struct {
	entry
	Links         []string `json:"links"`
	OutgoingLinks []link   `json:"outgoing_links"`
	Body          string   `json:"body"`
	BodyTruncated *bool    `json:"body_truncated,omitempty"`
}

// pageOf builds a page view; maxBody > 0 cuts the body to that many
// characters (code points) and sets body_truncated.
func pageOf(ctx context.Context, svc *kb.Service, p *store.Page, maxBody int) (page, error) {
	ls, err := svc.Links(ctx, *p)
	if err != nil {
		return page{}, err
	}
	v := page{entry: entryOf(p), Links: make([]string, len(ls)), OutgoingLinks: make([]link, len(ls)), Body: p.Body}
	for i, l := range ls {
		v.Links[i] = l.ID
		v.OutgoingLinks[i] = link{ID: l.ID, Resolved: l.Resolved, Title: l.Title}
	}
	if maxBody > 0 {
		var cut bool
		v.Body, cut = truncate(p.Body, maxBody)
		v.BodyTruncated = &cut
	}
	return v, nil
}

// truncate cuts s to n characters.
func truncate(s string, n int) (string, bool) {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], true
}

// searchResult is the answer of a search (REST and search_wiki).
type searchResult struct {
	Query     string `json:"query"`
	TotalHits uint64 `json:"total_hits"`
	Offset    int    `json:"offset"`
	Returned  int    `json:"returned"`
	HasMore   bool   `json:"has_more"`
	Results   []hit  `json:"results"`
}

func searchOf(q string, offset int, res kb.SearchResult) searchResult {
	out := searchResult{Query: q, TotalHits: res.Total, Offset: offset, Results: make([]hit, len(res.Hits))}
	for i := range res.Hits {
		h := &res.Hits[i]
		out.Results[i] = hit{entry: entryOf(&h.Page), Snippet: h.Snippet, Score: h.Score}
	}
	out.Returned = len(out.Results)
	out.HasMore = uint64(offset+out.Returned) < res.Total
	return out
}

// sourceLink is a page's source with its download link.
type sourceLink struct {
	R2Key      string `json:"r2_key"`
	Filename   string `json:"filename"`
	Locator    string `json:"locator"`
	URL        string `json:"url"`
	URLTTLSecs int    `json:"url_ttl_secs"`
}

func sourceOf(s kb.SourceLink) sourceLink {
	return sourceLink{R2Key: s.R2Key, Filename: s.Filename, Locator: s.Locator, URL: s.URL,
		URLTTLSecs: int(kb.SourceLinkTTL.Seconds())}
}

// apiError is the client error of a knowledge-base failure: 404 not_found
// for a missing or unreadable base or page alike, 400 invalid_request, 500
// otherwise.
func apiError(err error) *apierr.Error {
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, kb.ErrNotFound):
		return apierr.New(apierr.NotFound, err.Error())
	case kb.IsInvalid(err):
		return apierr.New(apierr.InvalidRequest, err.Error())
	case kb.IsConflict(err):
		e := apierr.New(apierr.InvalidRequest, err.Error())
		e.Status = 409
		return e
	}
	return apierr.Internal(err)
}
