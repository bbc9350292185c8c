package pipeline

import "context"

// Retriever is the knowledge base as the agent stage sees it: which bases
// an account may read, and one search over some of them.
type Retriever interface {
	// Readable reports whether the account may read the base; a base that
	// does not exist is not readable.
	Readable(ctx context.Context, accountID, kbID string) (bool, error)
	// Retrieve searches query over the bases kbIDs (all readable by the
	// account) and returns at most limit pages, best first.
	Retrieve(ctx context.Context, accountID string, kbIDs []string, query string, limit int) ([]RetrievedPage, error)
}

// RetrievedPage is one page a retrieval found.
type RetrievedPage struct {
	ID    string
	KBID  string
	Title string
	Body  string // Markdown
}
