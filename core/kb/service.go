package kb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/store"
)

// SourceLinkTTL is how long a source download link is valid (the spec's
// source link validity: one hour).
const SourceLinkTTL = time.Hour

// Store is what the knowledge base needs of the store: its own role, and
// accounts to check a base's readers.
type Store interface {
	store.KnowledgeBases
	GetAccount(ctx context.Context, id string) (store.Account, error)
}

// Files is the hosted-files store, where source files live with no
// expiry.
type Files interface {
	Put(ctx context.Context, f files.File) (files.Info, error)
	Link(base, id string, validFor time.Duration) (string, time.Time, error)
	Delete(ctx context.Context, id string) error
}

// Options configure Open.
type Options struct {
	Store Store
	Files Files
	// IndexPath is the search index's directory (<data dir>/kb.bleve);
	// empty keeps the index in memory.
	IndexPath string
	Logger    hclog.Logger
	Now       func() time.Time
	// FollowEvery is how often Run applies the store's page changes that
	// other instances made; 0 means every second.
	FollowEvery time.Duration
}

// ErrNotFound is a base or page that does not exist or that the account
// may not read: the two are one answer (spec: Knowledge-base REST).
var ErrNotFound = errors.New("kb: not found")

type notFound struct{ msg string }

func (e *notFound) Error() string        { return e.msg }
func (e *notFound) Is(target error) bool { return target == ErrNotFound }

func notFoundf(format string, args ...any) error {
	return &notFound{msg: fmt.Sprintf(format, args...)}
}

// IsConflict reports whether err refused a page id that belongs to
// another base.
func IsConflict(err error) bool { return errors.Is(err, store.ErrExists) }

// Service is the knowledge base: the operator's imports, and the reads of
// the REST API and the MCP server, each limited to what the account may
// read.
type Service struct {
	st     Store
	files  Files
	idx    *index
	log    hclog.Logger
	now    func() time.Time
	follow time.Duration
}

// Open opens the search index (rebuilding it from the store when needed)
// and brings it up to date.
func Open(ctx context.Context, o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FollowEvery <= 0 {
		o.FollowEvery = time.Second
	}
	start := time.Now()
	idx, err := openIndex(ctx, o.IndexPath, o.Store, o.Logger)
	if err != nil {
		return nil, err
	}
	o.Logger.Debug("knowledge index ready", "path", o.IndexPath, "change", idx.seq.Load(), "took", time.Since(start))
	return &Service{st: o.Store, files: o.Files, idx: idx, log: o.Logger, now: o.Now, follow: o.FollowEvery}, nil
}

// Run keeps the index following the store's page changes, including those
// another gateway instance on the same store makes, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.follow)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.idx.sync(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("knowledge index: applying page changes", "error", err)
			}
		}
	}
}

// Sync applies the store's page changes the index has not seen yet.
func (s *Service) Sync(ctx context.Context) error { return s.idx.sync(ctx) }

// Close closes the index.
func (s *Service) Close() error { return s.idx.close() }

// BaseSpec is what PUT /admin/v1/kbs/{kb_id} says; nil leaves a field as
// it is (a new base: its id as name, no readers).
type BaseSpec struct {
	Name    *string
	Readers *[]string
}

// PutBase creates or updates a base. Readers must be existing account ids
// or "*".
func (s *Service) PutBase(ctx context.Context, id string, spec BaseSpec) (store.KnowledgeBase, bool, error) {
	if err := CheckKBID(id); err != nil {
		return store.KnowledgeBase{}, false, err
	}
	kb, err := s.st.GetKnowledgeBase(ctx, id)
	created := errors.Is(err, store.ErrNotFound)
	if err != nil && !created {
		return kb, false, err
	}
	if created {
		kb = store.KnowledgeBase{ID: id, Name: id, Readers: []string{}, CreatedAt: s.now().UTC()}
	}
	if spec.Name != nil {
		name := strings.TrimSpace(*spec.Name)
		if err := checkText(id, "name", name, maxFieldBytes); err != nil {
			return kb, false, invalid("knowledge base name: must be UTF-8, at most %d bytes", maxFieldBytes)
		}
		if name == "" {
			name = id
		}
		kb.Name = name
	}
	if spec.Readers != nil {
		readers, err := s.checkReaders(ctx, *spec.Readers)
		if err != nil {
			return kb, false, err
		}
		kb.Readers = readers
	}
	kb.UpdatedAt = s.now().UTC()
	if err := s.st.PutKnowledgeBase(ctx, kb); err != nil {
		return kb, false, err
	}
	kb, err = s.st.GetKnowledgeBase(ctx, id)
	return kb, created, err
}

