package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// RunKnowledgeBases is the conformance suite of the KnowledgeBases role.
func RunKnowledgeBases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("kb bases", func(t *testing.T) { t.Parallel(); testKBBases(t, open(t)) })
	t.Run("kb pages", func(t *testing.T) { t.Parallel(); testKBPages(t, open(t)) })
	t.Run("kb page ids are global", func(t *testing.T) { t.Parallel(); testKBGlobalIDs(t, open(t)) })
	t.Run("kb links", func(t *testing.T) { t.Parallel(); testKBLinks(t, open(t)) })
	t.Run("kb tags", func(t *testing.T) { t.Parallel(); testKBTags(t, open(t)) })
	t.Run("kb changes", func(t *testing.T) { t.Parallel(); testKBChanges(t, open(t)) })
	t.Run("kb delete base", func(t *testing.T) { t.Parallel(); testKBDeleteBase(t, open(t)) })
	t.Run("kb sources", func(t *testing.T) { t.Parallel(); testKBSources(t, open(t)) })
	t.Run("kb large import", func(t *testing.T) { t.Parallel(); testKBLarge(t, open(t)) })
	t.Run("kb concurrent writes", func(t *testing.T) { t.Parallel(); testKBConcurrent(t, open(t)) })
	t.Run("kb closed", func(t *testing.T) { t.Parallel(); testKBClosed(t, open(t)) })
}

func newKB(t *testing.T, s store.Store, id string, readers ...string) {
	t.Helper()
	mustNil(t, "put base "+id, s.PutKnowledgeBase(t.Context(), store.KnowledgeBase{ID: id, Name: "base " + id, Readers: readers, UpdatedAt: t0}))
}

func putPages(t *testing.T, s store.Store, kb string, pages ...store.Page) store.PutPagesResult {
	t.Helper()
	r, err := s.PutPages(t.Context(), kb, pages, t0)
	mustNil(t, "put pages", err)
	return r
}

func getPage(t *testing.T, s store.Store, id string) store.Page {
	t.Helper()
	p, err := s.GetPage(t.Context(), id)
	mustNil(t, "get page "+id, err)
	return p
}

func pageIDs(ps []store.Page) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func allChanges(t *testing.T, s store.Store, after uint64) []store.PageChange {
	t.Helper()
	var out []store.PageChange
	for {
		cs, err := s.PageChanges(t.Context(), after, 3) // small pages of changes walk the paging too
		mustNil(t, "page changes", err)
		if len(cs) == 0 {
			return out
		}
		out = append(out, cs...)
		after = cs[len(cs)-1].Seq
	}
}

func testKBBases(t *testing.T, s store.Store) {
	ctx := t.Context()
	if kbs, err := s.ListKnowledgeBases(ctx); err != nil || len(kbs) != 0 {
		t.Fatalf("bases of an empty store = %+v, %v", kbs, err)
	}
	_, err := s.GetKnowledgeBase(ctx, "docs")
	mustIs(t, "get missing", err, store.ErrNotFound)
	newKB(t, s, "docs", "acct-1")
	newKB(t, s, "all", store.KBEveryone)
	putPages(t, s, "docs", store.Page{ID: "p1", Title: "One"})

	later := t0.Add(time.Hour)
	mustNil(t, "update", s.PutKnowledgeBase(ctx, store.KnowledgeBase{ID: "docs", Name: "Docs", Readers: []string{"acct-1", "acct-2"}, UpdatedAt: later}))
	kb, err := s.GetKnowledgeBase(ctx, "docs")
	mustNil(t, "get", err)
	if kb.Name != "Docs" || !slices.Equal(kb.Readers, []string{"acct-1", "acct-2"}) || kb.PageCount != 1 ||
		!kb.CreatedAt.Equal(t0) || !kb.UpdatedAt.Equal(later) {
		t.Fatalf("updated base = %+v: want the new name and readers, the page count and creation kept", kb)
	}
	tests := []struct {
		desc    string
		kb      string
		account string
		want    bool
	}{
		{"listed reader", "docs", "acct-2", true},
		{"other account", "docs", "acct-3", false},
		{"no account", "docs", "", false},
		{"everyone", "all", "acct-3", true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			kb, err := s.GetKnowledgeBase(ctx, tc.kb)
			mustNil(t, "get", err)
			if got := kb.ReadableBy(tc.account); got != tc.want {
				t.Fatalf("ReadableBy(%q) = %v, want %v", tc.account, got, tc.want)
			}
		})
	}
	kbs, err := s.ListKnowledgeBases(ctx)
	mustNil(t, "list", err)
	if len(kbs) != 2 || kbs[0].ID != "all" || kbs[1].ID != "docs" {
		t.Fatalf("list = %+v, want all, docs", kbs)
	}
}

