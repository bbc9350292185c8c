package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/tollgate-gw/tollgate/core/kb"
)

// The generated corpus: page j is the same for a seed whatever is asked
// before it. Words are made of three syllables from a vocabulary of
// 30,000, drawn with a Zipf law as text has them; one page in ten is
// Chinese text with a few Latin words. Bodies run 150 to 450 words in
// paragraphs, with [[links]] to other pages' titles.

const (
	vocabSize = 30_000
	cjkChars  = 3_000
	tagCount  = 300
)

var syllables = func() []string {
	var out []string
	for _, c := range "bdfgklmnprstvz" {
		for _, v := range "aeiou" {
			out = append(out, string(c)+string(v))
		}
	}
	return out // 70
}()

// word is the vocabulary word of a rank (0 = most frequent).
func word(rank int) string {
	n := len(syllables)
	return syllables[rank%n] + syllables[(rank/n)%n] + syllables[(rank/(n*n))%n] + "x"
}

// cjk is the Chinese character of a rank.
func cjk(rank int) rune { return rune(0x4E00 + (rank*7919)%20902) }

type corpus struct {
	seed  uint64
	pages int
}

func newCorpus(seed uint64, pages int) *corpus { return &corpus{seed: seed, pages: pages} }

type pageGen struct {
	r    *rand.Rand
	zw   *rand.Zipf
	zc   *rand.Zipf
	j    int
	isCJ bool
}

func (c *corpus) gen(j int) *pageGen {
	r := rand.New(rand.NewPCG(c.seed, uint64(j)+1))
	return &pageGen{r: r, zw: rand.NewZipf(r, 1.07, 2, vocabSize-1), zc: rand.NewZipf(r, 1.05, 2, cjkChars-1), j: j, isCJ: j%10 == 7}
}

func (g *pageGen) words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = word(int(g.zw.Uint64()))
	}
	return strings.Join(ws, " ")
}

func (g *pageGen) hanzi(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteRune(cjk(int(g.zc.Uint64())))
		if i%17 == 16 {
			b.WriteString("，")
		}
	}
	b.WriteString("。")
	return b.String()
}

func pageID(j int) string { return fmt.Sprintf("page-%06d", j) }

// title is page j's title (its first words, so a query can name it).
func (c *corpus) title(j int) string {
	g := c.gen(j)
	if g.isCJ {
		return g.hanzi(4 + g.r.IntN(4))
	}
	return g.words(2 + g.r.IntN(4))
}

func (c *corpus) page(j int) kb.PageInput {
	title := c.title(j)
	g := c.gen(j)
	g.r.Uint64() // past the title's draws: the rest differs from it
	p := kb.PageInput{ID: pageID(j), Title: title, Confidence: "medium", NeedsReview: j%50 == 0}
	p.Summary = g.words(12 + g.r.IntN(14))
	for range 1 + g.r.IntN(3) {
		p.Tags = append(p.Tags, fmt.Sprintf("tag-%03d", g.r.IntN(tagCount)))
	}
	for range g.r.IntN(3) {
		p.Aliases = append(p.Aliases, g.words(2))
	}
	var body strings.Builder
	body.WriteString("# " + title + "\n\n")
	words := 150 + g.r.IntN(300)
	for words > 0 {
		n := min(words, 40+g.r.IntN(30))
		if g.isCJ {
			body.WriteString(g.hanzi(n*2) + " " + g.words(3))
		} else {
			body.WriteString(g.words(n))
		}
		if g.r.IntN(2) == 0 {
			t := g.r.IntN(c.pages)
			body.WriteString(" See [[" + pageID(t) + "]].")
		}
		body.WriteString("\n\n")
		words -= n
	}
	p.Body = body.String()
	p.Links = kb.BodyLinks(p.Body)
	return p
}

// queries are the query classes, n queries each.
func (c *corpus) queries(n int) []queryClass {
	r := rand.New(rand.NewPCG(c.seed, 0))
	pick := func(lo, hi int) string { return word(lo + r.IntN(hi-lo)) }
	classes := []queryClass{
		{name: "one common word (rank < 100)"},
		{name: "one mid-frequency word (rank 1,000-5,000)"},
		{name: "one rare word (rank 20,000-30,000)"},
		{name: "two words (common + mid)"},
		{name: "a page's title (2-5 words)"},
		{name: "Chinese, two characters"},
	}
	for range n {
		classes[0].qs = append(classes[0].qs, pick(0, 100))
		classes[1].qs = append(classes[1].qs, pick(1000, 5000))
		classes[2].qs = append(classes[2].qs, pick(20000, 30000))
		classes[3].qs = append(classes[3].qs, pick(0, 100)+" "+pick(1000, 5000))
		j := r.IntN(c.pages)
		if j%10 == 7 {
			j++
		}
		classes[4].qs = append(classes[4].qs, c.title(j%c.pages))
		cj := (r.IntN(max(c.pages/10, 1)))*10 + 7
		rs := []rune(c.title(cj % c.pages))
		if len(rs) >= 2 {
			classes[5].qs = append(classes[5].qs, string(rs[:2]))
		}
	}
	return classes
}