func (s *Service) checkReaders(ctx context.Context, in []string) ([]string, error) {
	out := []string{}
	for _, r := range in {
		r = strings.TrimSpace(r)
		if r == store.KBEveryone {
			return []string{store.KBEveryone}, nil
		}
		if r == "" || slices.Contains(out, r) {
			continue
		}
		if _, err := s.st.GetAccount(ctx, r); errors.Is(err, store.ErrNotFound) {
			return nil, invalid("reader %q is not an account id (use account ids, or \"*\" for every account)", r)
		} else if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Base returns a base (admin view: no readability check).
func (s *Service) Base(ctx context.Context, id string) (store.KnowledgeBase, error) {
	kb, err := s.st.GetKnowledgeBase(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return kb, notFoundf("knowledge base %q not found", id)
	}
	return kb, err
}

// Bases returns every base (admin view).
func (s *Service) Bases(ctx context.Context) ([]store.KnowledgeBase, error) {
	return s.st.ListKnowledgeBases(ctx)
}

// ListPages returns up to limit pages of a base with ids after after
// (admin view).
func (s *Service) ListPages(ctx context.Context, kbID, after string, limit int) ([]store.Page, error) {
	return s.st.ListPages(ctx, kbID, after, limit)
}

// DeleteBase removes a base, its pages and its source files.
func (s *Service) DeleteBase(ctx context.Context, id string) error {
	srcs, err := s.st.ListKBSources(ctx, id)
	if err != nil {
		return err
	}
	if err := s.st.DeleteKnowledgeBase(ctx, id); errors.Is(err, store.ErrNotFound) {
		return notFoundf("knowledge base %q not found", id)
	} else if err != nil {
		return err
	}
	for _, src := range srcs {
		if err := s.files.Delete(ctx, src.FileID); err != nil {
			s.log.Warn("deleting a source file of a deleted knowledge base", "kb_id", id, "file", src.FileID, "error", err)
		}
	}
	return s.idx.sync(ctx)
}

// PutPages creates or updates pages of a base in place; pages not named
// are left alone. The index has them when it returns.
func (s *Service) PutPages(ctx context.Context, kbID string, in []PageInput) (store.PutPagesResult, error) {
	var res store.PutPagesResult
	if len(in) > MaxPagesPerWrite {
		return res, invalid("%d pages in one write, at most %d: send them in several", len(in), MaxPagesPerWrite)
	}
	pages := make([]store.Page, len(in))
	seen := make(map[string]bool, len(in))
	for i := range in {
		p, err := in[i].toPage(kbID)
		if err != nil {
			return res, err
		}
		if seen[p.ID] {
			return res, invalid("page %q appears twice", p.ID)
		}
		seen[p.ID] = true
		pages[i] = p
	}
	res, err := s.st.PutPages(ctx, kbID, pages, s.now().UTC())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return res, notFoundf("knowledge base %q not found: create it with PUT /admin/v1/kbs/%s first", kbID, kbID)
	case err != nil:
		return res, err
	}
	return res, s.idx.sync(ctx)
}

// DeletePage removes a page of a base.
func (s *Service) DeletePage(ctx context.Context, kbID, id string) error {
	if err := s.st.DeletePage(ctx, kbID, id); errors.Is(err, store.ErrNotFound) {
		return notFoundf("page %q not found in knowledge base %q", id, kbID)
	} else if err != nil {
		return err
	}
	return s.idx.sync(ctx)
}

// PutSource stores a source file's bytes in the hosted-files store, with
// no expiry, under the base and key; a file stored before under the same
// key is replaced.
func (s *Service) PutSource(ctx context.Context, kbID, key, filename, contentType string, r io.Reader) (store.KBSource, error) {
	if err := CheckSourceKey(key); err != nil {
		return store.KBSource{}, err
	}
	if _, err := s.Base(ctx, kbID); err != nil {
		return store.KBSource{}, err
	}
	if filename == "" {
		filename = key[strings.LastIndexByte(key, '/')+1:]
	}
	info, err := s.files.Put(ctx, files.File{Reader: r, ContentType: contentType, Name: filename, Owner: "kb:" + kbID})
	if err != nil {
		if errors.Is(err, files.ErrTooLarge) {
			return store.KBSource{}, invalid("source file is too large")
		}
		return store.KBSource{}, err
	}
	src := store.KBSource{KBID: kbID, Key: key, FileID: info.ID, Filename: info.Name, ContentType: info.ContentType,
		Size: info.Size, UpdatedAt: s.now().UTC()}
	prev, replaced, err := s.st.PutKBSource(ctx, src)
	if err != nil {
		_ = s.files.Delete(context.WithoutCancel(ctx), info.ID)
		if errors.Is(err, store.ErrNotFound) {
			return src, notFoundf("knowledge base %q not found", kbID)
		}
		return src, err
	}
	if replaced && prev.FileID != info.ID {
		if err := s.files.Delete(ctx, prev.FileID); err != nil {
			s.log.Warn("deleting a replaced source file", "kb_id", kbID, "file", prev.FileID, "error", err)
		}
	}
	return src, nil
}

// SeedBase creates base id readable by every account when it is missing
// (an existing base keeps its name and readers), then creates or updates
// the pages of the Markdown folder fsys in it. A page without a summary
// gets its first paragraph. The embedded default seeds its `default`
// base with the project's docs this way.
func (s *Service) SeedBase(ctx context.Context, id, name string, fsys fs.FS) (store.PutPagesResult, error) {
	var res store.PutPagesResult
	if _, err := s.st.GetKnowledgeBase(ctx, id); errors.Is(err, store.ErrNotFound) {
		everyone := []string{store.KBEveryone}
		if _, _, err := s.PutBase(ctx, id, BaseSpec{Name: &name, Readers: &everyone}); err != nil {
			return res, err
		}
	} else if err != nil {
		return res, err
	}
	folder, err := LoadFolder(fsys)
	if err != nil {
		return res, err
	}
	for i := range folder.Pages {
		p := &folder.Pages[i]
		if p.Summary == "" {
			p.Summary = FirstParagraph(p.Body, 300)
		}
	}
	for rest := folder.Pages; len(rest) > 0; {
		n := min(len(rest), MaxPagesPerWrite)
		r, err := s.PutPages(ctx, id, rest[:n])
		if err != nil {
			return res, err
		}
		res.Created, res.Updated, res.Unchanged = res.Created+r.Created, res.Updated+r.Updated, res.Unchanged+r.Unchanged
		rest = rest[n:]
	}
	return res, nil
}

// FirstParagraph is the first paragraph of a Markdown body that is prose
// (not a heading, list, table, quote or code), on one line, cut to max
// runes at a word.
func FirstParagraph(body string, max int) string {
	var para []string
	for line := range outsideFences(body) {
		t := strings.TrimSpace(line)
		prose := t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "|") &&
			!strings.HasPrefix(t, "- ") && !strings.HasPrefix(t, "* ") && !strings.HasPrefix(t, ">") &&
			!strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "\t")
		if prose {
			para = append(para, t)
			continue
		}
		if len(para) > 0 {
			break
		}
	}
	s := strings.Join(para, " ")
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	cut := string(r[:max])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return cut + "…"
}