func testKBPages(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.PutPages(ctx, "nope", []store.Page{{ID: "x"}}, t0)
	mustIs(t, "pages of a missing base", err, store.ErrNotFound)
	newKB(t, s, "docs", store.KBEveryone)
	page := store.Page{
		ID: "billing", Title: "Billing", Summary: "How credits work", Tags: []string{"money"},
		Aliases: []string{"payments"}, Links: []string{"keys"}, Body: "# Billing\n\nCredits.",
		Confidence: "high", NeedsReview: true,
		Source: &store.PageSource{R2Key: "src/billing.pdf", Filename: "billing.pdf", Locator: "p. 3", CompiledAt: "2025-01-02", Model: "m"},
	}
	r := putPages(t, s, "docs", page, store.Page{ID: "keys", Title: "Keys"})
	same(t, "first put", r, store.PutPagesResult{Created: 2})
	got := getPage(t, s, "billing")
	if got.Version == 0 || !got.UpdatedAt.Equal(t0) || got.KBID != "docs" {
		t.Fatalf("stored page = %+v: want a version, kb docs and the write's time", got)
	}
	want := page
	want.KBID, want.Version, want.UpdatedAt = "docs", got.Version, got.UpdatedAt
	same(t, "page", got, want)
	long := store.Page{ID: "long", Title: "Long", Body: strings.Repeat("A long page body. ", 20000)}
	putPages(t, s, "docs", long)
	if got := getPage(t, s, "long"); got.Body != long.Body {
		t.Fatalf("a %d-byte body read back as %d bytes", len(long.Body), len(got.Body))
	}
	mustNil(t, "delete long", s.DeletePage(ctx, "docs", "long"))
	if p := getPage(t, s, "keys"); p.Tags == nil || p.Aliases == nil || p.Links == nil {
		t.Fatalf("empty lists read back as nil: %+v", p)
	}

	r = putPages(t, s, "docs", page)
	same(t, "same content again", r, store.PutPagesResult{Unchanged: 1})
	if v := getPage(t, s, "billing").Version; v != got.Version {
		t.Fatalf("an unchanged page got version %d, was %d", v, got.Version)
	}
	page.Body = "# Billing\n\nCredits, revised."
	r = putPages(t, s, "docs", page)
	same(t, "changed content", r, store.PutPagesResult{Updated: 1})
	if v := getPage(t, s, "billing").Version; v <= got.Version {
		t.Fatalf("an updated page got version %d, not above %d", v, got.Version)
	}
	kb, _ := s.GetKnowledgeBase(ctx, "docs")
	if kb.PageCount != 2 {
		t.Fatalf("page count = %d, want 2", kb.PageCount)
	}
	_, err = s.PutPages(ctx, "docs", []store.Page{{ID: "a"}, {ID: "a"}}, t0)
	if err == nil {
		t.Fatal("a write naming one page twice succeeded")
	}

	list, err := s.ListPages(ctx, "docs", "", 0)
	mustNil(t, "list", err)
	same(t, "list", pageIDs(list), []string{"billing", "keys"})
	list, err = s.ListPages(ctx, "docs", "billing", 10)
	mustNil(t, "list after", err)
	same(t, "list after billing", pageIDs(list), []string{"keys"})

	mustIs(t, "delete from another base", s.DeletePage(ctx, "other", "keys"), store.ErrNotFound)
	mustIs(t, "delete missing", s.DeletePage(ctx, "docs", "nope"), store.ErrNotFound)
	mustNil(t, "delete", s.DeletePage(ctx, "docs", "keys"))
	_, err = s.GetPage(ctx, "keys")
	mustIs(t, "get deleted", err, store.ErrNotFound)
	if kb, _ := s.GetKnowledgeBase(ctx, "docs"); kb.PageCount != 1 {
		t.Fatalf("page count after delete = %d, want 1", kb.PageCount)
	}
	mustIs(t, "delete again", s.DeletePage(ctx, "docs", "keys"), store.ErrNotFound)
}

