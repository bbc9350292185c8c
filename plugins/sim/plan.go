package sim

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// plan is one answer, decided before any byte is written.
type plan struct {
	p        protocol.ID
	model    string
	hash     uint64 // of the request: every id derives from it
	created  int64  // the request's time, Unix seconds
	text     []byte // the reply text, words joined by single spaces
	words    int    // words in text
	chunks   int    // content chunks the text streams in
	tool     string // the called tool's name; "" for a text reply
	image    bool   // a responses-style image_generation call
	args     []byte // the call's JSON arguments
	argFrags int    // argument fragments a stream sends
	limited  bool   // stopped by max tokens
	in       int64  // input tokens, cached and written ones included
	cached   int64
	written  int64 // input tokens written to the cache (Anthropic reports them apart)
	out      int64 // output tokens, reasoning ones included
	thinking int64
	conv     *conv
}

// argFragment is the byte length of one streamed tool-argument fragment;
// each counts as one output token.
const argFragment = 16

// snippetRunes is how much of the prompt or tool result a reply quotes.
const snippetRunes = 60

var filler = [...]string{
	"toll", "gate", "lane", "booth", "road", "bridge", "ticket", "meter",
	"credit", "wallet", "route", "ledger", "token", "stream", "answer", "sim",
}

func newPlan(p protocol.ID, model string, body []byte, c *conv, k *Knobs, now time.Time) *plan {
	h := fnv64(fnv64(fnv64(fnvOffset, string(p)), model), unsafeString(body))
	pl := &plan{
		p: p, model: model, hash: h, conv: c,
		created: now.Unix(),
		in:      (c.inputBytes + 3) / 4,
	}
	pl.cached = min(k.Cached, pl.in)
	pl.written = min(k.Written, pl.in-pl.cached)
	pl.thinking = k.Reasoning
	if wantsImage(p, c) {
		pl.image = true
		pl.out = 1 + pl.thinking
		return pl
	}
	if c.lastIsUser && !c.hasResult {
		if t, args, ok := pickTool(p, c); ok {
			pl.tool = t.name
			pl.args = args
			pl.argFrags = max((len(pl.args)+argFragment-1)/argFragment, 1)
			pl.out = int64(pl.argFrags) + pl.thinking
			return pl
		}
	}
	words := k.Words
	if words <= 0 {
		words = DefaultWords
	}
	if c.maxTokens > 0 && int64(words) > c.maxTokens {
		words, pl.limited = int(c.maxTokens), true
	}
	pl.text, pl.words = replyText(c, words)
	pl.chunks = pl.words
	if k.Chunks > 0 && k.Chunks < pl.words {
		pl.chunks = k.Chunks
	}
	pl.out = int64(pl.words) + pl.thinking
	return pl
}

// replyText builds the words of a text reply: a lead quoting the prompt
// (or the tool result), then filler, exactly n words.
func replyText(c *conv, n int) ([]byte, int) {
	b := make([]byte, 0, 32+snippetRunes+n*7)
	words := 0
	add := func(w string) bool {
		if words == n {
			return false
		}
		if words > 0 {
			b = append(b, ' ')
		}
		b = append(b, w...)
		words++
		return true
	}
	lead, quote := "Tollgate sim reply to:", c.userText
	if c.hasResult {
		lead, quote = "Tool result received:", c.result
	}
	for w := range strings.FieldsSeq(lead) {
		add(w)
	}
	for w := range strings.FieldsSeq(snippet(quote)) {
		if !add(w) {
			break
		}
	}
	// The filler starts where the quoted text says, so a prompt gets the
	// same words streamed or not.
	for i := int(fnv64(fnvOffset, quote) % uint64(len(filler))); words < n; i++ {
		add(filler[i%len(filler)])
	}
	return b, words
}

// snippet is the first snippetRunes runes of s, markers removed; runes
// that are not graphic become spaces.
func snippet(s string) string {
	s = stripMarkers(s)
	n := 0
	for i := range s {
		if n == snippetRunes {
			s = s[:i]
			break
		}
		n++
	}
	if strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsGraphic(r) && r != ' ' }) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			return ' '
		}
		return r
	}, s)
}

