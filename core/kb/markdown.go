package kb

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-gw/tollgate/store"
)

// Folder is a folder of Markdown pages as `tollgate kb import` reads it.
type Folder struct {
	Pages []PageInput
	// Sources are the source files the pages name that were found beside
	// them, to upload under their keys.
	Sources []SourceFile
	// Warnings say what was skipped (a source file not found).
	Warnings []string
}

// SourceFile is a page's source file found in the folder.
type SourceFile struct {
	Key      string // the r2_key the page's source names
	Path     string // its path in the folder
	Filename string
}

var markdownExt = []string{".md", ".markdown"}

// LoadFolder reads every Markdown file under fsys (hidden folders such as
// .git and .obsidian skipped; give it an os.Root's FS so that a symbolic
// link out of the folder is refused): ids from file names, YAML front matter
// (title, summary, tags, aliases, confidence, needs_review, source, and
// links), [[wiki links]] of the body. Two files with one name are refused:
// ids are unique.
func LoadFolder(fsys fs.FS) (Folder, error) {
	var f Folder
	where := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && strings.HasPrefix(name, ".") {
				return fs.SkipDir
			}
			return nil
		}
		ext := strings.ToLower(path.Ext(name))
		if !isMarkdown(ext) {
			return nil
		}
		id := strings.TrimSuffix(name, path.Ext(name))
		if prev, ok := where[id]; ok {
			return fmt.Errorf("%s and %s both make page id %q: page ids come from file names and must be unique", prev, p, id)
		}
		where[id] = p
		data, err := fs.ReadFile(fsys, p)
		if err != nil && d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link that cannot be read inside the folder (a link out of it is not followed): %w", p, err)
		}
		if err != nil {
			return err
		}
		page, err := ParsePage(id, data)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if page.Source != nil {
			if sf, ok := findSource(fsys, path.Dir(p), page.Source); ok {
				page.Source.R2Key = sf.Key
				f.Sources = append(f.Sources, sf)
			} else if page.Source.Filename != "" || page.Source.R2Key != "" {
				f.Warnings = append(f.Warnings, fmt.Sprintf("%s: source file %q not found beside the page; its record is kept without a file", p, firstNonEmpty(page.Source.Filename, page.Source.R2Key)))
			}
		}
		f.Pages = append(f.Pages, page)
		return nil
	})
	return f, err
}

func isMarkdown(ext string) bool {
	for _, e := range markdownExt {
		if ext == e {
			return true
		}
	}
	return false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// findSource looks for the file a page's source names, beside the page
// then from the folder's root. The key is the source's r2_key when it
// names one, else the file's path in the folder.
func findSource(fsys fs.FS, dir string, src *store.PageSource) (SourceFile, bool) {
	for _, name := range []string{src.Filename, src.R2Key} {
		if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "://") {
			continue
		}
		for _, p := range []string{path.Join(dir, name), path.Clean(name)} {
			if !fs.ValidPath(p) {
				continue
			}
			st, err := fs.Stat(fsys, p)
			if err != nil || st.IsDir() {
				continue
			}
			key := src.R2Key
			if key == "" {
				key = p
			}
			return SourceFile{Key: key, Path: p, Filename: firstNonEmpty(src.Filename, path.Base(p))}, true
		}
	}
	return SourceFile{}, false
}

var (
	reFence    = regexp.MustCompile("(?ms)^[ \t]*(```|~~~).*?^[ \t]*(```|~~~)[ \t]*$")
	reInline   = regexp.MustCompile("`[^`\n]*`")
	reWiki     = regexp.MustCompile(`(!?)\[\[([^\[\]\n]+?)\]\]`)
	reMDLink   = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	reHeading1 = regexp.MustCompile(`(?m)^#[ \t]+(.+?)[ \t#]*$`)
)