func testKBGlobalIDs(t *testing.T, s store.Store) {
	ctx := t.Context()
	newKB(t, s, "a", store.KBEveryone)
	newKB(t, s, "b", store.KBEveryone)
	putPages(t, s, "a", store.Page{ID: "shared", Title: "In a"})
	before, _ := s.PageVersion(ctx)
	_, err := s.PutPages(ctx, "b", []store.Page{{ID: "fresh"}, {ID: "shared", Title: "In b"}}, t0)
	mustIs(t, "reuse of another base's page id", err, store.ErrExists)
	if _, err := s.GetPage(ctx, "fresh"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a refused write wrote its other pages")
	}
	if p := getPage(t, s, "shared"); p.KBID != "a" || p.Title != "In a" {
		t.Fatalf("refused write changed the page: %+v", p)
	}
	if after, _ := s.PageVersion(ctx); after != before {
		t.Fatalf("refused write moved the page version from %d to %d", before, after)
	}
	// Once deleted from its base, the id is free again.
	mustNil(t, "delete", s.DeletePage(ctx, "a", "shared"))
	putPages(t, s, "b", store.Page{ID: "shared", Title: "In b"})
	if p := getPage(t, s, "shared"); p.KBID != "b" {
		t.Fatalf("page = %+v, want it in b", p)
	}
}

func resolve(t *testing.T, s store.Store, id string) []store.PageLink {
	t.Helper()
	ls, err := s.ResolveLinks(t.Context(), getPage(t, s, id))
	mustNil(t, "resolve links", err)
	for i := range ls {
		ls[i].Target = ""
	}
	return ls
}

func backlinks(t *testing.T, s store.Store, id string) []string {
	t.Helper()
	ps, err := s.Backlinks(t.Context(), id)
	mustNil(t, "backlinks", err)
	return pageIDs(ps)
}

func testKBLinks(t *testing.T, s store.Store) {
	ctx := t.Context()
	newKB(t, s, "k", store.KBEveryone)
	newKB(t, s, "other", store.KBEveryone)
	putPages(t, s, "other", store.Page{ID: "elsewhere", Title: "Elsewhere"})
	putPages(t, s, "k",
		store.Page{ID: "api-keys", Title: "API Keys", Aliases: []string{"Credentials"}},
		store.Page{ID: "billing", Title: "Billing", Aliases: []string{"api-keys-old"}},
		store.Page{ID: "hub", Title: "Hub", Links: []string{
			"API-KEYS",           // by id, any case
			"billing",            // by id
			"  api   keys ",      // by title, spaces folded: the same page again, listed once
			"credentials",        // by alias: api-keys again
			"Nowhere",            // dangling
			"elsewhere",          // another base's page: links stay in their base
			"nowhere",            // the same dangling target, once
			"",                   // ignored
			"Billing",            // by id again
			"API-KEYS-OLD",       // alias of billing
			"hub",                // itself
			"Brand New Page Tbd", // dangling, named by a title to come
		}},
	)
	same(t, "links", resolve(t, s, "hub"), []store.PageLink{
		{ID: "api-keys", Resolved: true, Title: "API Keys"},
		{ID: "billing", Resolved: true, Title: "Billing"},
		{ID: "Nowhere", Resolved: false},
		{ID: "elsewhere", Resolved: false},
		{ID: "hub", Resolved: true, Title: "Hub"},
		{ID: "Brand New Page Tbd", Resolved: false},
	})
	same(t, "backlinks of api-keys", backlinks(t, s, "api-keys"), []string{"hub"})
	same(t, "backlinks of billing", backlinks(t, s, "billing"), []string{"hub"})
	same(t, "a page is not its own backlink", backlinks(t, s, "hub"), []string{})
	same(t, "no backlinks across bases", backlinks(t, s, "elsewhere"), []string{})

	// An id beats a title: a page titled "billing" does not take the link.
	putPages(t, s, "k", store.Page{ID: "zz", Title: "billing"},
		store.Page{ID: "new", Title: "Brand new page TBD", Links: []string{"hub"}})
	links := resolve(t, s, "hub")
	if links[1].ID != "billing" {
		t.Fatalf("link billing resolved to %+v, want the page with that id", links[1])
	}
	if links[5] != (store.PageLink{ID: "new", Resolved: true, Title: "Brand new page TBD"}) {
		t.Fatalf("a dangling link did not resolve to the page imported later: %+v", links[5])
	}
	same(t, "backlinks of the late page", backlinks(t, s, "new"), []string{"hub"})
	same(t, "backlinks of zz (its title loses to an id)", backlinks(t, s, "zz"), []string{})
	same(t, "backlinks of hub", backlinks(t, s, "hub"), []string{"new"})

	// Deleting the target leaves the link dangling again.
	mustNil(t, "delete", s.DeletePage(ctx, "k", "new"))
	if l := resolve(t, s, "hub")[5]; l.Resolved || l.ID != "Brand New Page Tbd" {
		t.Fatalf("link to a deleted page = %+v, want unresolved", l)
	}
	_, err := s.Backlinks(ctx, "new")
	mustIs(t, "backlinks of a missing page", err, store.ErrNotFound)
}

