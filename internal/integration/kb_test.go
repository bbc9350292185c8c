package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// The knowledge base against the real binary: a corpus imported through
// the admin API (base "public", every account) and through `tollgate kb
// import` (base "team", account A only), then every REST endpoint and the
// MCP server with its six tools, caps checked by name.

const kbFillers = 60

// longBody is 10,000 characters of multi-byte text: caps count characters.
var longBody = strings.Repeat("ab€ ", 2500)

// writeCorpus writes the Markdown folder `tollgate kb import` reads.
func writeCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"billing-guide.md": `---
title: Billing
summary: How credits are held and charged.
tags: [billing, money]
aliases: [Payments]
confidence: high
source:
  r2_key: sources/billing.pdf
  filename: billing.pdf
  locator: page 2
---
# Billing

Every call holds its worst case, then settles. Keys are described in [[API keys]];
the [[Nowhere page]] does not exist yet. The wallet is the account's balance.
`,
		"keys.md": `---
title: API keys
tags: [auth, Billing]
aliases: [credentials, tokens]
needs_review: true
---
A key authenticates every call. Pay with [[payments|the billing page]].
`,
		"cjk.md": `---
title: 计费规则
tags: [billing]
---
每次请求按令牌计费。余额不足时返回 402。见 [[Billing]]。
`,
		"long.md":             "---\ntitle: Long page\n---\n" + longBody,
		"sources/billing.pdf": "%PDF-1.4 billing source bytes",
	}
	for i := range kbFillers {
		files[fmt.Sprintf("filler/filler-%02d.md", i)] = fmt.Sprintf("---\ntags: [filler]\n---\n# Filler %02d\n\nThe turnstile routes calls, number %d.\n", i, i)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The pdf sits beside its page in the folder's sources/ dir.
	return dir
}

type kbEnv struct {
	g            *testgw.Gateway
	acctA, acctB string
	keyA, keyB   string
	keyZero      string // an account with no balance
	cli          func(args ...string) (string, error)
	corpus       string
}

func kbGet(t *testing.T, e *kbEnv, key, path string) call {
	t.Helper()
	return do(t, "GET", e.g.URL+"/api/v1/ext/wiki"+path, bearer(key), "")
}

func kbJSONOf[T any](t *testing.T, c call) T {
	t.Helper()
	var v T
	if c.Status != 200 {
		t.Fatalf("status %d: %s", c.Status, c.Body)
	}
	if err := json.Unmarshal(c.Body, &v); err != nil {
		t.Fatalf("not JSON: %s", c.Body)
	}
	return v
}

type kbPage struct {
	ID            string   `json:"id"`
	KBID          string   `json:"kb_id"`
	Title         string   `json:"title"`
	Summary       string   `json:"summary"`
	Tags          []string `json:"tags"`
	Aliases       []string `json:"aliases"`
	Links         []string `json:"links"`
	Body          *string  `json:"body"`
	BodyTruncated *bool    `json:"body_truncated"`
	Confidence    string   `json:"confidence"`
	NeedsReview   bool     `json:"needs_review"`
	Snippet       *string  `json:"snippet"`
	Score         *float64 `json:"score"`
	Source        *struct {
		R2Key    string `json:"r2_key"`
		Filename string `json:"filename"`
		Locator  string `json:"locator"`
	} `json:"source"`
	OutgoingLinks []struct {
		ID       string `json:"id"`
		Resolved bool   `json:"resolved"`
		Title    string `json:"title"`
	} `json:"outgoing_links"`
}

type kbList[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

type kbSearch struct {
	Query     string   `json:"query"`
	TotalHits int      `json:"total_hits"`
	Offset    int      `json:"offset"`
	Returned  int      `json:"returned"`
	HasMore   bool     `json:"has_more"`
	Results   []kbPage `json:"results"`
}

func startKB(t *testing.T) *kbEnv {
	t.Helper()
	g := testgw.Start(t, testgw.Options{})
	e := &kbEnv{g: g, acctA: g.Account(""), acctB: g.Account(""), corpus: writeCorpus(t)}
	_, e.keyA = g.Key(e.acctA, nil)
	_, e.keyB = g.Key(e.acctB, nil)
	zero := g.Account("0")
	_, e.keyZero = g.Key(zero, nil)
	bin := filepath.Join(testgw.Build(t), "tollgate")
	e.cli = func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"kb", "--url", g.URL, "--token", testgw.AdminToken}, args...)...)
		cmd.Env = append(os.Environ(), "TOLLGATE_ADMIN_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	return e
}

