package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRunSmall runs the whole benchmark on 500 pages, so it cannot rot.
func TestRunSmall(t *testing.T) {
	rep, err := Run(context.Background(), Config{Pages: 500, Batch: 200, Queries: 3, Dir: t.TempDir(), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Queries) != 8 || rep.IndexBytes <= 0 || rep.RebuildTime <= 0 || rep.ImportTime <= 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, q := range rep.Queries {
		if q.Samples == 0 || q.P99 < q.P50 {
			t.Errorf("%s: %+v", q.Name, q)
		}
		// Rare words may be absent from a corpus this small.
		if q.AvgHits == 0 && !strings.Contains(q.Name, "rare") {
			t.Errorf("%s found nothing", q.Name)
		}
	}
	var out bytes.Buffer
	writeMarkdown(&out, rep)
	if !strings.Contains(out.String(), "| Chinese, two characters |") {
		t.Fatalf("markdown:\n%s", out.String())
	}
}

func TestCorpusIsStable(t *testing.T) {
	c := newCorpus(9, 100)
	if a, b := c.page(42), c.page(42); a.Body != b.Body || a.Title != b.Title {
		t.Fatal("page 42 differs between two draws")
	}
	if p := c.page(17); utf8.RuneCountInString(p.Title) == len(p.Title) {
		t.Fatalf("page 17 is not Chinese: %q", p.Title)
	}
}
