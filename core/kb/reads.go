package kb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// The reads of the REST API and the MCP server. Each takes the calling
// account and sees only the bases it may read; a base it may not read is
// answered exactly like a missing one. kbID "" means every base the
// account may read (the MCP tools take no kb_id).

// readable returns the base when the account may read it.
func (s *Service) readable(ctx context.Context, account, kbID string) (store.KnowledgeBase, error) {
	kb, err := s.st.GetKnowledgeBase(ctx, kbID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !kb.ReadableBy(account) {
		return kb, notFoundf("knowledge base %q not found", kbID)
	}
	return kb, err
}

// ReadableBases returns the bases the account may read, by id.
func (s *Service) ReadableBases(ctx context.Context, account string) ([]store.KnowledgeBase, error) {
	all, err := s.st.ListKnowledgeBases(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, kb := range all {
		if kb.ReadableBy(account) {
			out = append(out, kb)
		}
	}
	return out, nil
}

// scope is the set of base ids a read may see, and whether it is every
// base there is.
func (s *Service) scope(ctx context.Context, account, kbID string) ([]string, bool, error) {
	all, err := s.st.ListKnowledgeBases(ctx)
	if err != nil {
		return nil, false, err
	}
	var ids []string
	for _, kb := range all {
		if kb.ReadableBy(account) && (kbID == "" || kb.ID == kbID) {
			ids = append(ids, kb.ID)
		}
	}
	if kbID != "" && len(ids) == 0 {
		return nil, false, notFoundf("knowledge base %q not found", kbID)
	}
	return ids, len(ids) == len(all), nil
}

// SearchRequest is one search.
type SearchRequest struct {
	Query  string
	KB     string // "" = every base the account may read
	Limit  int
	Offset int
}

// SearchHit is one result: the page, its score, a highlighted fragment of
// its body.
type SearchHit struct {
	Page    store.Page
	Score   float64
	Snippet string
}

// SearchResult is a page of results and how many match in all.
type SearchResult struct {
	Total uint64
	Hits  []SearchHit
}

// Search runs a BM25 search over the bases in scope, best first.
func (s *Service) Search(ctx context.Context, account string, r SearchRequest) (SearchResult, error) {
	var res SearchResult
	kbs, all, err := s.scope(ctx, account, r.KB)
	if err != nil {
		return res, err
	}
	hits, total, err := s.idx.search(ctx, r.Query, kbs, all, r.Limit, r.Offset)
	if err != nil {
		return res, err
	}
	res.Total = total
	q := s.idx.parseQuery(r.Query)
	for _, h := range hits {
		p, err := s.st.GetPage(ctx, h.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the index saw it
		}
		if err != nil {
			return res, err
		}
		if !slices.Contains(kbs, p.KBID) {
			continue // moved to another base since the index saw it
		}
		res.Hits = append(res.Hits, SearchHit{Page: p, Score: h.Score, Snippet: s.idx.snippet(p.Body, q)})
	}
	return res, nil
}

// Tags returns a base's tags with their page counts.
func (s *Service) Tags(ctx context.Context, account, kbID string) ([]store.TagCount, error) {
	if _, err := s.readable(ctx, account, kbID); err != nil {
		return nil, err
	}
	return s.st.ListTags(ctx, kbID)
}

// PagesByTag returns the pages carrying tag in the bases in scope, by id.
func (s *Service) PagesByTag(ctx context.Context, account, kbID, tag string) ([]store.Page, error) {
	kbs, _, err := s.scope(ctx, account, kbID)
	if err != nil {
		return nil, err
	}
	out := []store.Page{}
	for _, k := range kbs {
		ps, err := s.st.PagesByTag(ctx, k, tag)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	slices.SortFunc(out, func(a, b store.Page) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Page returns one page of a base in scope.
func (s *Service) Page(ctx context.Context, account, kbID, id string) (store.Page, error) {
	// The base first: whether a page exists in a base the account cannot
	// read is not its business.
	if kbID != "" {
		if _, err := s.readable(ctx, account, kbID); err != nil {
			return store.Page{}, err
		}
	}
	p, err := s.st.GetPage(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && kbID != "" && p.KBID != kbID {
		return store.Page{}, notFoundf("page %q not found", id)
	}
	if err != nil {
		return store.Page{}, err
	}
	if kbID == "" {
		if _, err := s.readable(ctx, account, p.KBID); errors.Is(err, ErrNotFound) {
			return store.Page{}, notFoundf("page %q not found", id)
		} else if err != nil {
			return store.Page{}, err
		}
	}
	return p, nil
}

// Pages returns the pages named that exist in a base in scope, in the
// order asked; the others are left out. A base in kbID the account
// cannot read is not found.
func (s *Service) Pages(ctx context.Context, account, kbID string, ids []string) ([]store.Page, error) {
	if kbID != "" {
		if _, err := s.readable(ctx, account, kbID); err != nil {
			return nil, err
		}
	}
	out := []store.Page{}
	ok := map[string]bool{}
	for _, id := range ids {
		p, err := s.st.GetPage(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if kbID != "" && p.KBID != kbID {
			continue
		}
		if kbID == "" {
			readable, seen := ok[p.KBID]
			if !seen {
				_, err := s.readable(ctx, account, p.KBID)
				if err != nil && !errors.Is(err, ErrNotFound) {
					return nil, err
				}
				readable = err == nil
				ok[p.KBID] = readable
			}
			if !readable {
				continue
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Links resolves a page's outgoing links.
func (s *Service) Links(ctx context.Context, p store.Page) ([]store.PageLink, error) {
	return s.st.ResolveLinks(ctx, p)
}

// Backlinks returns the pages linking to a page in scope.
func (s *Service) Backlinks(ctx context.Context, account, kbID, id string) ([]store.Page, error) {
	if _, err := s.Page(ctx, account, kbID, id); err != nil {
		return nil, err
	}
	ps, err := s.st.Backlinks(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundf("page %q not found", id)
	}
	return ps, err
}

// SourceLink is a page's source with a signed download link.
type SourceLink struct {
	R2Key     string
	Filename  string
	Locator   string
	URL       string
	ExpiresAt time.Time
}

// Source returns a page's source and a download link valid for
// SourceLinkTTL, under base (the gateway's address as files.BaseURL says).
func (s *Service) Source(ctx context.Context, account, kbID, id, base string) (SourceLink, error) {
	p, err := s.Page(ctx, account, kbID, id)
	if err != nil {
		return SourceLink{}, err
	}
	if p.Source == nil || p.Source.R2Key == "" {
		return SourceLink{}, notFoundf("page %q has no source file", id)
	}
	src, err := s.st.GetKBSource(ctx, p.KBID, p.Source.R2Key)
	if errors.Is(err, store.ErrNotFound) {
		return SourceLink{}, notFoundf("the source file of page %q (%s) was not uploaded", id, p.Source.R2Key)
	}
	if err != nil {
		return SourceLink{}, err
	}
	url, exp, err := s.files.Link(base, src.FileID, SourceLinkTTL)
	if err != nil {
		return SourceLink{}, err
	}
	name := p.Source.Filename
	if name == "" {
		name = src.Filename
	}
	return SourceLink{R2Key: p.Source.R2Key, Filename: name, Locator: p.Source.Locator, URL: url, ExpiresAt: exp}, nil
}