// ParsePage reads one Markdown file: front matter, then the body. Unknown
// front matter keys are ignored (editors such as Obsidian add their own).
func ParsePage(id string, data []byte) (PageInput, error) {
	p := PageInput{ID: id}
	body := data
	if fm, rest, ok := splitFrontMatter(data); ok {
		if err := p.readFrontMatter(fm); err != nil {
			return p, err
		}
		body = rest
	}
	p.Body = strings.TrimLeft(string(body), "\r\n")
	text := reInline.ReplaceAllString(reFence.ReplaceAllString(p.Body, ""), "")
	if p.Title == "" {
		if m := reHeading1.FindStringSubmatch(text); m != nil {
			p.Title = strings.TrimSpace(m[1])
		}
	}
	if p.Title == "" { // no heading, or one of spaces only ("#  ")
		p.Title = id
	}
	p.Links = append(p.Links, BodyLinks(text)...)
	p.Links = dedupeFold(p.Links)
	return p, nil
}

// BodyLinks are the links of a Markdown body, in order: [[target]],
// [[target|label]] and [[target#section]] (embeds, ![[...]], are not
// links), and relative links to other Markdown files, [text](other.md).
func BodyLinks(text string) []string {
	type at struct {
		pos    int
		target string
	}
	var found []at
	for _, m := range reWiki.FindAllStringSubmatchIndex(text, -1) {
		if m[3] > m[2] { // an embed
			continue
		}
		inner := text[m[4]:m[5]]
		target, _, _ := strings.Cut(inner, "|")
		target, _, _ = strings.Cut(target, "#")
		if target = strings.TrimSpace(target); target != "" {
			found = append(found, at{m[0], target})
		}
	}
	for _, m := range reMDLink.FindAllStringSubmatchIndex(text, -1) {
		if t := markdownTarget(text[m[2]:m[3]]); t != "" {
			found = append(found, at{m[0], t})
		}
	}
	// Both kinds in the order the text has them.
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && found[j].pos < found[j-1].pos; j-- {
			found[j], found[j-1] = found[j-1], found[j]
		}
	}
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.target
	}
	return out
}

// markdownTarget is the page id a relative Markdown link names ("" for
// none): ../guide/setup.md#install names "setup".
func markdownTarget(u string) string {
	if strings.Contains(u, "://") || strings.HasPrefix(u, "/") || strings.HasPrefix(u, "#") || strings.HasPrefix(u, "mailto:") {
		return ""
	}
	u, _, _ = strings.Cut(u, "#")
	u, _, _ = strings.Cut(u, "?")
	if s, err := url.PathUnescape(u); err == nil {
		u = s
	}
	base := path.Base(u)
	ext := strings.ToLower(path.Ext(base))
	if !isMarkdown(ext) {
		return ""
	}
	return strings.TrimSuffix(base, path.Ext(base))
}

func dedupeFold(ss []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, s := range ss {
		f := strings.ToLower(strings.Join(strings.Fields(s), " "))
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, s)
	}
	return out
}