func TestKnowledgeBase(t *testing.T) {
	e := startKB(t)
	g := e.g

	t.Run("import through the admin API", func(t *testing.T) {
		var kb struct {
			ID        string   `json:"id"`
			Readers   []string `json:"readers"`
			PageCount int      `json:"page_count"`
		}
		if st := g.Admin("PUT", "/kbs/public", map[string]any{"name": "Public notes", "readers": []string{"*"}}, &kb); st != 201 || kb.ID != "public" {
			t.Fatalf("create base: %d %+v", st, kb)
		}
		if st := g.Admin("PUT", "/kbs/public", map[string]any{"name": "Public notes"}, &kb); st != 200 || len(kb.Readers) != 1 || kb.Readers[0] != "*" {
			t.Fatalf("update base keeps readers: %d %+v", st, kb)
		}
		pages := []map[string]any{
			{"id": "turnstile", "title": "Turnstile", "summary": "The public page", "tags": []string{"public"},
				"aliases": []string{"Gate"}, "links": []string{"lobby", "Missing target"}, "body": "The turnstile admits one caller at a time.",
				"source": map[string]any{"r2_key": "docs/turnstile.txt", "filename": "turnstile.txt", "locator": "line 1"}},
			{"id": "lobby", "title": "Lobby", "body": "Wait here; see [[Gate]].", "links": []string{"gate"}, "needs_review": true},
		}
		var res struct{ Created, Updated, Unchanged int }
		if st := g.Admin("POST", "/kbs/public/pages", map[string]any{"pages": pages}, &res); st != 200 || res.Created != 2 {
			t.Fatalf("post pages: %d %+v", st, res)
		}
		if st := g.Admin("POST", "/kbs/public/pages", map[string]any{"pages": pages[:1]}, &res); st != 200 || res.Unchanged != 1 {
			t.Fatalf("post again: %d %+v", st, res)
		}
		req, _ := http.NewRequest("PUT", g.URL+"/admin/v1/kbs/public/sources/docs/turnstile.txt", strings.NewReader("turnstile source text"))
		req.Header.Set("Authorization", "Bearer "+testgw.AdminToken)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("put source: %d", resp.StatusCode)
		}
		if st := g.AdminStatus("POST", "/kbs/nope/pages", map[string]any{"pages": pages}, nil); st != 404 {
			t.Fatalf("pages of a missing base: %d", st)
		}
		if st := g.AdminStatus("PUT", "/kbs/bad%20id", map[string]any{}, nil); st != 400 {
			t.Fatalf("a bad base id: %d", st)
		}
		if st := g.AdminStatus("PUT", "/kbs/x", map[string]any{"readers": []string{"acct_nope"}}, nil); st != 400 {
			t.Fatalf("a reader that is no account: %d", st)
		}
		if st := g.AdminStatus("POST", "/kbs/public/pages", map[string]any{"pages": []map[string]any{{"id": "x", "oops": 1}}}, nil); st != 400 {
			t.Fatalf("an unknown page field: %d", st)
		}
	})

	t.Run("import through tollgate kb import", func(t *testing.T) {
		out, err := e.cli("import", "--kb", "team", "--readers", e.acctA, e.corpus)
		if err != nil {
			t.Fatalf("kb import: %v\n%s", err, out)
		}
		want := fmt.Sprintf("imported %d pages into team: %d created, 0 updated, 0 unchanged; 1 source file uploaded", 4+kbFillers, 4+kbFillers)
		if !strings.Contains(out, "created knowledge base team") || !strings.Contains(out, want) ||
			!strings.Contains(out, "1 link names no page of this folder") || !strings.Contains(out, "  billing-guide -> Nowhere page\n") {
			t.Fatalf("kb import said:\n%s\nwant %q", out, want)
		}
		// A re-import changes nothing; an edited page is updated in place
		// and a page removed from the folder stays.
		if err := os.WriteFile(filepath.Join(e.corpus, "keys.md"), []byte("---\ntitle: API keys\ntags: [auth, Billing]\naliases: [credentials, tokens]\nneeds_review: true\n---\nA key authenticates every call. Pay with [[payments|the billing page]]. Revised.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(e.corpus, "filler", "filler-00.md")); err != nil {
			t.Fatal(err)
		}
		out, err = e.cli("--json", "import", e.corpus, "--kb", "team") // flags after the folder too
		if err != nil {
			t.Fatalf("re-import: %v\n%s", err, out)
		}
		var sum struct {
			Created, Updated, Unchanged, Sources int
			BaseCreated                          bool `json:"base_created"`
		}
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("--json output: %v\n%s", err, out)
		}
		if sum.Created != 0 || sum.Updated != 1 || sum.Unchanged != 2+kbFillers || sum.BaseCreated {
			t.Fatalf("re-import = %+v", sum)
		}
		// A page id of another base is refused, nothing written.
		clash := t.TempDir()
		_ = os.WriteFile(filepath.Join(clash, "turnstile.md"), []byte("# Clash"), 0o644)
		out, err = e.cli("import", "--kb", "team", clash)
		if err == nil || !strings.Contains(out, "409") || !strings.Contains(out, "turnstile") {
			t.Fatalf("import of another base's page id: %v\n%s", err, out)
		}
		out, err = e.cli("list")
		if err != nil || !strings.Contains(out, "team") || !strings.Contains(out, "public") || !strings.Contains(out, strconv.Itoa(4+kbFillers)) {
			t.Fatalf("kb list: %v\n%s", err, out)
		}
	})

	t.Run("a symbolic link out of the folder is refused", func(t *testing.T) {
		outside := t.TempDir()
		secret := filepath.Join(outside, "secret.md")
		if err := os.WriteFile(secret, []byte("# Secret\nthe operator's private notes"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "inside.md"), []byte("# Inside\nfine"), 0o644)
		if err := os.Symlink(secret, filepath.Join(dir, "leak.md")); err != nil {
			t.Fatal(err)
		}
		reader := g.Account("")
		out, err := e.cli("import", "--kb", "links", "--readers", reader, dir)
		if err == nil || !strings.Contains(out, "leak.md") || !strings.Contains(out, "symbolic link") {
			t.Fatalf("a link out of the folder was not refused: %v\n%s", err, out)
		}
		if st := g.AdminStatus("GET", "/kbs/links", nil, nil); st != 404 {
			t.Fatalf("the refused import created its base: %d", st)
		}
		// A link inside the folder is read like the file it names.
		if err := os.Remove(filepath.Join(dir, "leak.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("inside.md", filepath.Join(dir, "alias.md")); err != nil {
			t.Fatal(err)
		}
		if out, err := e.cli("import", "--kb", "links", "--readers", reader, dir); err != nil {
			t.Fatalf("a link inside the folder: %v\n%s", err, out)
		}
	})

	t.Run("rest", func(t *testing.T) { testKBREST(t, e) })
	t.Run("mcp", func(t *testing.T) { testKBMCP(t, e) })
}

