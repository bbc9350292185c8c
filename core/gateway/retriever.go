package gateway

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/tollgate-gw/tollgate/core/kb"
	"github.com/tollgate-gw/tollgate/pipeline"
)

// kbRetriever is the knowledge base as the agent stage searches it: a
// base's readers decide what an organization may read, and one search per
// attached base is merged by score (BM25 over one index, so scores
// compare across bases).
type kbRetriever struct{ svc *kb.Service }

func (r kbRetriever) Readable(ctx context.Context, accountID, kbID string) (bool, error) {
	b, err := r.svc.Base(ctx, kbID)
	if errors.Is(err, kb.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return b.ReadableBy(accountID), nil
}

func (r kbRetriever) Retrieve(ctx context.Context, accountID string, kbIDs []string, query string, limit int) ([]pipeline.RetrievedPage, error) {
	var hits []kb.SearchHit
	for _, id := range kbIDs {
		res, err := r.svc.Search(ctx, accountID, kb.SearchRequest{Query: query, KB: id, Limit: limit})
		if errors.Is(err, kb.ErrNotFound) {
			continue // closed to the account since the stage checked it
		}
		if err != nil {
			return nil, err
		}
		hits = append(hits, res.Hits...)
	}
	slices.SortStableFunc(hits, func(a, b kb.SearchHit) int { return cmp.Compare(b.Score, a.Score) })
	out := make([]pipeline.RetrievedPage, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		out = append(out, pipeline.RetrievedPage{ID: h.Page.ID, KBID: h.Page.KBID, Title: h.Page.Title, Body: h.Page.Body})
	}
	return out, nil
}

var _ pipeline.Retriever = kbRetriever{}
