package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// Knowledge bases live under kb/, their pages under kbpage/ (page ids are
// global), with secondary entries for a base's pages (kbpages/), tags
// (kbtag/), link targets (kbname/: a page's id, title and aliases, folded)
// and the links themselves (kblink/: the folded target). Links resolve at
// read time, so a page imported after the pages linking to it resolves
// their links without rewriting them.
//
// Every page write is a numbered change (meta/kbseq); kbchg/ keeps the
// latest change of each page (a page's earlier change is deleted with it),
// and kbgone/ remembers a deleted page's tombstone so a page created again
// replaces it. Writes hold kbMu, so changes commit in number order and a
// follower never sees a number appear below one it has read.

// kbChunk is how many pages one transaction writes; halved on
// ErrTxnTooBig.
const kbChunk = 128

func kbKey(id string) []byte     { return strKey(pKB, id) }
func kbPageKey(id string) []byte { return strKey(pKBPage, id) }
func kbGoneKey(id string) []byte { return strKey(pKBGone, id) }

func kbPagesKey(kb, id string) []byte { return append(scoped(pKBPages, kb), id...) }
func kbSrcKey(kb, key string) []byte  { return append(scoped(pKBSrc, kb), key...) }

// kbValuePrefix is prefix{kb}\x00{value}\x00: the entries of one folded
// tag, name or link target.
func kbValuePrefix(prefix, kb, value string) []byte {
	return append(append(scoped(prefix, kb), value...), sep)
}

func kbChgKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(pKBChg), seq)
}

// fold is how tags, names and link targets compare: case and runs of
// spaces do not matter.
func fold(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// Name ranks: a link matches a page's id before its title, its title
// before an alias.
const (
	rankID byte = iota
	rankTitle
	rankAlias
)

type kbChange struct {
	Page    string `json:"p"`
	KB      string `json:"k"`
	Deleted bool   `json:"d,omitempty"`
}

func readKB(txn *badger.Txn, id string) (store.KnowledgeBase, error) {
	var kb store.KnowledgeBase
	err := get(txn, kbKey(id), func(v []byte) error { return json.Unmarshal(v, &kb) })
	return kb, err
}

func writeKB(txn *badger.Txn, kb *store.KnowledgeBase) error {
	v, err := json.Marshal(kb)
	if err != nil {
		return err
	}
	return txn.Set(kbKey(kb.ID), v)
}

func readPage(txn *badger.Txn, id string) (store.Page, error) {
	var p store.Page
	err := get(txn, kbPageKey(id), func(v []byte) error { return json.Unmarshal(v, &p) })
	return p, err
}

func readKBSeq(txn *badger.Txn) (uint64, error) {
	var n uint64
	err := get(txn, kbSeqKey, func(v []byte) error {
		if len(v) != 8 {
			return errCorrupt
		}
		n = binary.BigEndian.Uint64(v)
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// pageEntries are the secondary keys of a page, with their values.
func pageEntries(p *store.Page) (keys, vals [][]byte) {
	add := func(k, v []byte) { keys, vals = append(keys, k), append(vals, v) }
	add(kbPagesKey(p.KBID, p.ID), nil)
	seen := map[string]bool{}
	for _, t := range p.Tags {
		if f := fold(t); f != "" && !seen[f] {
			seen[f] = true
			add(append(kbValuePrefix(pKBTag, p.KBID, f), p.ID...), []byte(t))
		}
	}
	clear(seen)
	for i, names := range [][]string{{p.ID}, {p.Title}, p.Aliases} {
		for _, n := range names {
			if f := fold(n); f != "" && !seen[f] {
				seen[f] = true
				k := append(kbValuePrefix(pKBName, p.KBID, f), rankID+byte(i))
				add(append(k, p.ID...), nil)
			}
		}
	}
	clear(seen)
	for _, l := range p.Links {
		if f := fold(l); f != "" && !seen[f] {
			seen[f] = true
			add(append(kbValuePrefix(pKBLink, p.KBID, f), p.ID...), nil)
		}
	}
	return keys, vals
}

// removePage deletes a page, its entries and its change.
func removePage(txn *badger.Txn, p *store.Page) error {
	keys, _ := pageEntries(p)
	keys = append(keys, kbPageKey(p.ID), kbChgKey(p.Version))
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func setChange(txn *badger.Txn, seq uint64, c kbChange) error {
	v, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return txn.Set(kbChgKey(seq), v)
}

// PutKnowledgeBase implements store.KnowledgeBases.
func (s *Store) PutKnowledgeBase(ctx context.Context, kb store.KnowledgeBase) error {
	if err := checkID("knowledge base", kb.ID); err != nil {
		return err
	}
	s.kbMu.Lock()
	defer s.kbMu.Unlock()
	return s.update(ctx, func(txn *badger.Txn) error {
		cur, err := readKB(txn, kb.ID)
		switch {
		case err == nil:
			kb.CreatedAt, kb.PageCount = cur.CreatedAt, cur.PageCount
		case !errors.Is(err, store.ErrNotFound):
			return err
		case kb.CreatedAt.IsZero():
			kb.CreatedAt = kb.UpdatedAt
		}
		if kb.Readers == nil {
			kb.Readers = []string{}
		}
		return writeKB(txn, &kb)
	})
}

// GetKnowledgeBase implements store.KnowledgeBases.
func (s *Store) GetKnowledgeBase(ctx context.Context, id string) (store.KnowledgeBase, error) {
	var kb store.KnowledgeBase
	if !validID(id) {
		return kb, store.ErrNotFound
	}
	err := s.view(ctx, func(txn *badger.Txn) (err error) {
		kb, err = readKB(txn, id)
		return err
	})
	return kb, err
}

// ListKnowledgeBases implements store.KnowledgeBases.
func (s *Store) ListKnowledgeBases(ctx context.Context) ([]store.KnowledgeBase, error) {
	out := []store.KnowledgeBase{}
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanPrefix(txn, []byte(pKB), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				var kb store.KnowledgeBase
				if err := json.Unmarshal(v, &kb); err != nil {
					return err
				}
				out = append(out, kb)
				return nil
			})
		})
	})
	return out, err
}