func testKBREST(t *testing.T, e *kbEnv) {
	t.Run("kbs lists the readable bases with page counts", func(t *testing.T) {
		type kbv struct {
			KBID      string `json:"kb_id"`
			Name      string `json:"name"`
			PageCount int    `json:"page_count"`
		}
		a := kbJSONOf[kbList[kbv]](t, kbGet(t, e, e.keyA, "/kbs"))
		b := kbJSONOf[kbList[kbv]](t, kbGet(t, e, e.keyB, "/kbs"))
		ids := func(l kbList[kbv]) string {
			var s []string
			for _, k := range l.Data {
				s = append(s, fmt.Sprintf("%s:%d", k.KBID, k.PageCount))
			}
			return strings.Join(s, ",")
		}
		if a.Object != "list" || len(a.Data) != 3 || a.Data[2].KBID != "team" || a.Data[2].PageCount != 4+kbFillers || a.Data[1].PageCount != 2 {
			t.Fatalf("A's bases = %s", ids(a))
		}
		if len(b.Data) != 2 || strings.Contains(ids(b), "team") || b.Data[0].KBID != "default" || b.Data[0].PageCount < 5 {
			t.Fatalf("B's bases = %s", ids(b))
		}
	})

	t.Run("search", func(t *testing.T) {
		s := kbJSONOf[kbSearch](t, kbGet(t, e, e.keyA, "/search?q=turnstile&kb_id=team"))
		if s.Query != "turnstile" || s.TotalHits != kbFillers || s.Returned != 20 || !s.HasMore || s.Offset != 0 || len(s.Results) != 20 {
			t.Fatalf("default limit: total %d returned %d has_more %v", s.TotalHits, s.Returned, s.HasMore)
		}
		r := s.Results[0]
		if r.Body != nil || r.Snippet == nil || !strings.Contains(*r.Snippet, "<mark>turnstile</mark>") || r.Score == nil || *r.Score <= 0 || r.KBID != "team" {
			t.Fatalf("a result: %+v", r)
		}
		s = kbJSONOf[kbSearch](t, kbGet(t, e, e.keyA, "/search?q=turnstile&kb_id=team&limit=100"))
		if s.Returned != 50 || !s.HasMore {
			t.Fatalf("limit 100 is capped at 50: returned %d", s.Returned)
		}
		s = kbJSONOf[kbSearch](t, kbGet(t, e, e.keyA, "/search?q=turnstile&kb_id=team&limit=50&offset=50"))
		if s.Returned != kbFillers-50 || s.HasMore || s.Offset != 50 {
			t.Fatalf("offset 50: returned %d has_more %v", s.Returned, s.HasMore)
		}
		// kb_id defaults to `default`, the docs.
		s = kbJSONOf[kbSearch](t, kbGet(t, e, e.keyB, "/search?q=idempotency"))
		if s.TotalHits == 0 || s.Results[0].KBID != "default" {
			t.Fatalf("search of the default base: %+v", s)
		}
		tests := []struct {
			q, kb string
			first string
		}{
			{"billing", "team", "billing-guide"},        // the title beats bodies and tags
			{"credentials", "team", "keys"},             // an alias
			{"计费", "team", "cjk"},                       // CJK
			{"余额", "team", "cjk"},                       // CJK, from the body
			{"wallet balance", "team", "billing-guide"}, // body words
			{"gate", "public", "turnstile"},             // an alias of the admin-imported page
		}
		for _, tc := range tests {
			s := kbJSONOf[kbSearch](t, kbGet(t, e, e.keyA, "/search?"+q("q", tc.q, "kb_id", tc.kb)))
			if len(s.Results) == 0 || s.Results[0].ID != tc.first {
				t.Fatalf("search %q: %+v, want %s first", tc.q, s.Results, tc.first)
			}
		}
		for _, bad := range []string{"", "q=", "q=x&limit=0", "q=x&limit=abc", "q=x&offset=-1", "q=x&limit=1.5"} {
			wantErr(t, kbGet(t, e, e.keyA, "/search?"+bad), 400, "invalid_request", "invalid_request_error")
		}
	})

	t.Run("an unreadable base is a missing one", func(t *testing.T) {
		for _, p := range []string{"/search?q=billing&kb_id=team", "/tags?kb_id=team", "/tags/billing?kb_id=team",
			"/pages?ids=billing-guide&kb_id=team", "/pages/billing-guide?kb_id=team", "/pages/billing-guide/backlinks?kb_id=team", "/pages/billing-guide/source?kb_id=team"} {
			unreadable := kbGet(t, e, e.keyB, p)
			missing := kbGet(t, e, e.keyA, strings.ReplaceAll(p, "kb_id=team", "kb_id=nope"))
			wantErr(t, unreadable, 404, "not_found", "invalid_request_error")
			wantErr(t, missing, 404, "not_found", "invalid_request_error")
			_, _, m1 := unreadable.errorOf(t)
			_, _, m2 := missing.errorOf(t)
			if strings.ReplaceAll(m1, "team", "X") != strings.ReplaceAll(m2, "nope", "X") {
				t.Fatalf("%s: unreadable %q and missing %q differ", p, m1, m2)
			}
		}
		// A page of a base outside kb_id (default here) is not found.
		wantErr(t, kbGet(t, e, e.keyA, "/pages/billing-guide"), 404, "not_found", "invalid_request_error")
		wantErr(t, kbGet(t, e, e.keyA, "/pages/nope?kb_id=team"), 404, "not_found", "invalid_request_error")
	})

	t.Run("tags", func(t *testing.T) {
		tags := kbJSONOf[kbList[struct {
			Tag   string `json:"tag"`
			Count int    `json:"count"`
		}]](t, kbGet(t, e, e.keyA, "/tags?kb_id=team"))
		got := map[string]int{}
		for _, x := range tags.Data {
			got[x.Tag] = x.Count
		}
		if tags.Object != "list" || got["auth"] != 1 || got["billing"] != 3 || got["money"] != 1 || got["filler"] != kbFillers {
			t.Fatalf("tags = %+v", tags.Data)
		}
		byTag := kbJSONOf[kbList[kbPage]](t, kbGet(t, e, e.keyA, "/tags/BILLING?kb_id=team"))
		var ids []string
		for _, p := range byTag.Data {
			ids = append(ids, p.ID)
			if p.Body != nil {
				t.Fatalf("a tag's page has a body: %+v", p)
			}
		}
		if byTag.Object != "list" || strings.Join(ids, ",") != "billing-guide,cjk,keys" {
			t.Fatalf("pages tagged billing = %v", ids)
		}
	})

	t.Run("pages", func(t *testing.T) {
		wantErr(t, kbGet(t, e, e.keyA, "/pages?kb_id=team"), 400, "invalid_request", "invalid_request_error")
		wantErr(t, kbGet(t, e, e.keyA, "/pages?kb_id=team&ids=,%20,"), 400, "invalid_request", "invalid_request_error")
		var ids []string
		for i := range 30 {
			ids = append(ids, fmt.Sprintf("filler-%02d", i+1))
		}
		l := kbJSONOf[kbList[kbPage]](t, kbGet(t, e, e.keyA, "/pages?kb_id=team&ids="+strings.Join(ids, ",")))
		if len(l.Data) != 25 || l.Data[24].ID != "filler-25" {
			t.Fatalf("30 ids gave %d pages: extras beyond 25 must be dropped", len(l.Data))
		}
		l = kbJSONOf[kbList[kbPage]](t, kbGet(t, e, e.keyA, "/pages?kb_id=team&ids=long,nope,keys,turnstile"))
		if len(l.Data) != 2 || l.Data[0].ID != "long" || l.Data[1].ID != "keys" {
			t.Fatalf("pages = %+v: want long and keys (missing and other bases' pages left out)", l.Data)
		}
		long, keys := l.Data[0], l.Data[1]
		if long.Body == nil || utf8.RuneCountInString(*long.Body) != 4000 || long.BodyTruncated == nil || !*long.BodyTruncated {
			t.Fatalf("long page body cut to %d characters, truncated %v", utf8.RuneCountInString(*long.Body), long.BodyTruncated)
		}
		if keys.BodyTruncated == nil || *keys.BodyTruncated || !strings.Contains(*keys.Body, "Revised.") || !keys.NeedsReview {
			t.Fatalf("keys = %+v", keys)
		}
	})

	t.Run("page", func(t *testing.T) {
		p := kbJSONOf[kbPage](t, kbGet(t, e, e.keyA, "/pages/billing-guide?kb_id=team"))
		if p.Title != "Billing" || p.Summary != "How credits are held and charged." || p.Confidence != "high" || p.NeedsReview ||
			strings.Join(p.Aliases, ",") != "Payments" || strings.Join(p.Tags, ",") != "billing,money" || p.BodyTruncated != nil {
			t.Fatalf("billing = %+v", p)
		}
		if len(p.OutgoingLinks) != 2 || p.OutgoingLinks[0].ID != "keys" || !p.OutgoingLinks[0].Resolved || p.OutgoingLinks[0].Title != "API keys" ||
			p.OutgoingLinks[1].ID != "Nowhere page" || p.OutgoingLinks[1].Resolved || strings.Join(p.Links, ",") != "keys,Nowhere page" {
			t.Fatalf("billing's links = %+v %v", p.OutgoingLinks, p.Links)
		}
		if p.Source == nil || p.Source.R2Key != "sources/billing.pdf" || p.Source.Locator != "page 2" {
			t.Fatalf("billing's source = %+v", p.Source)
		}
		long := kbJSONOf[kbPage](t, kbGet(t, e, e.keyA, "/pages/long?kb_id=team"))
		if *long.Body != longBody {
			t.Fatalf("a single page is read in full: %d characters", utf8.RuneCountInString(*long.Body))
		}
		cjk := kbJSONOf[kbPage](t, kbGet(t, e, e.keyA, "/pages/"+url.PathEscape("cjk")+"?kb_id=team"))
		if cjk.Title != "计费规则" || len(cjk.OutgoingLinks) != 1 || cjk.OutgoingLinks[0].ID != "billing-guide" {
			t.Fatalf("cjk = %+v", cjk)
		}
		pub := kbJSONOf[kbPage](t, kbGet(t, e, e.keyB, "/pages/lobby?kb_id=public"))
		if !pub.NeedsReview || len(pub.OutgoingLinks) != 1 || pub.OutgoingLinks[0].ID != "turnstile" || !pub.OutgoingLinks[0].Resolved {
			t.Fatalf("lobby (its link by alias) = %+v", pub)
		}
	})

	t.Run("backlinks", func(t *testing.T) {
		l := kbJSONOf[kbList[kbPage]](t, kbGet(t, e, e.keyA, "/pages/billing-guide/backlinks?kb_id=team"))
		var ids []string
		for _, p := range l.Data {
			ids = append(ids, p.ID)
			if p.Body != nil {
				t.Fatal("a backlink has a body")
			}
		}
		if l.Object != "list" || strings.Join(ids, ",") != "cjk,keys" {
			t.Fatalf("backlinks of billing = %v", ids)
		}
	})

	t.Run("source", func(t *testing.T) {
		type source struct {
			R2Key      string `json:"r2_key"`
			Filename   string `json:"filename"`
			Locator    string `json:"locator"`
			URL        string `json:"url"`
			URLTTLSecs int    `json:"url_ttl_secs"`
		}
		s := kbJSONOf[source](t, kbGet(t, e, e.keyA, "/pages/billing-guide/source?kb_id=team"))
		if s.R2Key != "sources/billing.pdf" || s.Filename != "billing.pdf" || s.Locator != "page 2" || s.URLTTLSecs != 3600 {
			t.Fatalf("source = %+v", s)
		}
		checkLink(t, s.URL, "%PDF-1.4 billing source bytes")
		wantErr(t, kbGet(t, e, e.keyA, "/pages/keys/source?kb_id=team"), 404, "not_found", "invalid_request_error")
		pub := kbGet(t, e, e.keyB, "/pages/turnstile/source?kb_id=public")
		var ps struct{ URL string }
		_ = json.Unmarshal(pub.Body, &ps)
		checkLink(t, ps.URL, "turnstile source text")
	})

	t.Run("keys: Bearer and x-api-key only", func(t *testing.T) {
		p := e.g.URL + "/api/v1/ext/wiki/kbs"
		if c := do(t, "GET", p, map[string]string{"x-api-key": e.keyA}, ""); c.Status != 200 {
			t.Fatalf("x-api-key: %d", c.Status)
		}
		for desc, h := range map[string]map[string]string{
			"no key":           nil,
			"alternate header": {"x-tollgate-api-key": e.keyA},
			"bad key":          bearer("sk-tollgate-" + strings.Repeat("0", 64)),
			"basic auth":       {"Authorization": "Basic " + e.keyA},
		} {
			t.Run(desc, func(t *testing.T) {
				wantErr(t, do(t, "GET", p, h, ""), 401, "invalid_api_key", "authentication_error")
			})
		}
		wantErr(t, do(t, "GET", p+"?key="+e.keyA, nil, ""), 401, "invalid_api_key", "authentication_error")
	})

	t.Run("free: no balance needed, nothing charged, no log row", func(t *testing.T) {
		if c := kbGet(t, e, e.keyZero, "/search?q=gateway"); c.Status != 200 {
			t.Fatalf("an account at zero balance: %d %s", c.Status, c.Body)
		}
		before, _ := e.g.Balance(e.acctA)
		for _, p := range []string{"/kbs", "/search?q=billing&kb_id=team", "/pages/billing-guide?kb_id=team"} {
			kbGet(t, e, e.keyA, p)
		}
		if after, _ := e.g.Balance(e.acctA); after != before {
			t.Fatalf("balance moved from %s to %s", before, after)
		}
		if rows := logsOf(t, e.g, e.keyA); len(rows) != 0 {
			t.Fatalf("knowledge reads wrote %d log rows", len(rows))
		}
	})

	t.Run("counts against the account's rpm", func(t *testing.T) {
		acct := e.g.Account("")
		_, key := e.g.Key(acct, nil)
		if st := e.g.Admin("PATCH", "/accounts/"+acct, map[string]any{"rpm": 2}, nil); st != 200 {
			t.Fatalf("set rpm: %d", st)
		}
		kbGet(t, e, key, "/kbs")
		kbGet(t, e, key, "/kbs")
		wantErr(t, kbGet(t, e, key, "/kbs"), 429, "rate_limit_exceeded", "rate_limit_error")
	})
}

