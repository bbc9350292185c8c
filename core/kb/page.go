package kb

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/store"
)

// PageInput is a page as an import sends it (POST
// /admin/v1/kbs/{kb_id}/pages): the spec's knowledge page fields less the
// computed ones.
type PageInput struct {
	ID          string            `json:"id"`
	Title       string            `json:"title"`
	Summary     string            `json:"summary"`
	Tags        []string          `json:"tags"`
	Aliases     []string          `json:"aliases"`
	Links       []string          `json:"links"`
	Body        string            `json:"body"`
	Confidence  string            `json:"confidence"`
	NeedsReview bool              `json:"needs_review"`
	Source      *store.PageSource `json:"source,omitempty"`
}

// InvalidError is a refused input: the message says what to change.
type InvalidError struct{ msg string }

func (e *InvalidError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &InvalidError{msg: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is a refused input.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// Limits of one page (docs/kb.md).
const (
	MaxPagesPerWrite = 1000
	maxIDBytes       = 200
	maxTitleBytes    = 1 << 10
	maxSummaryBytes  = 8 << 10
	maxBodyBytes     = 1 << 20
	maxListItems     = 256
	maxItemBytes     = 512
	maxLinks         = 2000
	maxFieldBytes    = 1 << 10
)

var reKBID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckKBID refuses a base id that is not 1 to 64 letters, digits, '.',
// '_' or '-' (starting with a letter or digit): ids travel in URL paths
// and in the kb_id query parameter.
func CheckKBID(id string) error {
	if !reKBID.MatchString(id) {
		return invalid("knowledge base id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// CheckPageID refuses a page id that could not travel in a URL path or in
// the comma-separated ids of a batch read: empty, over 200 bytes, not
// UTF-8, with a control character, '/', '\', ',', or surrounding spaces.
func CheckPageID(id string) error {
	switch {
	case id == "" || len(id) > maxIDBytes:
		return invalid("page id %q: must be 1 to %d bytes", id, maxIDBytes)
	case !utf8.ValidString(id):
		return invalid("page id %q: must be UTF-8", id)
	case strings.TrimSpace(id) != id:
		return invalid("page id %q: must not start or end with a space", id)
	case id == "." || id == "..":
		return invalid("page id %q is reserved", id)
	case strings.ContainsAny(id, "/\\,"):
		return invalid("page id %q: must not contain '/', '\\' or ','", id)
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return invalid("page id %q: must not contain control characters", id)
	}
	return nil
}

// CheckSourceKey refuses a source key (r2_key) that is empty, over 1024
// bytes, not UTF-8 or with a control character.
func CheckSourceKey(key string) error {
	switch {
	case key == "" || len(key) > maxFieldBytes:
		return invalid("source key %q: must be 1 to %d bytes", key, maxFieldBytes)
	case !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0:
		return invalid("source key %q: must be UTF-8 without control characters", key)
	}
	return nil
}

func checkText(page, field, s string, max int) error {
	switch {
	case len(s) > max:
		return invalid("page %q: %s is %d bytes, at most %d", page, field, len(s), max)
	case !utf8.ValidString(s):
		return invalid("page %q: %s is not UTF-8", page, field)
	case strings.IndexByte(s, 0) >= 0:
		return invalid("page %q: %s contains a NUL byte", page, field)
	}
	return nil
}

func checkList(page, field string, l []string, maxItems int) error {
	if len(l) > maxItems {
		return invalid("page %q: %d %s, at most %d", page, len(l), field, maxItems)
	}
	for _, s := range l {
		if err := checkText(page, field, s, maxItemBytes); err != nil {
			return err
		}
	}
	return nil
}

// toPage checks an input page and returns it as the store keeps it.
func (in *PageInput) toPage(kbID string) (store.Page, error) {
	if err := CheckPageID(in.ID); err != nil {
		return store.Page{}, err
	}
	id := in.ID
	for _, c := range []struct {
		field string
		s     string
		max   int
	}{
		{"title", in.Title, maxTitleBytes}, {"summary", in.Summary, maxSummaryBytes},
		{"body", in.Body, maxBodyBytes}, {"confidence", in.Confidence, maxFieldBytes},
	} {
		if err := checkText(id, c.field, c.s, c.max); err != nil {
			return store.Page{}, err
		}
	}
	if err := checkList(id, "tags", in.Tags, maxListItems); err != nil {
		return store.Page{}, err
	}
	if err := checkList(id, "aliases", in.Aliases, maxListItems); err != nil {
		return store.Page{}, err
	}
	if err := checkList(id, "links", in.Links, maxLinks); err != nil {
		return store.Page{}, err
	}
	p := store.Page{
		ID: id, KBID: kbID, Title: strings.TrimSpace(in.Title), Summary: in.Summary,
		Tags: trimAll(in.Tags), Aliases: trimAll(in.Aliases), Links: trimAll(in.Links),
		Body: in.Body, Confidence: in.Confidence, NeedsReview: in.NeedsReview,
	}
	if p.Title == "" {
		p.Title = id
	}
	if in.Source != nil {
		src := *in.Source
		for _, f := range []struct {
			name string
			s    string
		}{{"r2_key", src.R2Key}, {"filename", src.Filename}, {"locator", src.Locator}, {"compiled_at", src.CompiledAt}, {"model", src.Model}} {
			if err := checkText(id, "source."+f.name, f.s, maxFieldBytes); err != nil {
				return store.Page{}, err
			}
		}
		if src != (store.PageSource{}) {
			p.Source = &src
		}
	}
	return p, nil
}

// trimAll trims each item and drops the empty ones.
func trimAll(l []string) []string {
	out := make([]string, 0, len(l))
	for _, s := range l {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
