package kb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzParsePage: no Markdown file an operator imports panics the
// importer; a page it accepts keeps its id, has a title, and lists each
// link once, none of them empty.
func FuzzParsePage(f *testing.F) {
	_ = filepath.WalkDir(filepath.Join("testdata", "folder"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
		return nil
	})
	for _, s := range []string{
		"", "---\n---\n", "---\ntitle: T\ntags: [a, b]\nlinks: [x]\n---\n# H\n[[a|b]] [[c#d]] ![[e]] [x](y.md)",
		"---\ntitle: [\n---\n", "---\nconfidence: 7\nneeds_review: maybe\n---\n", "```\n[[in code]]\n```\n`[[inline]]`",
		"---\nsource:\n  url: 1\n---\n", "[[" + strings.Repeat("[", 100) + "]]", "# \xff\xfe\n[[\xff]]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := ParsePage("page", []byte(src))
		if err != nil {
			return
		}
		if p.ID != "page" || p.Title == "" {
			t.Fatalf("page %+v", p)
		}
		seen := map[string]bool{}
		for _, l := range p.Links {
			if l == "" || seen[l] {
				t.Fatalf("links %q of %q", p.Links, src)
			}
			seen[l] = true
		}
		_ = Headings(p.Body)
		// The folder loader reads the same file without panicking.
		_, _ = LoadFolder(fstest.MapFS{"page.md": {Data: []byte(src)}})
	})
}