// checkLink downloads a signed source link and checks its bytes and its
// hour of validity.
func checkLink(t *testing.T, link, want string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := strconv.ParseInt(u.Query().Get("expires"), 10, 64)
	if d := time.Until(time.Unix(exp, 0)); d < 58*time.Minute || d > 61*time.Minute {
		t.Fatalf("link %s expires in %v, want an hour", link, d)
	}
	c := do(t, "GET", link, nil, "")
	if c.Status != 200 || string(c.Body) != want {
		t.Fatalf("GET %s: %d %q", link, c.Status, c.Body)
	}
}

// headerTransport adds a header to every request (the MCP client's key).
type headerTransport struct {
	name, value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, e *kbEnv, header, value string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "tollgate-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: e.g.URL + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{header, value}, Timeout: 30 * time.Second}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// callTool calls a tool and decodes its structured result into out.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	var s []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s = append(s, tc.Text)
		}
	}
	return strings.Join(s, "\n")
}

func testKBMCP(t *testing.T, e *kbEnv) {
	a, err := mcpSession(t, e, "Authorization", "Bearer "+e.keyA)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	b, err := mcpSession(t, e, "x-api-key", e.keyB)
	if err != nil {
		t.Fatalf("connect with x-api-key: %v", err)
	}

	t.Run("six tools", func(t *testing.T) {
		res, err := a.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("%s is not marked read-only", tool.Name)
			}
		}
		if strings.Join(names, ",") != "backlinks,get_source,list_by_tag,read_page,read_pages,search_wiki" {
			t.Fatalf("tools = %v", names)
		}
	})

	t.Run("search_wiki", func(t *testing.T) {
		var s kbSearch
		callTool(t, a, "search_wiki", map[string]any{"q": "turnstile"}, &s)
		if s.Returned != 10 || s.TotalHits != kbFillers+1 || !s.HasMore {
			t.Fatalf("default limit 10 over every readable base: returned %d of %d", s.Returned, s.TotalHits)
		}
		for _, r := range s.Results {
			if r.Body != nil || r.Snippet == nil {
				t.Fatalf("a search entry: %+v", r)
			}
		}
		callTool(t, a, "search_wiki", map[string]any{"q": "turnstile", "limit": 500}, &s)
		if s.Returned != 50 {
			t.Fatalf("limit 500 is capped at 50: returned %d", s.Returned)
		}
		callTool(t, a, "search_wiki", map[string]any{"q": "turnstile", "limit": 50, "offset": 50}, &s)
		if s.Returned != kbFillers+1-50 || s.HasMore {
			t.Fatalf("offset 50: returned %d", s.Returned)
		}
		callTool(t, b, "search_wiki", map[string]any{"q": "turnstile"}, &s)
		if s.TotalHits != 1 || s.Results[0].ID != "turnstile" {
			t.Fatalf("B sees only the bases it may read: %+v", s)
		}
		callTool(t, b, "search_wiki", map[string]any{"q": "idempotency"}, &s)
		if s.TotalHits == 0 || s.Results[0].KBID != "default" {
			t.Fatalf("B searches the docs too: %+v", s)
		}
		if res := callTool(t, a, "search_wiki", map[string]any{"q": " "}, nil); !res.IsError {
			t.Fatal("an empty query is not an error")
		}
	})

	t.Run("read_page", func(t *testing.T) {
		var p kbPage
		callTool(t, a, "read_page", map[string]any{"id": "long"}, &p)
		if utf8.RuneCountInString(*p.Body) != 8000 || p.BodyTruncated == nil || !*p.BodyTruncated {
			t.Fatalf("read_page body: %d characters, truncated %v", utf8.RuneCountInString(*p.Body), p.BodyTruncated)
		}
		callTool(t, a, "read_page", map[string]any{"id": "billing-guide"}, &p)
		if p.Title != "Billing" || len(p.OutgoingLinks) != 2 || *p.BodyTruncated {
			t.Fatalf("billing = %+v", p)
		}
		for _, tc := range []struct {
			s  *mcp.ClientSession
			id string
		}{{a, "nope"}, {b, "billing-guide"}} {
			res := callTool(t, tc.s, "read_page", map[string]any{"id": tc.id}, nil)
			if !res.IsError || !strings.Contains(toolText(res), "not found") {
				t.Fatalf("read_page %s: isError %v %q", tc.id, res.IsError, toolText(res))
			}
		}
	})

	t.Run("read_pages", func(t *testing.T) {
		ids := []string{"long", "billing-guide"}
		for i := range 30 {
			ids = append(ids, fmt.Sprintf("filler-%02d", i+1))
		}
		var out struct{ Pages []kbPage }
		callTool(t, a, "read_pages", map[string]any{"ids": ids}, &out)
		if len(out.Pages) != 25 || out.Pages[0].ID != "long" {
			t.Fatalf("read_pages of %d ids gave %d pages", len(ids), len(out.Pages))
		}
		if n := utf8.RuneCountInString(*out.Pages[0].Body); n != 1200 || !*out.Pages[0].BodyTruncated {
			t.Fatalf("read_pages excerpt: %d characters", n)
		}
		callTool(t, b, "read_pages", map[string]any{"ids": []string{"billing-guide", "lobby"}}, &out)
		if len(out.Pages) != 1 || out.Pages[0].ID != "lobby" {
			t.Fatalf("B's read_pages = %+v", out.Pages)
		}
		if res := callTool(t, b, "read_pages", map[string]any{"ids": []string{"billing-guide"}}, nil); !res.IsError {
			t.Fatal("read_pages of pages B cannot read is not an error")
		}
	})

	t.Run("list_by_tag", func(t *testing.T) {
		var out struct{ Pages []kbPage }
		callTool(t, a, "list_by_tag", map[string]any{"tag": "billing"}, &out)
		if len(out.Pages) != 3 || out.Pages[0].Body != nil {
			t.Fatalf("A's billing pages = %+v", out.Pages)
		}
		callTool(t, b, "list_by_tag", map[string]any{"tag": "public"}, &out)
		if len(out.Pages) != 1 || out.Pages[0].ID != "turnstile" {
			t.Fatalf("B's public pages = %+v", out.Pages)
		}
		callTool(t, b, "list_by_tag", map[string]any{"tag": "billing"}, &out)
		if len(out.Pages) != 0 {
			t.Fatalf("B sees team's tags: %+v", out.Pages)
		}
	})

	t.Run("backlinks", func(t *testing.T) {
		var out struct{ Pages []kbPage }
		callTool(t, a, "backlinks", map[string]any{"id": "keys"}, &out)
		if len(out.Pages) != 1 || out.Pages[0].ID != "billing-guide" {
			t.Fatalf("backlinks of keys = %+v", out.Pages)
		}
		if res := callTool(t, b, "backlinks", map[string]any{"id": "keys"}, nil); !res.IsError {
			t.Fatal("B reads team's backlinks")
		}
	})

	t.Run("get_source", func(t *testing.T) {
		var s struct {
			R2Key      string `json:"r2_key"`
			URL        string `json:"url"`
			URLTTLSecs int    `json:"url_ttl_secs"`
		}
		callTool(t, a, "get_source", map[string]any{"id": "billing-guide"}, &s)
		if s.R2Key != "sources/billing.pdf" || s.URLTTLSecs != 3600 {
			t.Fatalf("get_source = %+v", s)
		}
		checkLink(t, s.URL, "%PDF-1.4 billing source bytes")
		if res := callTool(t, a, "get_source", map[string]any{"id": "keys"}, nil); !res.IsError {
			t.Fatal("get_source of a page without a source is not an error")
		}
	})

	t.Run("a bad key is 401", func(t *testing.T) {
		if _, err := mcpSession(t, e, "Authorization", "Bearer sk-tollgate-"+strings.Repeat("1", 64)); err == nil {
			t.Fatal("the client connected with a bad key")
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		h := map[string]string{"Authorization": "Bearer nope", "Accept": "application/json, text/event-stream"}
		wantErr(t, do(t, "POST", e.g.URL+"/mcp", h, body), 401, "invalid_api_key", "authentication_error")
		h = map[string]string{"Accept": "application/json, text/event-stream", "x-tollgate-api-key": e.keyA}
		wantErr(t, do(t, "POST", e.g.URL+"/mcp", h, body), 401, "invalid_api_key", "authentication_error")
	})

	t.Run("GET is refused", func(t *testing.T) {
		c := do(t, "GET", e.g.URL+"/mcp", bearer(e.keyA), "")
		if c.Status != 405 || !strings.Contains(c.Header.Get("Allow"), "POST") {
			t.Fatalf("GET /mcp: %d Allow %q", c.Status, c.Header.Get("Allow"))
		}
	})

	t.Run("a raw call answers JSON", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_wiki","arguments":{"q":"billing"}}}`
		h := map[string]string{"Authorization": "Bearer " + e.keyA, "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2025-06-18"}
		c := do(t, "POST", e.g.URL+"/mcp", h, body)
		if c.Status != 200 || !strings.HasPrefix(c.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("raw tools/call: %d %s %s", c.Status, c.Header.Get("Content-Type"), c.Body)
		}
		var rpc struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(c.Body, &rpc); err != nil || rpc.ID != 7 || rpc.Result.IsError {
			t.Fatalf("raw tools/call answer: %s", c.Body)
		}
	})
}
