package kb

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tollgate-gw/tollgate/store"
)

func TestLoadFolder(t *testing.T) {
	f, err := LoadFolder(os.DirFS("testdata/folder"))
	must(t, "load", err)
	byID := map[string]PageInput{}
	for _, p := range f.Pages {
		byID[p.ID] = p
	}
	if len(byID) != 4 || byID["ignored"].ID != "" {
		t.Fatalf("pages = %v: want billing, keys, limits, setup (hidden folders skipped)", f.Pages)
	}
	b := byID["billing"]
	want := PageInput{
		ID: "billing", Title: "Billing", Summary: "How credits are held and charged.",
		Tags: []string{"billing", "money"}, Aliases: []string{"Payments", "Charging"},
		Links:      []string{"API keys", "Limits", "setup", "Dangling page"},
		Confidence: "high",
		Source: &store.PageSource{R2Key: "sources/billing.txt", Filename: "billing.txt", Locator: "section 2",
			CompiledAt: "2025-01-02", Model: "sim-chat"},
	}
	b.Body = ""
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("billing =\n %+v\nwant\n %+v", b, want)
	}
	k := byID["keys"]
	if k.Title != "API keys" || !reflect.DeepEqual(k.Tags, []string{"billing", "auth"}) || !k.NeedsReview ||
		!reflect.DeepEqual(k.Links, []string{"Payments"}) || k.Source == nil || k.Source.R2Key != "keys-source.txt" {
		t.Fatalf("keys = %+v", k)
	}
	if s := byID["setup"]; s.Title != "Setting up" || !reflect.DeepEqual(s.Links, []string{"billing"}) {
		t.Fatalf("setup = %+v: want its title from the heading and the link without its section", s)
	}
	if l := byID["limits"]; l.Title != "limits" || l.Confidence != "0.9" || len(l.Tags) != 0 {
		t.Fatalf("limits = %+v: want the file name as title and the confidence as written", l)
	}
	srcs := map[string]string{}
	for _, s := range f.Sources {
		srcs[s.Key] = s.Path
	}
	if !reflect.DeepEqual(srcs, map[string]string{"sources/billing.txt": "sources/billing.txt", "keys-source.txt": "keys-source.txt"}) {
		t.Fatalf("sources = %+v", f.Sources)
	}
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "missing.pdf") {
		t.Fatalf("warnings = %q, want the missing source", f.Warnings)
	}
}

func TestLoadFolderRefusals(t *testing.T) {
	tests := []struct {
		desc string
		fs   fstest.MapFS
		want string
	}{
		{"two files, one id", fstest.MapFS{"a/x.md": {Data: []byte("x")}, "b/x.md": {Data: []byte("y")}}, "both make page id"},
		{"bad YAML", fstest.MapFS{"x.md": {Data: []byte("---\ntitle: [\n---\nbody")}}, "front matter"},
		{"a map for a title", fstest.MapFS{"x.md": {Data: []byte("---\ntitle:\n  a: b\n---\n")}}, "title must be a single value"},
		{"needs_review not a bool", fstest.MapFS{"x.md": {Data: []byte("---\nneeds_review: maybe\n---\n")}}, "needs_review"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := LoadFolder(tc.fs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParsePage(t *testing.T) {
	tests := []struct {
		desc  string
		text  string
		title string
		links []string
		body  string
	}{
		{desc: "no front matter", text: "# Hello\n\nworld", title: "Hello", links: []string{}, body: "# Hello\n\nworld"},
		{desc: "unclosed front matter is body", text: "---\ntitle: x\nbody", title: "p", links: []string{}, body: "---\ntitle: x\nbody"},
		{desc: "label and section", text: "[[A|see a]] [[B#part]] [[ c ]] [[#local]]", title: "p", links: []string{"A", "B", "c"}},
		{desc: "duplicates once, by folded name", text: "[[Alpha]] [[alpha]] [[ALPHA|x]]", title: "p", links: []string{"Alpha"}},
		{desc: "inline code and fences", text: "`[[no]]`\n~~~\n[[no2]]\n~~~\n[[yes]]", title: "p", links: []string{"yes"}},
		{desc: "markdown links to pages", text: "[a](x.md) [b](http://e.com/y.md) [c](../dir/z.markdown#s) [d](pic.png) [e](#top)", title: "p", links: []string{"x", "z"}},
		{desc: "front matter links first", text: "---\nlinks: [one]\n---\n[[two]]", title: "p", links: []string{"one", "two"}},
		{desc: "BOM and CRLF", text: "\xef\xbb\xbf---\r\ntitle: T\r\n---\r\nbody", title: "T", links: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p, err := ParsePage("p", []byte(tc.text))
			must(t, "parse", err)
			if p.Title != tc.title || !reflect.DeepEqual(p.Links, tc.links) {
				t.Fatalf("title %q links %q, want %q %q", p.Title, p.Links, tc.title, tc.links)
			}
			if tc.body != "" && p.Body != tc.body {
				t.Fatalf("body %q, want %q", p.Body, tc.body)
			}
		})
	}
}

func TestFirstParagraph(t *testing.T) {
	body := "# Title\n\n| a | b |\n\nThe first\nparagraph here.\n\nThe second."
	if got := FirstParagraph(body, 300); got != "The first paragraph here." {
		t.Fatalf("got %q", got)
	}
	if got := FirstParagraph("word "+strings.Repeat("longword ", 10), 30); got != "word longword longword…" {
		t.Fatalf("cut = %q", got)
	}
	if got := FirstParagraph("```\ncode\n```\n\nprose", 30); got != "prose" {
		t.Fatalf("after a fence = %q", got)
	}
}

func TestHeadings(t *testing.T) {
	body := "# Title\n\nText.\n\n## Rate limits ##\n\n```\n# not a heading\n```\n\n####### seven is text\n#hashtag\n   ### indented\n\t## tabbed\n##\n### Last"
	got := Headings(body)
	want := []string{"Title", "Rate limits", "indented", "Last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Headings = %q, want %q", got, want)
	}
}
