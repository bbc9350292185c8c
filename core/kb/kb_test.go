package kb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *badgerstore.Store {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, a := range []string{"acct-a", "acct-b"} {
		if err := st.CreateAccount(t.Context(), store.Account{ID: a, Status: store.AccountActive, CreatedAt: t0}, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func openFiles(t *testing.T) *files.Store {
	t.Helper()
	fs, err := files.Open(t.Context(), files.Options{URL: "mem://", Secret: []byte("kb-test-secret-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Close() })
	return fs
}

func openService(t *testing.T, st Store, fs Files, path string) *Service {
	t.Helper()
	s, err := Open(t.Context(), Options{Store: st, Files: fs, IndexPath: path, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func base(t *testing.T, s *Service, id string, readers ...string) {
	t.Helper()
	_, _, err := s.PutBase(t.Context(), id, BaseSpec{Readers: &readers})
	must(t, "put base "+id, err)
}

func put(t *testing.T, s *Service, kb string, pages ...PageInput) {
	t.Helper()
	_, err := s.PutPages(t.Context(), kb, pages)
	must(t, "put pages", err)
}

func doSearch(t *testing.T, s *Service, account string, r SearchRequest) SearchResult {
	t.Helper()
	if r.Limit == 0 {
		r.Limit = 20
	}
	res, err := s.Search(t.Context(), account, r)
	must(t, "search "+r.Query, err)
	return res
}

func hitIDs(res SearchResult) []string {
	out := []string{}
	for _, h := range res.Hits {
		out = append(out, h.Page.ID)
	}
	return out
}

func TestSearchRanking(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "docs", "*")
	put(t, s, "docs",
		PageInput{ID: "noise", Title: "Unrelated", Body: "billing billing billing and more billing about billing " + strings.Repeat("filler ", 50)},
		PageInput{ID: "billing", Title: "Billing", Body: "How the wallet is charged."},
		PageInput{ID: "keys", Title: "API keys", Aliases: []string{"credentials"}, Body: "A key authenticates."},
		PageInput{ID: "limits", Title: "Limits", Summary: "Rate limits per account", Tags: []string{"quota"}},
		// A long guide with a section on retries, and a short note that
		// names them in passing, again and again.
		PageInput{ID: "guide", Title: "Operator guide", Body: strings.Repeat("Setting up the gateway takes a config file. ", 60) +
			"\n\n## Idempotent retries\n\nA retry with the same Idempotency-Key gets the first answer.\n\n```\n# idempotency in a comment is no heading\n```\n"},
		PageInput{ID: "note", Title: "Release note", Body: "Idempotency fixes; idempotency tests; idempotency docs."},
		PageInput{ID: "code", Title: "Snippets", Body: "```sh\n# Idempotency\ncurl ...\n```\nNothing else about idempotency here, only code and more code and more code."},
	)
	tests := []struct {
		desc  string
		q     string
		first string
		ids   []string // when set, the whole result in order
	}{
		{desc: "a title match beats a body full of the word", q: "billing", first: "billing", ids: []string{"billing", "noise"}},
		{desc: "aliases are searched", q: "credentials", ids: []string{"keys"}},
		{desc: "tags are searched", q: "quota", ids: []string{"limits"}},
		{desc: "summaries are searched", q: "rate", ids: []string{"limits"}},
		{desc: "English stemming: keys finds key", q: "key", first: "keys"},
		{desc: "case does not matter", q: "WALLET", ids: []string{"billing"}},
		{desc: "nothing matches", q: "zebra", ids: []string{}},
		{desc: "stop words alone match nothing", q: "the and", ids: []string{}},
		{desc: "a heading beats mentions in passing", q: "idempotent retries", first: "guide"},
		{desc: "a heading of the query's word, stemmed", q: "idempotency", first: "guide"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			res := doSearch(t, s, "acct-a", SearchRequest{Query: tc.q, KB: "docs"})
			got := hitIDs(res)
			if tc.first != "" && (len(got) == 0 || got[0] != tc.first) {
				t.Fatalf("results %v, want %s first", got, tc.first)
			}
			if tc.ids != nil && strings.Join(got, ",") != strings.Join(tc.ids, ",") {
				t.Fatalf("results %v, want %v", got, tc.ids)
			}
			if int(res.Total) != len(got) {
				t.Fatalf("total %d, results %d", res.Total, len(got))
			}
			for i := 1; i < len(res.Hits); i++ {
				if res.Hits[i].Score > res.Hits[i-1].Score {
					t.Fatalf("scores not descending: %+v", res.Hits)
				}
			}
		})
	}
}

func TestSearchPaging(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "docs", "*")
	var pages []PageInput
	for i := range 30 {
		pages = append(pages, PageInput{ID: fmt.Sprintf("p%02d", i), Title: "Gateway page", Body: strings.Repeat("gateway ", i+1)})
	}
	put(t, s, "docs", pages...)
	first := doSearch(t, s, "acct-a", SearchRequest{Query: "gateway", KB: "docs", Limit: 20})
	second := doSearch(t, s, "acct-a", SearchRequest{Query: "gateway", KB: "docs", Limit: 20, Offset: 20})
	if first.Total != 30 || second.Total != 30 || len(first.Hits) != 20 || len(second.Hits) != 10 {
		t.Fatalf("total %d/%d, pages of %d and %d; want 30, 20 and 10", first.Total, second.Total, len(first.Hits), len(second.Hits))
	}
	seen := map[string]bool{}
	for _, h := range append(first.Hits, second.Hits...) {
		if seen[h.Page.ID] {
			t.Fatalf("page %s on both pages", h.Page.ID)
		}
		seen[h.Page.ID] = true
	}
}

func TestSearchCJK(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "docs", "*")
	put(t, s, "docs",
		PageInput{ID: "jifei", Title: "计费规则", Body: "每次请求按令牌计费。余额不足时返回 402。Billing in English too."},
		PageInput{ID: "nihongo", Title: "料金", Body: "トークンごとに課金されます。"},
		PageInput{ID: "other", Title: "Other", Body: "计算机"},
	)
	tests := []struct {
		q    string
		want []string
	}{
		{"计费", []string{"jifei"}},
		{"令牌", []string{"jifei"}},
		{"余额不足", []string{"jifei"}},
		{"课金", []string{}}, // simplified 课 is not 課
		{"課金", []string{"nihongo"}},
		{"トークン", []string{"nihongo"}},
		{"billing", []string{"jifei"}},
	}
	for _, tc := range tests {
		t.Run(tc.q, func(t *testing.T) {
			got := hitIDs(doSearch(t, s, "acct-a", SearchRequest{Query: tc.q, KB: "docs"}))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("results %v, want %v", got, tc.want)
			}
		})
	}
	res := doSearch(t, s, "acct-a", SearchRequest{Query: "计费", KB: "docs"})
	if sn := res.Hits[0].Snippet; !strings.Contains(sn, "<mark>计费</mark>") {
		t.Fatalf("snippet %q does not mark 计费", sn)
	}
}

func TestSnippet(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "docs", "*")
	long := strings.Repeat("Lorem ipsum dolor sit amet. ", 40)
	put(t, s, "docs",
		PageInput{ID: "mid", Title: "Mid", Body: long + "The <b>wallet</b> holds credits. " + long},
		PageInput{ID: "title-only", Title: "Wallet", Body: long},
	)
	res := doSearch(t, s, "acct-a", SearchRequest{Query: "wallet credit", KB: "docs"})
	byID := map[string]string{}
	for _, h := range res.Hits {
		byID[h.Page.ID] = h.Snippet
	}
	sn := byID["mid"]
	if !strings.Contains(sn, "&lt;b&gt;<mark>wallet</mark>&lt;/b&gt;") || !strings.Contains(sn, "<mark>credits</mark>") {
		t.Fatalf("snippet %q: want the matches marked and the body's HTML escaped", sn)
	}
	if !strings.HasPrefix(sn, "…") || !strings.HasSuffix(sn, "…") || len([]rune(sn)) > 260 {
		t.Fatalf("snippet %q: want a fragment of the middle, cut on both sides", sn)
	}
	if sn := byID["title-only"]; !strings.HasPrefix(sn, "Lorem ipsum") || !strings.HasSuffix(sn, "…") {
		t.Fatalf("snippet without a body match = %q, want the body's start", sn)
	}
	// A long body: the match near its end is found without analyzing it all.
	huge := strings.Repeat("Lorem ipsum dolor sit amet, 数据。 ", 8000) + "The Turnstile counts callers. " + long
	put(t, s, "docs", PageInput{ID: "huge", Title: "Huge", Body: huge})
	res = doSearch(t, s, "acct-a", SearchRequest{Query: "turnstile", KB: "docs"})
	if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippet, "<mark>Turnstile</mark>") || !strings.HasPrefix(res.Hits[0].Snippet, "…") {
		t.Fatalf("snippet of a long body = %+v", res.Hits)
	}
}

func TestReadability(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "open", "*")
	base(t, s, "private", "acct-a")
	put(t, s, "open", PageInput{ID: "o1", Title: "Shared gateway notes", Tags: []string{"t"}, Links: []string{"o2"}})
	put(t, s, "open", PageInput{ID: "o2", Title: "Target"})
	put(t, s, "private", PageInput{ID: "p1", Title: "Secret gateway plans", Tags: []string{"t"},
		Source: &store.PageSource{R2Key: "plan.pdf"}})
	ctx := t.Context()

	// acct-b sees only the open base; the private one is missing to it.
	kbs, err := s.ReadableBases(ctx, "acct-b")
	must(t, "bases", err)
	if len(kbs) != 1 || kbs[0].ID != "open" {
		t.Fatalf("bases of acct-b = %+v", kbs)
	}
	got := hitIDs(doSearch(t, s, "acct-b", SearchRequest{Query: "gateway"}))
	if strings.Join(got, ",") != "o1" {
		t.Fatalf("acct-b searching every base found %v, want o1", got)
	}
	got = hitIDs(doSearch(t, s, "acct-a", SearchRequest{Query: "gateway"}))
	if len(got) != 2 {
		t.Fatalf("acct-a searching every base found %v, want both", got)
	}
	unreadable := []struct {
		desc string
		err  error
	}{
		{"search", func() error {
			_, err := s.Search(ctx, "acct-b", SearchRequest{Query: "x", KB: "private", Limit: 1})
			return err
		}()},
		{"tags", func() error { _, err := s.Tags(ctx, "acct-b", "private"); return err }()},
		{"by tag", func() error { _, err := s.PagesByTag(ctx, "acct-b", "private", "t"); return err }()},
		{"page", func() error { _, err := s.Page(ctx, "acct-b", "private", "p1"); return err }()},
		{"page without kb", func() error { _, err := s.Page(ctx, "acct-b", "", "p1"); return err }()},
		{"page of another base", func() error { _, err := s.Page(ctx, "acct-a", "open", "p1"); return err }()},
		{"pages", func() error { _, err := s.Pages(ctx, "acct-b", "private", []string{"p1"}); return err }()},
		{"backlinks", func() error { _, err := s.Backlinks(ctx, "acct-b", "", "p1"); return err }()},
		{"source", func() error { _, err := s.Source(ctx, "acct-b", "", "p1", "http://gw"); return err }()},
		{"missing base", func() error { _, err := s.Tags(ctx, "acct-a", "nope"); return err }()},
		{"missing page", func() error { _, err := s.Page(ctx, "acct-a", "", "nope"); return err }()},
		{"no source", func() error { _, err := s.Source(ctx, "acct-a", "", "o1", "http://gw"); return err }()},
		{"source not uploaded", func() error { _, err := s.Source(ctx, "acct-a", "", "p1", "http://gw"); return err }()},
	}
	for _, tc := range unreadable {
		t.Run(tc.desc, func(t *testing.T) {
			if !errors.Is(tc.err, ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", tc.err)
			}
		})
	}
	// A missing and an unreadable base read the same.
	_, e1 := s.Tags(ctx, "acct-b", "private")
	_, e2 := s.Tags(ctx, "acct-b", "private-x")
	if strings.ReplaceAll(e1.Error(), "private", "X") != strings.ReplaceAll(e2.Error(), "private-x", "X") {
		t.Fatalf("unreadable %q and missing %q differ", e1, e2)
	}
	ps, err := s.Pages(ctx, "acct-b", "", []string{"p1", "o1", "nope"})
	must(t, "pages", err)
	if len(ps) != 1 || ps[0].ID != "o1" {
		t.Fatalf("pages of acct-b = %+v, want o1 only", ps)
	}
	ps, err = s.PagesByTag(ctx, "acct-a", "", "t")
	must(t, "by tag", err)
	if len(ps) != 2 {
		t.Fatalf("acct-a's pages tagged t = %+v", ps)
	}
	bl, err := s.Backlinks(ctx, "acct-b", "open", "o2")
	must(t, "backlinks", err)
	if len(bl) != 1 || bl[0].ID != "o1" {
		t.Fatalf("backlinks = %+v", bl)
	}
}

func TestSources(t *testing.T) {
	st, fs := openStore(t), openFiles(t)
	s := openService(t, st, fs, "")
	base(t, s, "docs", "acct-a")
	put(t, s, "docs", PageInput{ID: "p", Title: "P", Source: &store.PageSource{R2Key: "src/p.pdf", Filename: "p.pdf", Locator: "page 2"}})
	ctx := t.Context()
	_, err := s.PutSource(ctx, "nope", "src/p.pdf", "", "", strings.NewReader("x"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("source of a missing base: %v", err)
	}
	first, err := s.PutSource(ctx, "docs", "src/p.pdf", "", "application/pdf", strings.NewReader("%PDF-1 first"))
	must(t, "put source", err)
	if first.Filename != "p.pdf" || first.Size != 12 {
		t.Fatalf("source = %+v", first)
	}
	second, err := s.PutSource(ctx, "docs", "src/p.pdf", "", "application/pdf", strings.NewReader("%PDF-1 second"))
	must(t, "replace source", err)
	if _, err := fs.Stat(ctx, first.FileID); !errors.Is(err, files.ErrNotFound) {
		t.Fatalf("the replaced file is still there: %v", err)
	}
	link, err := s.Source(ctx, "acct-a", "docs", "p", "http://gw.test")
	must(t, "source link", err)
	if !strings.HasPrefix(link.URL, "http://gw.test/files/"+second.FileID+"?expires=") || link.Filename != "p.pdf" ||
		link.Locator != "page 2" || link.R2Key != "src/p.pdf" {
		t.Fatalf("link = %+v", link)
	}
	if d := time.Until(link.ExpiresAt); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("link expires in %v, want an hour", d)
	}
	must(t, "delete base", s.DeleteBase(ctx, "docs"))
	if _, err := fs.Stat(ctx, second.FileID); !errors.Is(err, files.ErrNotFound) {
		t.Fatalf("a deleted base's source file is still there: %v", err)
	}
}

func TestPutPagesRefusals(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "a", "*")
	base(t, s, "b", "*")
	put(t, s, "a", PageInput{ID: "taken"})
	ctx := t.Context()
	tests := []struct {
		desc     string
		kb       string
		pages    []PageInput
		invalid  bool
		conflict bool
		notFound bool
	}{
		{desc: "empty id", kb: "a", pages: []PageInput{{ID: ""}}, invalid: true},
		{desc: "slash in id", kb: "a", pages: []PageInput{{ID: "a/b"}}, invalid: true},
		{desc: "comma in id", kb: "a", pages: []PageInput{{ID: "a,b"}}, invalid: true},
		{desc: "spaces around id", kb: "a", pages: []PageInput{{ID: " a"}}, invalid: true},
		{desc: "NUL in body", kb: "a", pages: []PageInput{{ID: "x", Body: "a\x00b"}}, invalid: true},
		{desc: "a page twice", kb: "a", pages: []PageInput{{ID: "x"}, {ID: "x"}}, invalid: true},
		{desc: "too many pages", kb: "a", pages: make([]PageInput, MaxPagesPerWrite+1), invalid: true},
		{desc: "another base's page id", kb: "b", pages: []PageInput{{ID: "fresh"}, {ID: "taken"}}, conflict: true},
		{desc: "missing base", kb: "nope", pages: []PageInput{{ID: "x"}}, notFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := s.PutPages(ctx, tc.kb, tc.pages)
			if IsInvalid(err) != tc.invalid || IsConflict(err) != tc.conflict || errors.Is(err, ErrNotFound) != tc.notFound {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := s.Page(ctx, "acct-a", "", "fresh"); !errors.Is(err, ErrNotFound) {
		t.Fatal("a refused write wrote a page")
	}
	for _, id := range []string{"計費規則", "Page with spaces", "v1.2_notes-(draft)"} {
		if err := CheckPageID(id); err != nil {
			t.Errorf("id %q refused: %v", id, err)
		}
	}
	for _, id := range []string{"default", "team-docs", "kb.v2", "A_1"} {
		if err := CheckKBID(id); err != nil {
			t.Errorf("kb id %q refused: %v", id, err)
		}
	}
	for _, id := range []string{"", "-x", "a b", "a/b", strings.Repeat("x", 65), "計費"} {
		if err := CheckKBID(id); err == nil {
			t.Errorf("kb id %q accepted", id)
		}
	}
	_, _, err := s.PutBase(ctx, "c", BaseSpec{Readers: &[]string{"acct-nope"}})
	if !IsInvalid(err) {
		t.Fatalf("a reader that is no account: %v", err)
	}
}

// TestIndexRebuild: the index beside the store is reused when current and
// rebuilt from the store when missing, of another schema, or ahead of
// the store.
func TestIndexRebuild(t *testing.T) {
	st, fs := openStore(t), openFiles(t)
	dir := filepath.Join(t.TempDir(), "kb.bleve")
	s, err := Open(t.Context(), Options{Store: st, Files: fs, IndexPath: dir})
	must(t, "open", err)
	base(t, s, "docs", "*")
	put(t, s, "docs", PageInput{ID: "a", Title: "Alpha gateway"}, PageInput{ID: "b", Title: "Beta gateway"})
	must(t, "close", s.Close())

	found := func(t *testing.T, s *Service, want int) {
		t.Helper()
		if n := len(doSearch(t, s, "acct-a", SearchRequest{Query: "gateway", KB: "docs"}).Hits); n != want {
			t.Fatalf("%d hits, want %d", n, want)
		}
	}
	steps := []struct {
		desc  string
		setup func(t *testing.T)
		st    Store
		want  int
	}{
		{"reopened as it was", func(t *testing.T) {}, st, 2},
		{"missing", func(t *testing.T) { must(t, "remove", os.RemoveAll(dir)) }, st, 2},
		{"older schema", func(t *testing.T) {
			bi, err := bleve.Open(dir)
			must(t, "open bleve", err)
			must(t, "set schema", bi.SetInternal(keySchema, []byte("0")))
			must(t, "close bleve", bi.Close())
		}, st, 2},
		{"unreadable", func(t *testing.T) {
			must(t, "remove", os.RemoveAll(dir))
			must(t, "mkdir", os.MkdirAll(dir, 0o700))
			must(t, "garbage", os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte("{not json"), 0o600))
		}, st, 2},
		{"ahead of the store", func(t *testing.T) {}, openStore(t), 0},
	}
	for _, step := range steps {
		t.Run(step.desc, func(t *testing.T) {
			step.setup(t)
			s, err := Open(t.Context(), Options{Store: step.st, Files: fs, IndexPath: dir})
			must(t, "open", err)
			defer s.Close()
			if step.want > 0 {
				found(t, s, step.want)
			} else if _, err := s.Search(t.Context(), "acct-a", SearchRequest{Query: "gateway", KB: "docs", Limit: 5}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("search on an empty store: %v", err)
			}
			bi := s.idx.bi
			if n, _ := bi.DocCount(); int(n) != step.want {
				t.Fatalf("index holds %d documents, want %d", n, step.want)
			}
		})
	}
}

// TestFollow: two gateways on one store, each with its own index; a write
// through one reaches the other's search when it follows the change log.
func TestFollow(t *testing.T) {
	st, fs := openStore(t), openFiles(t)
	a := openService(t, st, fs, "")
	b, err := Open(t.Context(), Options{Store: st, Files: fs, FollowEvery: 5 * time.Millisecond})
	must(t, "open b", err)
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	base(t, a, "docs", "*")
	put(t, a, "docs", PageInput{ID: "x", Title: "Followed page"})
	waitHits := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			res, err := b.Search(t.Context(), "acct-a", SearchRequest{Query: "followed", KB: "docs", Limit: 5})
			if err == nil && len(res.Hits) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance b never saw %d hits (last: %+v, %v)", want, res.Hits, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitHits(1)
	must(t, "delete", a.DeletePage(t.Context(), "docs", "x"))
	waitHits(0)
	// Many changes at once: b applies them a batch at a time.
	var pages []PageInput
	for i := range 2500 {
		pages = append(pages, PageInput{ID: fmt.Sprintf("p%d", i), Title: "followed"})
	}
	for i := 0; i < len(pages); i += MaxPagesPerWrite {
		put(t, a, "docs", pages[i:min(i+MaxPagesPerWrite, len(pages))]...)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := b.Search(t.Context(), "acct-a", SearchRequest{Query: "followed", KB: "docs", Limit: 1})
		must(t, "search", err)
		if res.Total == 2500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b has %d of 2500 pages", res.Total)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSeedBase(t *testing.T) {
	st := openStore(t)
	s := openService(t, st, openFiles(t), "")
	fsys := os.DirFS("testdata/folder")
	res, err := s.SeedBase(t.Context(), "default", "Docs", fsys)
	must(t, "seed", err)
	if res.Created == 0 {
		t.Fatalf("seed created nothing: %+v", res)
	}
	kb, err := s.Base(t.Context(), "default")
	must(t, "base", err)
	if !kb.ReadableBy("anyone") || kb.Name != "Docs" {
		t.Fatalf("seeded base = %+v", kb)
	}
	// An operator's change to the base survives the next seed; pages are
	// updated in place.
	none := []string{"acct-a"}
	_, _, err = s.PutBase(t.Context(), "default", BaseSpec{Readers: &none})
	must(t, "restrict", err)
	res, err = s.SeedBase(t.Context(), "default", "Docs", fsys)
	must(t, "seed again", err)
	if res.Created != 0 || res.Updated != 0 || res.Unchanged == 0 {
		t.Fatalf("second seed = %+v, want everything unchanged", res)
	}
	if kb, _ := s.Base(t.Context(), "default"); kb.ReadableBy("acct-b") {
		t.Fatal("the seed reset the operator's readers")
	}
	p, err := s.Page(t.Context(), "acct-a", "default", "billing")
	must(t, "page", err)
	if p.Summary == "" {
		t.Fatal("a page without a summary did not get its first paragraph")
	}
}

// TestBM25 checks that the index scores with BM25 (bleve's explanation
// names the model) and that the title's boost is applied.
func TestBM25(t *testing.T) {
	s := openService(t, openStore(t), openFiles(t), "")
	base(t, s, "docs", "*")
	put(t, s, "docs", PageInput{ID: "a", Title: "Gateway", Body: "text"}, PageInput{ID: "b", Title: "Other", Body: "gateway"})
	q := bleve.NewMatchQuery("gateway")
	q.SetField("title")
	req := bleve.NewSearchRequest(q)
	req.Explain = true
	res, err := s.idx.bi.Search(req)
	must(t, "search", err)
	if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Expl.String(), "bm25") {
		t.Fatalf("explanation does not name bm25: %v %v", res.Hits, res.Hits[0].Expl)
	}
	r := doSearch(t, s, "acct-a", SearchRequest{Query: "gateway", KB: "docs"})
	if len(r.Hits) != 2 || r.Hits[0].Page.ID != "a" || r.Hits[0].Score < 2*r.Hits[1].Score {
		t.Fatalf("hits %+v: want the title match first, well ahead", r.Hits)
	}
}
