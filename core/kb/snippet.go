package kb

import (
	"html"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/highlight"
	htmlformat "github.com/blevesearch/bleve/v2/search/highlight/format/html"
	"github.com/blevesearch/bleve/v2/search/highlight/fragmenter/simple"
	simplehl "github.com/blevesearch/bleve/v2/search/highlight/highlighter/simple"
)

// snippetRunes is the length of a snippet, bleve's default fragment.
const snippetRunes = 200

var (
	fragmenter = simple.NewFragmenter(snippetRunes)
	formatter  = htmlformat.NewFragmentFormatter("<mark>", "</mark>")
)

// snippet is the best fragment of body for the query terms, formatted as
// bleve's html highlighter does (matches in <mark>, the rest escaped, "…"
// where the fragment cuts the body). The index stores no text and no term
// vectors, so the body comes from the store and is analyzed here, with
// the analyzer that indexed it. A body without a match gives its start.
func (x *index) snippet(body string, q parsedQuery) string {
	if body == "" {
		return ""
	}
	full := body
	body, at := window(body, q.words)
	tlm := search.TermLocationMap{}
	if len(q.terms) > 0 {
		for _, t := range x.terms(body) {
			if term := string(t.Term); q.terms[term] {
				tlm.AddLocation(term, &search.Location{Pos: uint64(t.Position), Start: uint64(t.Start), End: uint64(t.End)})
			}
		}
	}
	orig := []byte(body)
	ordered := highlight.OrderTermLocations(tlm)
	scorer := simplehl.NewFragmentScorer(tlm)
	var best *highlight.Fragment
	for _, f := range fragmenter.Fragment(orig, ordered) {
		scorer.Score(f)
		if best == nil || f.Score > best.Score {
			best = f
		}
	}
	if best == nil {
		end, n := 0, 0
		for end < len(full) && n < snippetRunes {
			_, size := utf8.DecodeRuneInString(full[end:])
			end += size
			n++
		}
		s := html.EscapeString(full[:end])
		if end < len(full) {
			s += simplehl.DefaultSeparator
		}
		return s
	}
	ordered.MergeOverlapping()
	s := formatter.Format(best, ordered)
	if at+best.Start != 0 {
		s = simplehl.DefaultSeparator + s
	}
	if at+best.End != len(full) {
		s += simplehl.DefaultSeparator
	}
	return s
}

// parsedQuery is a search's text as the snippets need it: its index terms, and
// its words as written (lower case), to find them in a long body.
type parsedQuery struct {
	terms map[string]bool
	words []string
}

func (x *index) parseQuery(q string) parsedQuery {
	out := parsedQuery{terms: map[string]bool{}}
	for _, t := range x.terms(q) {
		out.terms[string(t.Term)] = true
		if t.Start >= 0 && t.End <= len(q) && t.Start < t.End {
			out.words = append(out.words, strings.ToLower(q[t.Start:t.End]))
		}
	}
	return out
}

// snippetWindow is how much of a body a snippet analyzes: analyzing costs
// about a microsecond per 50 bytes, and a body may be a megabyte.
const snippetWindow = 16 << 10

// window is the part of a long body to analyze, and its offset: around
// the first place a query word appears (its case ignored), else the start.
func window(body string, words []string) (string, int) {
	if len(body) <= snippetWindow {
		return body, 0
	}
	lower := strings.ToLower(body)
	first := -1
	for _, w := range words {
		if i := strings.Index(lower, w); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	start := 0
	// ToLower keeps byte offsets for most text; a rune boundary is found
	// in body itself either way.
	if first > snippetWindow/2 && len(lower) == len(body) {
		start = first - snippetWindow/2
	}
	end := min(start+snippetWindow, len(body))
	for start > 0 && !utf8.RuneStart(body[start]) {
		start--
	}
	for end < len(body) && !utf8.RuneStart(body[end]) {
		end++
	}
	return body[start:end], start
}
