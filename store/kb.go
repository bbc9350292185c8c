package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// KBEveryone, as a reader of a knowledge base, lets every account read it.
const KBEveryone = "*"

// KnowledgeBase is one base of pages (PRODUCT.md §2 Knowledge bases). Its
// id is global and chosen by the operator.
type KnowledgeBase struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Readers are the account ids that may read the base, or KBEveryone.
	Readers []string `json:"readers"`
	// PageCount is kept by the store.
	PageCount int       `json:"page_count"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ReadableBy reports whether the account may read the base.
func (kb *KnowledgeBase) ReadableBy(accountID string) bool {
	return slices.Contains(kb.Readers, KBEveryone) || accountID != "" && slices.Contains(kb.Readers, accountID)
}

// Page is a knowledge page as imported: the spec's knowledge page fields
// less the computed ones (snippet, score, body_truncated,
// outgoing_links).
type Page struct {
	ID      string   `json:"id"` // unique across all bases
	KBID    string   `json:"kb_id"`
	Title   string   `json:"title"`
	Summary string   `json:"summary"`
	Tags    []string `json:"tags"`
	Aliases []string `json:"aliases"`
	// Links are the outgoing links as the import named them: a page id,
	// title or alias of the same base (matched without regard to case),
	// or a name no page has yet (unresolved).
	Links       []string    `json:"links"`
	Body        string      `json:"body"` // Markdown
	Confidence  string      `json:"confidence"`
	NeedsReview bool        `json:"needs_review"`
	Source      *PageSource `json:"source,omitempty"`

	// Version is the change (PageChange.Seq) that wrote this content; set
	// by the store, like UpdatedAt.
	Version   uint64    `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Normalize gives a page's lists a non-nil value, so a page reads back as
// it was written and compares equal to the same import.
func (p *Page) Normalize() {
	for _, l := range []*[]string{&p.Tags, &p.Aliases, &p.Links} {
		if *l == nil {
			*l = []string{}
		}
	}
}

// CheckText refuses a tag, alias, link or title holding a NUL byte, which
// no backend's name rows can hold.
func (p *Page) CheckText() error {
	for _, ss := range [][]string{p.Tags, p.Aliases, p.Links, {p.Title}} {
		for _, s := range ss {
			if strings.IndexByte(s, 0) >= 0 {
				return fmt.Errorf("page %q: a tag, alias, link or title contains a NUL byte", p.ID)
			}
		}
	}
	return nil
}

// SameContent reports whether two writes of a page carry the same
// content: what the store sets (Version, UpdatedAt) is left out. An
// import counts such a page unchanged.
func (p Page) SameContent(q Page) bool {
	p.Version, q.Version = 0, 0
	p.UpdatedAt, q.UpdatedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(p, q)
}

// PageSource is where a page was compiled from. R2Key names a source file
// stored with PutKBSource (the spec's field name).
type PageSource struct {
	R2Key      string `json:"r2_key"`
	Filename   string `json:"filename"`
	Locator    string `json:"locator"`
	CompiledAt string `json:"compiled_at"`
	Model      string `json:"model"`
}

// PageLink is one outgoing link of a page, resolved at read time: a link
// names a page of the same base by id, else by title, else by alias
// (without regard to case; among equals the smallest page id wins).
type PageLink struct {
	Target   string `json:"-"`  // as the page names it
	ID       string `json:"id"` // the page it resolves to, else Target
	Resolved bool   `json:"resolved"`
	Title    string `json:"title"` // the resolved page's title, else ""
}

// PageChange is one entry of the change log a search index follows.
type PageChange struct {
	Seq     uint64
	PageID  string
	KBID    string
	Deleted bool
}

// KBSource is a stored source file of a base: the bytes live in the
// hosted-files store under FileID.
type KBSource struct {
	KBID        string    `json:"kb_id"`
	Key         string    `json:"r2_key"`
	FileID      string    `json:"file_id"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// TagCount is a tag of a base and how many pages carry it.
type TagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

// PutPagesResult counts what PutPages did.
type PutPagesResult struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

// KnowledgeBases is the role of knowledge bases, their pages, links, tags
// and source files.
//
// Page ids are unique across all bases (the MCP tools take no kb_id). Every
// page write is a change with a number (Seq); the change log keeps the
// latest change of each page, deletions included, so a search index
// rebuilds from it (PageChanges from 0) and follows it (PageChanges from
// the last Seq it applied), each instance its own index. Changes become
// visible in Seq order: once a reader has seen change n, no change below n
// appears later. Tags and link names match without regard to case.
type KnowledgeBases interface {
	// PutKnowledgeBase creates the base or updates its name and readers
	// (CreatedAt and PageCount are kept).
	PutKnowledgeBase(ctx context.Context, kb KnowledgeBase) error
	GetKnowledgeBase(ctx context.Context, id string) (KnowledgeBase, error)
	// ListKnowledgeBases returns every base, by id.
	ListKnowledgeBases(ctx context.Context) ([]KnowledgeBase, error)
	// DeleteKnowledgeBase removes the base, its pages (each a change) and
	// its source records. ErrNotFound when there is none.
	DeleteKnowledgeBase(ctx context.Context, id string) error

	// PutPages creates or replaces pages of a base, in place. A page whose
	// content is unchanged is not rewritten (no change). ErrNotFound when
	// the base does not exist; ErrExists when a page id belongs to another
	// base, and then nothing is written.
	PutPages(ctx context.Context, kbID string, pages []Page, now time.Time) (PutPagesResult, error)
	// DeletePage removes a page of the base (ErrNotFound when the base has
	// no such page).
	DeletePage(ctx context.Context, kbID, id string) error
	// GetPage returns a page of any base.
	GetPage(ctx context.Context, id string) (Page, error)
	// ListPages returns up to limit pages of the base with ids after
	// after, by id.
	ListPages(ctx context.Context, kbID, after string, limit int) ([]Page, error)
	// PagesByTag returns the base's pages carrying tag, by id.
	PagesByTag(ctx context.Context, kbID, tag string) ([]Page, error)
	// ListTags returns the base's tags with their page counts, by tag
	// (each in the case of its first page).
	ListTags(ctx context.Context, kbID string) ([]TagCount, error)
	// ResolveLinks resolves the page's Links, in order, a target once.
	ResolveLinks(ctx context.Context, p Page) ([]PageLink, error)
	// Backlinks returns the pages whose links resolve to the page, by id.
	Backlinks(ctx context.Context, id string) ([]Page, error)

	// PageChanges returns up to limit changes with Seq above after, in
	// Seq order.
	PageChanges(ctx context.Context, after uint64, limit int) ([]PageChange, error)
	// PageVersion is the Seq of the newest change (0: none yet).
	PageVersion(ctx context.Context) (uint64, error)

	// PutKBSource records a source file of an existing base and returns
	// the record it replaced, if any (so the caller deletes its bytes).
	PutKBSource(ctx context.Context, s KBSource) (prev KBSource, replaced bool, err error)
	GetKBSource(ctx context.Context, kbID, key string) (KBSource, error)
	// ListKBSources returns the base's source records, by key.
	ListKBSources(ctx context.Context, kbID string) ([]KBSource, error)
}
