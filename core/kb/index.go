package kb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/store"
)

// schemaVersion names the index's mapping and analysis. An index written
// with another version is rebuilt from the store at open: raise it
// whenever the mapping, the analyzer or the indexed fields change.
const schemaVersion = 2

// textAnalyzer is the one analyzer of every text field (docs/kb.md):
// bleve's cjk analyzer chain (unicode words, full-width folding, lower
// case, CJK runs as overlapping bigrams) with English possessives, stop
// words and Porter stemming for the other words. CJK bigrams pass the
// English filters untouched, so one field serves mixed text.
const textAnalyzer = "tollgate_text"

// The fields searched, with their boosts: a page whose title or headings
// hold the query is about it, and ranks above one that mentions it in
// passing (docs/kb.md has the measure).
var searchFields = []struct {
	name  string
	boost float64
}{
	{"title", 4}, {"headings", 3}, {"aliases", 3}, {"tags", 2}, {"summary", 2}, {"body", 1},
}

const fieldKB = "kb_id"

// Internal keys of the index.
var (
	keySchema = []byte("tollgate:schema")
	keySeq    = []byte("tollgate:seq") // the last page change applied
)

// changeBatch is how many changes one index batch applies.
const changeBatch = 1000

// pageSource is what the index reads from the store.
type pageSource interface {
	GetPage(ctx context.Context, id string) (store.Page, error)
	PageChanges(ctx context.Context, after uint64, limit int) ([]store.PageChange, error)
	PageVersion(ctx context.Context) (uint64, error)
}

// index is the search index: bleve, BM25, kept beside the store and
// following its page changes. It stores no field: hits are page ids, and
// pages are read from the store.
type index struct {
	bi       bleve.Index
	src      pageSource
	log      hclog.Logger
	analyzer analysis.Analyzer
	mu       sync.Mutex // one sync at a time; close waits for it
	closed   bool       // guarded by mu
	seq      atomic.Uint64
}

func indexMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bleveindex.BM25Scoring
	err := im.AddCustomAnalyzer(textAnalyzer, map[string]any{
		"type":      custom.Name,
		"tokenizer": unicode.Name,
		"token_filters": []any{
			en.PossessiveName, cjk.WidthName, lowercase.Name, cjk.BigramName, en.StopName, porter.Name,
		},
	})
	if err != nil {
		return nil, err
	}
	im.DefaultAnalyzer = textAnalyzer
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range searchFields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = textAnalyzer
		fm.Store, fm.IncludeTermVectors, fm.IncludeInAll, fm.DocValues = false, false, false, false
		doc.AddFieldMappingsAt(f.name, fm)
	}
	kb := bleve.NewKeywordFieldMapping()
	kb.Analyzer = keyword.Name
	kb.Store, kb.IncludeTermVectors, kb.IncludeInAll, kb.DocValues = false, false, false, false
	doc.AddFieldMappingsAt(fieldKB, kb)
	im.DefaultMapping = doc
	return im, nil
}

// openIndex opens the index at path ("" keeps it in memory), rebuilding
// it when it is missing, unreadable, of another schema version, or ahead of
// the store (a data dir put back from a backup), then brings it up to date.
func openIndex(ctx context.Context, path string, src pageSource, log hclog.Logger) (*index, error) {
	im, err := indexMapping()
	if err != nil {
		return nil, err
	}
	x := &index{src: src, log: log}
	storeSeq, err := src.PageVersion(ctx)
	if err != nil {
		return nil, err
	}
	if path != "" {
		bi, err := bleve.Open(path)
		switch {
		case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
			log.Info("knowledge index missing: building it from the store", "path", path)
		case err != nil:
			log.Warn("knowledge index unreadable: rebuilding it from the store", "path", path, "error", err)
		default:
			x.bi = bi
			why := ""
			if v, _ := bi.GetInternal(keySchema); string(v) != strconv.Itoa(schemaVersion) {
				why = fmt.Sprintf("schema %q, want %d", v, schemaVersion)
			} else if seq, err := readSeq(bi); err != nil {
				why = err.Error()
			} else if seq > storeSeq {
				why = fmt.Sprintf("it has change %d, the store only %d", seq, storeSeq)
			} else {
				x.seq.Store(seq)
			}
			if why != "" {
				log.Info("knowledge index out of date: rebuilding it from the store", "path", path, "reason", why)
				_ = bi.Close()
				x.bi = nil
			}
		}
		if x.bi == nil {
			if err := os.RemoveAll(path); err != nil {
				return nil, err
			}
			if x.bi, err = bleve.New(path, im); err != nil {
				return nil, fmt.Errorf("kb: create index %s: %w", path, err)
			}
		}
	} else if x.bi, err = bleve.NewUsing("", im, scorch.Name, scorch.Name, nil); err != nil {
		// scorch, not NewMemOnly's upsidedown: only scorch keeps the
		// field statistics BM25 needs.
		return nil, err
	}
	if err := x.bi.SetInternal(keySchema, []byte(strconv.Itoa(schemaVersion))); err != nil {
		_ = x.bi.Close()
		return nil, err
	}
	x.analyzer = x.bi.Mapping().AnalyzerNamed(textAnalyzer)
	if x.analyzer == nil {
		_ = x.bi.Close()
		return nil, errors.New("kb: the text analyzer is missing")
	}
	if err := x.sync(ctx); err != nil {
		_ = x.bi.Close()
		return nil, err
	}
	return x, nil
}