// DeleteKnowledgeBase implements store.KnowledgeBases: its pages go first,
// a chunk per transaction, then its source records, then the base, so an
// interrupted delete leaves a base that a second delete finishes.
func (s *Store) DeleteKnowledgeBase(ctx context.Context, id string) error {
	if !validID(id) {
		return store.ErrNotFound
	}
	s.kbMu.Lock()
	defer s.kbMu.Unlock()
	if _, err := s.GetKnowledgeBase(ctx, id); err != nil {
		return err
	}
	for {
		var ids []string
		err := s.view(ctx, func(txn *badger.Txn) error {
			ids = ids[:0]
			return s.scanTail(txn, scoped(pKBPages, id), kbChunk, func(tail []byte) { ids = append(ids, string(tail)) })
		})
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		if err := s.update(ctx, func(txn *badger.Txn) error { return deletePagesTxn(txn, id, ids, time.Now()) }); err != nil {
			return err
		}
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		var keys [][]byte
		err := scanPrefix(txn, scoped(pKBSrc, id), false, func(it *badger.Item) error {
			keys = append(keys, it.KeyCopy(nil))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range append(keys, kbKey(id)) {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanTail calls fn with the rest of each key under prefix, up to limit
// keys (0: all).
func (s *Store) scanTail(txn *badger.Txn, prefix []byte, limit int, fn func(tail []byte)) error {
	n := 0
	err := scanPrefix(txn, prefix, false, func(it *badger.Item) error {
		if limit > 0 && n == limit {
			return errStop
		}
		n++
		fn(it.Key()[len(prefix):])
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

var errStop = errors.New("stop")

// deletePagesTxn removes pages of kb, each a tombstone change.
func deletePagesTxn(txn *badger.Txn, kbID string, ids []string, now time.Time) error {
	seq, err := readKBSeq(txn)
	if err != nil {
		return err
	}
	kb, err := readKB(txn, kbID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		p, err := readPage(txn, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && p.KBID != kbID {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := removePage(txn, &p); err != nil {
			return err
		}
		seq++
		if err := setChange(txn, seq, kbChange{Page: id, KB: kbID, Deleted: true}); err != nil {
			return err
		}
		if err := txn.Set(kbGoneKey(id), encodeSeq(seq)); err != nil {
			return err
		}
		kb.PageCount--
	}
	kb.UpdatedAt = now
	if err := writeKB(txn, &kb); err != nil {
		return err
	}
	return txn.Set(kbSeqKey, encodeSeq(seq))
}

// PutPages implements store.KnowledgeBases.
func (s *Store) PutPages(ctx context.Context, kbID string, pages []store.Page, now time.Time) (store.PutPagesResult, error) {
	var res store.PutPagesResult
	if err := checkID("knowledge base", kbID); err != nil {
		return res, err
	}
	seen := make(map[string]bool, len(pages))
	pages = slices.Clone(pages)
	for i := range pages {
		p := &pages[i]
		if err := checkID("page", p.ID); err != nil {
			return res, err
		}
		if err := p.CheckText(); err != nil {
			return res, fmt.Errorf("%w: %w", err, errBadID)
		}
		if seen[p.ID] {
			return res, fmt.Errorf("badgerstore: page %q appears twice in one write", p.ID)
		}
		seen[p.ID] = true
		p.KBID = kbID
		p.Normalize()
	}
	s.kbMu.Lock()
	defer s.kbMu.Unlock()
	// Refuse the whole write before any of it: kbMu keeps the answer true.
	err := s.view(ctx, func(txn *badger.Txn) error {
		if _, err := readKB(txn, kbID); err != nil {
			return err
		}
		for i := range pages {
			cur, err := readPage(txn, pages[i].ID)
			if err == nil && cur.KBID != kbID {
				return fmt.Errorf("page id %q belongs to knowledge base %q: %w", cur.ID, cur.KBID, store.ErrExists)
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	for rest, n := pages, kbChunk; len(rest) > 0; {
		n = min(n, len(rest))
		var part store.PutPagesResult
		err := s.update(ctx, func(txn *badger.Txn) (err error) {
			part, err = putPagesTxn(txn, kbID, rest[:n], now)
			return err
		})
		if errors.Is(err, badger.ErrTxnTooBig) && n > 1 {
			n /= 2
			continue
		}
		if err != nil {
			return res, err
		}
		res.Created += part.Created
		res.Updated += part.Updated
		res.Unchanged += part.Unchanged
		rest = rest[n:]
	}
	return res, nil
}

func putPagesTxn(txn *badger.Txn, kbID string, pages []store.Page, now time.Time) (store.PutPagesResult, error) {
	var res store.PutPagesResult
	seq, err := readKBSeq(txn)
	if err != nil {
		return res, err
	}
	kb, err := readKB(txn, kbID)
	if err != nil {
		return res, err
	}
	start := seq
	for i := range pages {
		p := pages[i]
		old, err := readPage(txn, p.ID)
		switch {
		case err == nil && old.SameContent(p):
			res.Unchanged++
			continue
		case err == nil:
			if err := removePage(txn, &old); err != nil {
				return res, err
			}
			res.Updated++
		case errors.Is(err, store.ErrNotFound):
			// A page created again replaces its tombstone.
			err := get(txn, kbGoneKey(p.ID), func(v []byte) error {
				if len(v) != 8 {
					return errCorrupt
				}
				return txn.Delete(kbChgKey(binary.BigEndian.Uint64(v)))
			})
			if err == nil {
				err = txn.Delete(kbGoneKey(p.ID))
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return res, err
			}
			res.Created++
			kb.PageCount++
		default:
			return res, err
		}
		seq++
		p.Version, p.UpdatedAt = seq, now
		v, err := json.Marshal(&p)
		if err != nil {
			return res, err
		}
		if err := txn.Set(kbPageKey(p.ID), v); err != nil {
			return res, err
		}
		keys, vals := pageEntries(&p)
		for j := range keys {
			if err := txn.Set(keys[j], vals[j]); err != nil {
				return res, err
			}
		}
		if err := setChange(txn, seq, kbChange{Page: p.ID, KB: kbID}); err != nil {
			return res, err
		}
	}
	if seq == start {
		return res, nil
	}
	kb.UpdatedAt = now
	if err := writeKB(txn, &kb); err != nil {
		return res, err
	}
	return res, txn.Set(kbSeqKey, encodeSeq(seq))
}

// DeletePage implements store.KnowledgeBases.
func (s *Store) DeletePage(ctx context.Context, kbID, id string) error {
	if !validID(kbID) || !validID(id) {
		return store.ErrNotFound
	}
	s.kbMu.Lock()
	defer s.kbMu.Unlock()
	return s.update(ctx, func(txn *badger.Txn) error { return deletePagesTxn(txn, kbID, []string{id}, time.Now()) })
}

// GetPage implements store.KnowledgeBases.
func (s *Store) GetPage(ctx context.Context, id string) (store.Page, error) {
	var p store.Page
	if !validID(id) {
		return p, store.ErrNotFound
	}
	err := s.view(ctx, func(txn *badger.Txn) (err error) {
		p, err = readPage(txn, id)
		return err
	})
	return p, err
}

// readPages reads the pages named, skipping any deleted meanwhile.
func readPages(txn *badger.Txn, ids []string) ([]store.Page, error) {
	out := make([]store.Page, 0, len(ids))
	for _, id := range ids {
		p, err := readPage(txn, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ListPages implements store.KnowledgeBases.
func (s *Store) ListPages(ctx context.Context, kbID, after string, limit int) ([]store.Page, error) {
	if !validID(kbID) {
		return []store.Page{}, nil
	}
	if limit <= 0 {
		limit = 1000
	}
	var out []store.Page
	err := s.view(ctx, func(txn *badger.Txn) error {
		prefix := scoped(pKBPages, kbID)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		var ids []string
		for it.Seek(append(bytes.Clone(prefix), after...)); it.Valid() && len(ids) < limit; it.Next() {
			id := string(it.Item().Key()[len(prefix):])
			if after != "" && id == after {
				continue
			}
			ids = append(ids, id)
		}
		var err error
		out, err = readPages(txn, ids)
		return err
	})
	return out, err
}

// PagesByTag implements store.KnowledgeBases.
func (s *Store) PagesByTag(ctx context.Context, kbID, tag string) ([]store.Page, error) {
	f := fold(tag)
	if !validID(kbID) || f == "" || strings.IndexByte(f, sep) >= 0 {
		return []store.Page{}, nil
	}
	var out []store.Page
	err := s.view(ctx, func(txn *badger.Txn) error {
		var ids []string
		if err := s.scanTail(txn, kbValuePrefix(pKBTag, kbID, f), 0, func(t []byte) { ids = append(ids, string(t)) }); err != nil {
			return err
		}
		var err error
		out, err = readPages(txn, ids)
		return err
	})
	return out, err
}

// ListTags implements store.KnowledgeBases.
func (s *Store) ListTags(ctx context.Context, kbID string) ([]store.TagCount, error) {
	out := []store.TagCount{}
	if !validID(kbID) {
		return out, nil
	}
	err := s.view(ctx, func(txn *badger.Txn) error {
		prefix := scoped(pKBTag, kbID)
		last := ""
		return scanPrefix(txn, prefix, true, func(it *badger.Item) error {
			rest := it.Key()[len(prefix):]
			i := bytes.IndexByte(rest, sep)
			if i < 0 {
				return errCorrupt
			}
			if f := string(rest[:i]); f != last || len(out) == 0 {
				last = f
				v, err := it.ValueCopy(nil)
				if err != nil {
					return err
				}
				out = append(out, store.TagCount{Tag: string(v)})
			}
			out[len(out)-1].Count++
			return nil
		})
	})
	return out, err
}

// resolveName is the page a folded name resolves to in kb ("" for none).
func resolveName(txn *badger.Txn, kbID, f string) (string, error) {
	if f == "" {
		return "", nil
	}
	prefix := kbValuePrefix(pKBName, kbID, f)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	it.Rewind()
	if !it.Valid() {
		return "", nil
	}
	k := it.Item().Key()
	if len(k) < len(prefix)+2 {
		return "", errCorrupt
	}
	return string(k[len(prefix)+1:]), nil
}

// ResolveLinks implements store.KnowledgeBases.
func (s *Store) ResolveLinks(ctx context.Context, p store.Page) ([]store.PageLink, error) {
	out := []store.PageLink{}
	if !validID(p.KBID) {
		return out, nil
	}
	err := s.view(ctx, func(txn *badger.Txn) error {
		seen := map[string]bool{}
		for _, target := range p.Links {
			f := fold(target)
			if f == "" || strings.IndexByte(f, sep) >= 0 {
				continue
			}
			id, err := resolveName(txn, p.KBID, f)
			if err != nil {
				return err
			}
			l := store.PageLink{Target: target, ID: target}
			if id != "" {
				t, err := readPage(txn, id)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				if err == nil {
					l.ID, l.Resolved, l.Title = id, true, t.Title
				}
			}
			key := "u" + f
			if l.Resolved {
				key = "r" + l.ID
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, l)
			}
		}
		return nil
	})
	return out, err
}

// Backlinks implements store.KnowledgeBases: for each name of the page
// that resolves to it, the pages linking to that name.
func (s *Store) Backlinks(ctx context.Context, id string) ([]store.Page, error) {
	out := []store.Page{}
	if !validID(id) {
		return out, store.ErrNotFound
	}
	err := s.view(ctx, func(txn *badger.Txn) error {
		q, err := readPage(txn, id)
		if err != nil {
			return err
		}
		from := map[string]bool{}
		for _, n := range append([]string{q.ID, q.Title}, q.Aliases...) {
			f := fold(n)
			if f == "" {
				continue
			}
			to, err := resolveName(txn, q.KBID, f)
			if err != nil {
				return err
			}
			if to != q.ID {
				continue
			}
			err = s.scanTail(txn, kbValuePrefix(pKBLink, q.KBID, f), 0, func(t []byte) {
				if src := string(t); src != q.ID {
					from[src] = true
				}
			})
			if err != nil {
				return err
			}
		}
		ids := make([]string, 0, len(from))
		for src := range from {
			ids = append(ids, src)
		}
		slices.Sort(ids)
		out, err = readPages(txn, ids)
		return err
	})
	return out, err
}

// PageChanges implements store.KnowledgeBases.
func (s *Store) PageChanges(ctx context.Context, after uint64, limit int) ([]store.PageChange, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []store.PageChange
	err := s.view(ctx, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pKBChg), PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Seek(kbChgKey(after + 1)); it.Valid() && len(out) < limit; it.Next() {
			item := it.Item()
			k := item.Key()
			if len(k) != len(pKBChg)+8 {
				return errCorrupt
			}
			var c kbChange
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &c) }); err != nil {
				return err
			}
			out = append(out, store.PageChange{Seq: tailID(k), PageID: c.Page, KBID: c.KB, Deleted: c.Deleted})
		}
		return nil
	})
	return out, err
}

// PageVersion implements store.KnowledgeBases.
func (s *Store) PageVersion(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.view(ctx, func(txn *badger.Txn) (err error) {
		n, err = readKBSeq(txn)
		return err
	})
	return n, err
}

// PutKBSource implements store.KnowledgeBases.
func (s *Store) PutKBSource(ctx context.Context, src store.KBSource) (store.KBSource, bool, error) {
	var prev store.KBSource
	replaced := false
	if err := checkID("knowledge base", src.KBID); err != nil {
		return prev, false, err
	}
	if err := checkID("source key", src.Key); err != nil {
		return prev, false, err
	}
	v, err := json.Marshal(&src)
	if err != nil {
		return prev, false, err
	}
	s.kbMu.Lock()
	defer s.kbMu.Unlock()
	err = s.update(ctx, func(txn *badger.Txn) error {
		replaced = false
		if _, err := readKB(txn, src.KBID); err != nil {
			return err
		}
		err := get(txn, kbSrcKey(src.KBID, src.Key), func(v []byte) error { return json.Unmarshal(v, &prev) })
		switch {
		case err == nil:
			replaced = true
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return txn.Set(kbSrcKey(src.KBID, src.Key), v)
	})
	return prev, replaced, err
}

// GetKBSource implements store.KnowledgeBases.
func (s *Store) GetKBSource(ctx context.Context, kbID, key string) (store.KBSource, error) {
	var src store.KBSource
	if !validID(kbID) || !validID(key) {
		return src, store.ErrNotFound
	}
	err := s.view(ctx, func(txn *badger.Txn) error {
		return get(txn, kbSrcKey(kbID, key), func(v []byte) error { return json.Unmarshal(v, &src) })
	})
	return src, err
}

// ListKBSources implements store.KnowledgeBases.
func (s *Store) ListKBSources(ctx context.Context, kbID string) ([]store.KBSource, error) {
	out := []store.KBSource{}
	if !validID(kbID) {
		return out, nil
	}
	err := s.view(ctx, func(txn *badger.Txn) error {
		return scanPrefix(txn, scoped(pKBSrc, kbID), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				var src store.KBSource
				if err := json.Unmarshal(v, &src); err != nil {
					return err
				}
				out = append(out, src)
				return nil
			})
		})
	})
	return out, err
}