func testKBTags(t *testing.T, s store.Store) {
	ctx := t.Context()
	newKB(t, s, "k", store.KBEveryone)
	newKB(t, s, "k2", store.KBEveryone)
	putPages(t, s, "k",
		store.Page{ID: "a", Tags: []string{"Billing", "api"}},
		store.Page{ID: "b", Tags: []string{"billing", "billing"}},
		store.Page{ID: "c", Tags: []string{"計費"}},
	)
	putPages(t, s, "k2", store.Page{ID: "d", Tags: []string{"billing"}})
	tags, err := s.ListTags(ctx, "k")
	mustNil(t, "tags", err)
	same(t, "tags", tags, []store.TagCount{{Tag: "api", Count: 1}, {Tag: "Billing", Count: 2}, {Tag: "計費", Count: 1}})
	for _, q := range []string{"billing", "BILLING", " Billing "} {
		ps, err := s.PagesByTag(ctx, "k", q)
		mustNil(t, "by tag", err)
		same(t, "pages tagged "+q, pageIDs(ps), []string{"a", "b"})
	}
	ps, err := s.PagesByTag(ctx, "k", "計費")
	mustNil(t, "by tag", err)
	same(t, "pages tagged 計費", pageIDs(ps), []string{"c"})
	ps, err = s.PagesByTag(ctx, "k", "bill")
	mustNil(t, "by tag", err)
	same(t, "a tag prefix matches nothing", pageIDs(ps), []string{})
	// Retagging removes the old entries.
	putPages(t, s, "k", store.Page{ID: "b", Tags: []string{"api"}})
	tags, _ = s.ListTags(ctx, "k")
	same(t, "tags after retag", tags, []store.TagCount{{Tag: "api", Count: 2}, {Tag: "Billing", Count: 1}, {Tag: "計費", Count: 1}})
}

func testKBChanges(t *testing.T, s store.Store) {
	ctx := t.Context()
	if v, err := s.PageVersion(ctx); err != nil || v != 0 {
		t.Fatalf("version of an empty store = %d, %v", v, err)
	}
	newKB(t, s, "k", store.KBEveryone)
	putPages(t, s, "k", store.Page{ID: "a"}, store.Page{ID: "b"}, store.Page{ID: "c"})
	v1, _ := s.PageVersion(ctx)
	cs := allChanges(t, s, 0)
	if len(cs) != 3 || cs[2].Seq != v1 {
		t.Fatalf("changes = %+v, want 3 ending at version %d", cs, v1)
	}
	putPages(t, s, "k", store.Page{ID: "a", Title: "A2"})
	mustNil(t, "delete b", s.DeletePage(ctx, "k", "b"))
	putPages(t, s, "k", store.Page{ID: "c"}) // unchanged: no change
	v2, _ := s.PageVersion(ctx)
	if v2 != v1+2 {
		t.Fatalf("version = %d, want %d (one update, one delete)", v2, v1+2)
	}
	since := allChanges(t, s, v1)
	same(t, "changes since v1", since, []store.PageChange{
		{Seq: v1 + 1, PageID: "a", KBID: "k"},
		{Seq: v1 + 2, PageID: "b", KBID: "k", Deleted: true},
	})
	// The log keeps the latest change of each page: a full replay sees
	// each once.
	all := allChanges(t, s, 0)
	same(t, "compacted log", all, []store.PageChange{
		{Seq: cs[2].Seq, PageID: "c", KBID: "k"},
		{Seq: v1 + 1, PageID: "a", KBID: "k"},
		{Seq: v1 + 2, PageID: "b", KBID: "k", Deleted: true},
	})
	// A page created again replaces its tombstone.
	putPages(t, s, "k", store.Page{ID: "b", Title: "back"})
	all = allChanges(t, s, 0)
	if len(all) != 3 || all[2].PageID != "b" || all[2].Deleted || all[2].Seq != v2+1 {
		t.Fatalf("log after re-creating b = %+v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("changes out of order: %+v", all)
		}
	}
	if getPage(t, s, "b").Version != v2+1 {
		t.Fatal("a page's version is not its latest change")
	}
}