// splitFrontMatter finds a leading YAML block between two "---" lines.
func splitFrontMatter(data []byte) (fm, rest []byte, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a BOM
	first, after, found := bytes.Cut(data, []byte("\n"))
	if !found || strings.TrimSpace(string(first)) != "---" {
		return nil, data, false
	}
	for off := 0; off < len(after); {
		line, next, more := bytes.Cut(after[off:], []byte("\n"))
		if t := strings.TrimSpace(string(line)); t == "---" || t == "..." {
			return after[:off], next, true
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	return nil, data, false
}

func (p *PageInput) readFrontMatter(fm []byte) error {
	var m map[string]yaml.Node
	if err := yaml.Unmarshal(fm, &m); err != nil {
		return fmt.Errorf("front matter: %w", err)
	}
	var err error
	str := func(key string) string {
		n, ok := m[key]
		if !ok || err != nil {
			return ""
		}
		if n.Kind != yaml.ScalarNode {
			err = fmt.Errorf("front matter: %s must be a single value (line %d)", key, n.Line)
			return ""
		}
		if n.Tag == "!!null" {
			return ""
		}
		return n.Value
	}
	list := func(key string) []string {
		n, ok := m[key]
		if !ok || err != nil {
			return nil
		}
		switch n.Kind {
		case yaml.ScalarNode:
			if n.Tag == "!!null" {
				return nil
			}
			var out []string
			for _, s := range strings.Split(n.Value, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out
		case yaml.SequenceNode:
			out := []string{}
			for _, c := range n.Content {
				if c.Kind != yaml.ScalarNode {
					err = fmt.Errorf("front matter: %s must be a list of values (line %d)", key, c.Line)
					return nil
				}
				if s := strings.TrimSpace(c.Value); s != "" {
					out = append(out, s)
				}
			}
			return out
		}
		err = fmt.Errorf("front matter: %s must be a list (line %d)", key, n.Line)
		return nil
	}
	p.Title = strings.TrimSpace(str("title"))
	p.Summary = strings.TrimSpace(str("summary"))
	p.Tags = list("tags")
	p.Aliases = list("aliases")
	p.Links = list("links")
	p.Confidence = strings.TrimSpace(str("confidence"))
	if v := str("needs_review"); v != "" {
		b, perr := parseBool(v)
		if perr != nil && err == nil {
			err = fmt.Errorf("front matter: needs_review: %w", perr)
		}
		p.NeedsReview = b
	}
	if err != nil {
		return err
	}
	if n, ok := m["source"]; ok {
		src, serr := readSource(&n)
		if serr != nil {
			return serr
		}
		p.Source = src
	}
	return nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes", "y", "on":
		return true, nil
	case "no", "n", "off":
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}

// readSource reads `source: file.pdf` or a map of the source's fields.
func readSource(n *yaml.Node) (*store.PageSource, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" || strings.TrimSpace(n.Value) == "" {
			return nil, nil
		}
		return &store.PageSource{Filename: strings.TrimSpace(n.Value)}, nil
	case yaml.MappingNode:
		src := &store.PageSource{}
		fields := map[string]*string{
			"r2_key": &src.R2Key, "filename": &src.Filename, "locator": &src.Locator,
			"compiled_at": &src.CompiledAt, "model": &src.Model,
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			dst, ok := fields[k.Value]
			if !ok {
				continue
			}
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("front matter: source.%s must be a single value (line %d)", k.Value, v.Line)
			}
			if v.Tag != "!!null" {
				*dst = strings.TrimSpace(v.Value)
			}
		}
		return src, nil
	}
	return nil, errors.New("front matter: source must be a file name or a map (r2_key, filename, locator, compiled_at, model)")
}

// Headings are the text of a Markdown body's ATX headings ("## Rate
// limits" gives "Rate limits"), in order, outside code blocks: what a
// page is about, for the index's headings field.
func Headings(body string) []string {
	var out []string
	for line := range outsideFences(body) {
		// Up to three spaces may lead a heading; more, or a tab, is code.
		if lead := len(line) - len(strings.TrimLeft(line, " ")); lead > 3 || !strings.HasPrefix(line[lead:], "#") {
			continue
		}
		t := strings.TrimSpace(line)
		level := len(t) - len(strings.TrimLeft(t, "#"))
		rest := t[level:]
		if level > 6 || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			continue // #hashtag, or not a heading
		}
		// A closing run of #s is not part of the text.
		h := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(rest), "#"))
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}

// outsideFences yields the lines of a Markdown body that are not in a
// fenced code block (``` or ~~~), the fences themselves left out.
func outsideFences(body string) iter.Seq[string] {
	return func(yield func(string) bool) {
		inFence := false
		for _, line := range strings.Split(body, "\n") {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				inFence = !inFence
				continue
			}
			if !inFence && !yield(line) {
				return
			}
		}
	}
}
