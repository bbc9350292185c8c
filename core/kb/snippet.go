package kb

import (
	"html"
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
func (x *index) snippet(body string, queryTerms map[string]bool) string {
	if body == "" {
		return ""
	}
	tlm := search.TermLocationMap{}
	if len(queryTerms) > 0 {
		for _, t := range x.terms(body) {
			if term := string(t.Term); queryTerms[term] {
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
		for end < len(orig) && n < snippetRunes {
			_, size := utf8.DecodeRune(orig[end:])
			end += size
			n++
		}
		s := html.EscapeString(body[:end])
		if end < len(orig) {
			s += simplehl.DefaultSeparator
		}
		return s
	}
	ordered.MergeOverlapping()
	s := formatter.Format(best, ordered)
	if best.Start != 0 {
		s = simplehl.DefaultSeparator + s
	}
	if best.End != len(orig) {
		s += simplehl.DefaultSeparator
	}
	return s
}

// queryTerms are the index terms of a query.
func (x *index) queryTerms(q string) map[string]bool {
	out := map[string]bool{}
	for _, t := range x.terms(q) {
		out[string(t.Term)] = true
	}
	return out
}