func testKBDeleteBase(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustIs(t, "delete missing", s.DeleteKnowledgeBase(ctx, "nope"), store.ErrNotFound)
	newKB(t, s, "k", store.KBEveryone)
	newKB(t, s, "k2", store.KBEveryone)
	var pages []store.Page
	for i := range 300 {
		pages = append(pages, store.Page{ID: fmt.Sprintf("p%03d", i), Tags: []string{"t"}, Links: []string{"p000"}})
	}
	putPages(t, s, "k", pages...)
	putPages(t, s, "k2", store.Page{ID: "keep", Tags: []string{"t"}})
	_, _, err := s.PutKBSource(ctx, store.KBSource{KBID: "k", Key: "a.pdf", FileID: "f1"})
	mustNil(t, "source", err)
	before, _ := s.PageVersion(ctx)
	mustNil(t, "delete base", s.DeleteKnowledgeBase(ctx, "k"))
	_, err = s.GetKnowledgeBase(ctx, "k")
	mustIs(t, "get deleted base", err, store.ErrNotFound)
	_, err = s.GetPage(ctx, "p150")
	mustIs(t, "page of a deleted base", err, store.ErrNotFound)
	if srcs, _ := s.ListKBSources(ctx, "k"); len(srcs) != 0 {
		t.Fatalf("sources of a deleted base = %+v", srcs)
	}
	if tags, _ := s.ListTags(ctx, "k"); len(tags) != 0 {
		t.Fatalf("tags of a deleted base = %+v", tags)
	}
	deleted := 0
	for _, c := range allChanges(t, s, before) {
		if c.Deleted && c.KBID == "k" {
			deleted++
		}
	}
	if deleted != 300 {
		t.Fatalf("%d deletion changes, want 300", deleted)
	}
	if p := getPage(t, s, "keep"); p.KBID != "k2" {
		t.Fatalf("other base's page = %+v", p)
	}
	// The id is free again, and the pages' ids too.
	newKB(t, s, "k", store.KBEveryone)
	putPages(t, s, "k2", store.Page{ID: "p000"})
}

func testKBSources(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, _, err := s.PutKBSource(ctx, store.KBSource{KBID: "nope", Key: "a.pdf", FileID: "f"})
	mustIs(t, "source of a missing base", err, store.ErrNotFound)
	newKB(t, s, "k", store.KBEveryone)
	src := store.KBSource{KBID: "k", Key: "docs/a.pdf", FileID: "f1", Filename: "a.pdf", ContentType: "application/pdf", Size: 10, UpdatedAt: t0}
	_, replaced, err := s.PutKBSource(ctx, src)
	mustNil(t, "put", err)
	if replaced {
		t.Fatal("a first put replaced something")
	}
	got, err := s.GetKBSource(ctx, "k", "docs/a.pdf")
	mustNil(t, "get", err)
	got.UpdatedAt = got.UpdatedAt.UTC()
	same(t, "source", got, src)
	src2 := src
	src2.FileID = "f2"
	prev, replaced, err := s.PutKBSource(ctx, src2)
	mustNil(t, "replace", err)
	if !replaced || prev.FileID != "f1" {
		t.Fatalf("replace returned %+v, %v; want the f1 record", prev, replaced)
	}
	_, err = s.GetKBSource(ctx, "k", "docs/b.pdf")
	mustIs(t, "get missing", err, store.ErrNotFound)
	_, _, err = s.PutKBSource(ctx, store.KBSource{KBID: "k", Key: "b", FileID: "f3"})
	mustNil(t, "put b", err)
	list, err := s.ListKBSources(ctx, "k")
	mustNil(t, "list", err)
	if len(list) != 2 || list[0].Key != "b" || list[1].FileID != "f2" {
		t.Fatalf("list = %+v", list)
	}
}