func readSeq(bi bleve.Index) (uint64, error) {
	v, err := bi.GetInternal(keySeq)
	if err != nil || len(v) == 0 {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.New("bad change number")
	}
	return binary.BigEndian.Uint64(v), nil
}

// indexDoc is what the index holds of a page.
func indexDoc(p *store.Page) map[string]any {
	return map[string]any{
		fieldKB: p.KBID, "title": p.Title, "headings": strings.Join(Headings(p.Body), "\n"), "aliases": p.Aliases,
		"summary": p.Summary, "tags": p.Tags, "body": p.Body,
	}
}

// sync applies the store's page changes the index has not seen, a batch
// at a time; each batch records the last change it holds, so a crash
// between batches resumes there.
func (x *index) sync(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for !x.closed {
		after := x.seq.Load()
		cs, err := x.src.PageChanges(ctx, after, changeBatch)
		if err != nil || len(cs) == 0 {
			return err
		}
		b := x.bi.NewBatch()
		for _, c := range cs {
			p, err := x.src.GetPage(ctx, c.PageID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				b.Delete(c.PageID)
			case err != nil:
				return err
			default:
				// A later change of this page is ahead in the log; indexing
				// the current content now is what it would do.
				if err := b.Index(p.ID, indexDoc(&p)); err != nil {
					return err
				}
			}
		}
		last := cs[len(cs)-1].Seq
		b.SetInternal(keySeq, binary.BigEndian.AppendUint64(nil, last))
		if err := x.bi.Batch(b); err != nil {
			return fmt.Errorf("kb: index batch: %w", err)
		}
		x.seq.Store(last)
	}
	return nil
}

// hit is one search result: a page id and its score.
type hit struct {
	ID    string
	Score float64
}

// search runs q over the bases named (none: no result), best first. all
// says the bases named are every base there is: the kb_id filter, which
// costs a check per match, is left out.
func (x *index) search(ctx context.Context, q string, kbs []string, all bool, limit, offset int) ([]hit, uint64, error) {
	if len(kbs) == 0 {
		return nil, 0, nil
	}
	text := bleve.NewDisjunctionQuery()
	for _, f := range searchFields {
		m := bleve.NewMatchQuery(q)
		m.SetField(f.name)
		m.SetBoost(f.boost)
		m.Analyzer = textAnalyzer
		text.AddQuery(m)
	}
	var filter query.Query
	switch {
	case all:
	case len(kbs) == 1:
		t := bleve.NewTermQuery(kbs[0])
		t.SetField(fieldKB)
		filter = t
	default:
		d := bleve.NewDisjunctionQuery()
		for _, k := range kbs {
			t := bleve.NewTermQuery(k)
			t.SetField(fieldKB)
			d.AddQuery(t)
		}
		filter = d
	}
	var top query.Query = text
	if filter != nil {
		bq := bleve.NewBooleanQuery()
		bq.AddMust(text)
		bq.AddFilter(filter)
		top = bq
	}
	req := bleve.NewSearchRequestOptions(top, limit, offset, false)
	res, err := x.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	out := make([]hit, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = hit{ID: h.ID, Score: h.Score}
	}
	return out, res.Total, nil
}

// terms are the index terms of text, as the text fields analyze it.
func (x *index) terms(text string) analysis.TokenStream {
	return x.analyzer.Analyze([]byte(text))
}

// close waits for a sync under way (the follow loop may still run while
// the gateway shuts down); later syncs do nothing.
func (x *index) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	return x.bi.Close()
}