// pickTool applies the tool rule: the offered tool named earliest in the
// last user message (whole word, exact case), else the first tool when the
// message says "use a tool" or "call a tool", else the tool that does the
// action the message asks for in plain words (pickByIntent). It returns
// the call's arguments.
func pickTool(p protocol.ID, c *conv) (toolDef, []byte, bool) {
	if !c.tools.IsArray() {
		return toolDef{}, nil, false
	}
	if t, ok := namedTool(p, c); ok {
		g := argGen{root: t.schema, text: argText(c.userText)}
		if g.text == "" {
			// "Use Glob to list the files": the action says what to fill.
			if in := readIntent(c.userText, c.body); in.action != actNone {
				tt := readTool(t)
				return t, tt.args(&in), true
			}
		}
		return t, toolArgsWith(make([]byte, 0, 64), t, &g), true
	}
	in := readIntent(c.userText, c.body)
	return pickByIntent(p, c, &in)
}

// namedTool is the tool a message names, or the first for "use a tool".
func namedTool(p protocol.ID, c *conv) (toolDef, bool) {
	text := c.userText
	var best, first toolDef
	bestAt, found, any := len(text)+1, false, false
	eachTool(p, c.tools, func(t toolDef) bool {
		if t.name == "" {
			return true
		}
		if !any {
			first, any = t, true
		}
		if at := nameIndex(text, t.name); at >= 0 && (at < bestAt || at == bestAt && len(t.name) > len(best.name)) {
			best, bestAt, found = t, at, true
		}
		return true
	})
	if found {
		return best, true
	}
	if any && (containsFold(text, "use a tool") || containsFold(text, "call a tool")) {
		return first, true
	}
	return toolDef{}, false
}

// nameIndex finds a tool's name in text, as wordIndex does, except where a
// name that is also an action word opens a sentence ("Write a poem",
// "Read README.md"): there it is the verb, and the intent rule decides.
func nameIndex(text, name string) int {
	if _, verb := verbs[strings.ToLower(name)]; !verb {
		return wordIndex(text, name)
	}
	for off := 0; off < len(text); {
		i := wordIndex(text[off:], name)
		if i < 0 {
			return -1
		}
		i += off
		if !sentenceStart(text, i) {
			return i
		}
		off = i + len(name)
	}
	return -1
}

func sentenceStart(text string, i int) bool {
	j := i
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
		j--
	}
	return j == 0 || strings.ContainsRune(".!?\n", rune(text[j-1]))
}

// wordIndex finds name in text where it is not part of a longer identifier.
func wordIndex(text, name string) int {
	off := 0
	for {
		i := strings.Index(text[off:], name)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(name)
		if (i == 0 || !identByte(text[i-1])) && (end == len(text) || !identByte(text[end])) {
			return i
		}
		off = i + 1
	}
}

func identByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// chunkEnd returns the end offset in pl.text of content chunk i (0-based).
// Chunks split at word starts, so every chunk after the first begins with
// its space, as vendors stream text.
func (pl *plan) chunkEnd(i, from int) int {
	target := (i + 1) * pl.words / pl.chunks
	if target >= pl.words {
		return len(pl.text)
	}
	// Count the words up to target: chunk i starts at from, which is the
	// start of word i*words/chunks.
	w := i * pl.words / pl.chunks
	pos := from
	for w < target {
		j := strings.IndexByte(unsafeString(pl.text[pos+1:]), ' ')
		if j < 0 {
			return len(pl.text)
		}
		pos += j + 1
		w++
	}
	return pos
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv64(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	h ^= 0xff // a separator, so ("ab","c") and ("a","bc") differ
	return h * fnvPrime
}

// appendID appends the 24 hex digits of a request-derived id; salt tells
// apart the ids of one answer.
func (pl *plan) appendID(dst []byte, salt uint64) []byte {
	h := pl.hash ^ salt*0x9e3779b97f4a7c15
	dst = appendHex(dst, h)
	dst = appendHex(dst, (h^h>>29)*0xbf58476d1ce4e5b9)
	return dst[:len(dst)-8]
}