func testKBLarge(t *testing.T, s store.Store) {
	newKB(t, s, "k", store.KBEveryone)
	var pages []store.Page
	for i := range 1000 {
		pages = append(pages, store.Page{ID: fmt.Sprintf("page-%04d", i), Title: fmt.Sprintf("Page %d", i), Body: fmt.Sprintf("%d text", i)})
	}
	r := putPages(t, s, "k", pages...)
	same(t, "result", r, store.PutPagesResult{Created: 1000})
	if kb, _ := s.GetKnowledgeBase(t.Context(), "k"); kb.PageCount != 1000 {
		t.Fatalf("page count %d", kb.PageCount)
	}
	if n := len(allChanges(t, s, 0)); n != 1000 {
		t.Fatalf("%d changes, want 1000", n)
	}
	var all []store.Page
	for after := ""; ; {
		ps, err := s.ListPages(t.Context(), "k", after, 333)
		mustNil(t, "list", err)
		if len(ps) == 0 {
			break
		}
		all = append(all, ps...)
		after = ps[len(ps)-1].ID
	}
	if len(all) != 1000 || all[999].ID != "page-0999" {
		t.Fatalf("listed %d pages", len(all))
	}
}

// testKBConcurrent writes from several goroutines: changes stay numbered
// in the order they become visible, and each page's latest is in the log.
func testKBConcurrent(t *testing.T, s store.Store) {
	newKB(t, s, "k", store.KBEveryone)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var mu sync.Mutex
	var seen []uint64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				p := store.Page{ID: fmt.Sprintf("w%d-%d", w, i%5), Title: fmt.Sprint(i)}
				if _, err := s.PutPages(t.Context(), "k", []store.Page{p}, t0); err != nil {
					errs <- err
					return
				}
				v, err := s.PageVersion(t.Context())
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cs := allChanges(t, s, 0)
	if len(cs) != 40 {
		t.Fatalf("%d changes in the log, want 40 (one per page)", len(cs))
	}
	v, _ := s.PageVersion(t.Context())
	if v != 160 || slices.Max(seen) != 160 {
		t.Fatalf("version %d, want 160 writes", v)
	}
	for _, c := range cs {
		if p := getPage(t, s, c.PageID); p.Version != c.Seq || p.Title != "19" && p.Title != "15" && p.Title != "16" && p.Title != "17" && p.Title != "18" {
			t.Fatalf("change %+v, page %+v: want the page's last write", c, p)
		}
	}
}

func testKBClosed(t *testing.T, s store.Store) {
	ctx := t.Context()
	newKB(t, s, "k", store.KBEveryone)
	mustNil(t, "close", s.Close())
	calls := []struct {
		desc string
		call func() error
	}{
		{"PutKnowledgeBase", func() error { return s.PutKnowledgeBase(ctx, store.KnowledgeBase{ID: "k"}) }},
		{"GetKnowledgeBase", func() error { _, err := s.GetKnowledgeBase(ctx, "k"); return err }},
		{"ListKnowledgeBases", func() error { _, err := s.ListKnowledgeBases(ctx); return err }},
		{"DeleteKnowledgeBase", func() error { return s.DeleteKnowledgeBase(ctx, "k") }},
		{"PutPages", func() error { _, err := s.PutPages(ctx, "k", []store.Page{{ID: "p"}}, t0); return err }},
		{"DeletePage", func() error { return s.DeletePage(ctx, "k", "p") }},
		{"GetPage", func() error { _, err := s.GetPage(ctx, "p"); return err }},
		{"ListPages", func() error { _, err := s.ListPages(ctx, "k", "", 1); return err }},
		{"PagesByTag", func() error { _, err := s.PagesByTag(ctx, "k", "t"); return err }},
		{"ListTags", func() error { _, err := s.ListTags(ctx, "k"); return err }},
		{"ResolveLinks", func() error { _, err := s.ResolveLinks(ctx, store.Page{ID: "p", KBID: "k"}); return err }},
		{"Backlinks", func() error { _, err := s.Backlinks(ctx, "p"); return err }},
		{"PageChanges", func() error { _, err := s.PageChanges(ctx, 0, 1); return err }},
		{"PageVersion", func() error { _, err := s.PageVersion(ctx); return err }},
		{"PutKBSource", func() error { _, _, err := s.PutKBSource(ctx, store.KBSource{KBID: "k", Key: "a"}); return err }},
		{"GetKBSource", func() error { _, err := s.GetKBSource(ctx, "k", "a"); return err }},
		{"ListKBSources", func() error { _, err := s.ListKBSources(ctx, "k"); return err }},
	}
	for _, c := range calls {
		t.Run(c.desc, func(t *testing.T) { mustIs(t, c.desc, c.call(), store.ErrClosed) })
	}
}
