package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/store"
)

// Knowledge bases (migrations/0002_kb.sql). Every write locks the kb_seq
// row first, for its whole transaction: it serializes the writes of every
// instance (the Badger store's kbMu), and so changes commit in the order
// of their numbers. Reads take no lock.

// fold is how tags, names and link targets compare: case and runs of
// spaces do not matter (as in the Badger store).
func fold(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// Name ranks: a link matches a page's id before its title, its title
// before an alias.
const (
	rankID = iota
	rankTitle
	rankAlias
)

// lockKB takes the knowledge-base write lock and returns the last change
// number.
func lockKB(ctx context.Context, tx pgx.Tx) (int64, error) {
	var seq int64
	err := tx.QueryRow(ctx, `SELECT seq FROM kb_seq FOR UPDATE`).Scan(&seq)
	return seq, err
}

const kbCols = `id, name, readers, page_count, created_at, updated_at`

func scanKB(row pgx.Row) (store.KnowledgeBase, error) {
	var kb store.KnowledgeBase
	var count int32
	var created, updated int64
	err := row.Scan(&kb.ID, &kb.Name, &kb.Readers, &count, &created, &updated)
	kb.PageCount, kb.CreatedAt, kb.UpdatedAt = int(count), fromNS(created), fromNS(updated)
	if kb.Readers == nil {
		kb.Readers = []string{}
	}
	return kb, err
}

// PutKnowledgeBase implements store.KnowledgeBases.
func (s *Store) PutKnowledgeBase(ctx context.Context, kb store.KnowledgeBase) error {
	if err := checkID("knowledge base", kb.ID); err != nil {
		return err
	}
	if kb.CreatedAt.IsZero() {
		kb.CreatedAt = kb.UpdatedAt
	}
	readers := txts(kb.Readers)
	if readers == nil {
		readers = []string{}
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockKB(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO kb_bases (`+kbCols+`) VALUES ($1, $2, $3, 0, $4, $5)
			ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, readers = EXCLUDED.readers, updated_at = EXCLUDED.updated_at`,
			kb.ID, txt(kb.Name), readers, ns(kb.CreatedAt), ns(kb.UpdatedAt))
		return err
	})
}

// GetKnowledgeBase implements store.KnowledgeBases.
func (s *Store) GetKnowledgeBase(ctx context.Context, id string) (store.KnowledgeBase, error) {
	if err := s.enter(ctx); err != nil {
		return store.KnowledgeBase{}, err
	}
	if !validID(id) {
		return store.KnowledgeBase{}, store.ErrNotFound
	}
	kb, err := scanKB(s.pool.QueryRow(ctx, `SELECT `+kbCols+` FROM kb_bases WHERE id = $1`, id))
	return kb, s.fail(err)
}

// ListKnowledgeBases implements store.KnowledgeBases.
func (s *Store) ListKnowledgeBases(ctx context.Context) ([]store.KnowledgeBase, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+kbCols+` FROM kb_bases ORDER BY id`)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.KnowledgeBase, error) { return scanKB(r) })
	if out == nil {
		out = []store.KnowledgeBase{}
	}
	return out, s.fail(err)
}

// entries are the rows of pages' tags, names and links, as columns.
type entries struct {
	tagKB, tagF, tagPage, tag []string
	nameKB, nameF, namePage   []string
	rank                      []int16
	linkKB, linkF, linkPage   []string
	pageID, pageKB, pageJSON  []string
	version                   []int64
	changeSeq                 []int64
	changePage                []string
	created                   int
}

func (e *entries) add(p *store.Page) {
	seen := map[string]bool{}
	for _, t := range p.Tags {
		if f := fold(t); f != "" && !seen[f] {
			seen[f] = true
			e.tagKB, e.tagF, e.tagPage, e.tag = append(e.tagKB, p.KBID), append(e.tagF, f), append(e.tagPage, p.ID), append(e.tag, txt(t))
		}
	}
	clear(seen)
	for i, names := range [][]string{{p.ID}, {p.Title}, p.Aliases} {
		for _, n := range names {
			if f := fold(n); f != "" && !seen[f] {
				seen[f] = true
				e.nameKB, e.nameF, e.namePage, e.rank = append(e.nameKB, p.KBID), append(e.nameF, f), append(e.namePage, p.ID), append(e.rank, int16(rankID+i))
			}
		}
	}
	clear(seen)
	for _, l := range p.Links {
		if f := fold(l); f != "" && !seen[f] {
			seen[f] = true
			e.linkKB, e.linkF, e.linkPage = append(e.linkKB, p.KBID), append(e.linkF, f), append(e.linkPage, p.ID)
		}
	}
}

// write sends the pages' rows and changes in one batch (one round trip).
func (e *entries) write(ctx context.Context, tx pgx.Tx, kbID string) error {
	b := &pgx.Batch{}
	for _, t := range []string{"kb_tags", "kb_names", "kb_links"} {
		b.Queue(`DELETE FROM `+t+` WHERE page_id = ANY($1)`, e.pageID)
	}
	b.Queue(`INSERT INTO kb_pages (id, kb_id, version, page)
		SELECT i, k, v, p::json FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS u(i, k, v, p)
		ON CONFLICT (id) DO UPDATE SET kb_id = EXCLUDED.kb_id, version = EXCLUDED.version, page = EXCLUDED.page`,
		e.pageID, e.pageKB, e.version, e.pageJSON)
	b.Queue(`INSERT INTO kb_tags (kb_id, tag_f, page_id, tag) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])`,
		e.tagKB, e.tagF, e.tagPage, e.tag)
	b.Queue(`INSERT INTO kb_names (kb_id, name_f, rank, page_id) SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[], $4::text[])`,
		e.nameKB, e.nameF, e.rank, e.namePage)
	b.Queue(`INSERT INTO kb_links (kb_id, target_f, page_id) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`,
		e.linkKB, e.linkF, e.linkPage)
	b.Queue(`INSERT INTO kb_changes (seq, page_id, kb_id, deleted)
		SELECT q, p, $3, false FROM unnest($1::bigint[], $2::text[]) AS u(q, p)
		ON CONFLICT (page_id) DO UPDATE SET seq = EXCLUDED.seq, kb_id = EXCLUDED.kb_id, deleted = false`,
		e.changeSeq, e.changePage, kbID)
	return tx.SendBatch(ctx, b).Close()
}

// PutPages implements store.KnowledgeBases.
func (s *Store) PutPages(ctx context.Context, kbID string, pages []store.Page, now time.Time) (store.PutPagesResult, error) {
	var res store.PutPagesResult
	if err := checkID("knowledge base", kbID); err != nil {
		return res, err
	}
	seen := make(map[string]bool, len(pages))
	pages = slices.Clone(pages)
	ids := make([]string, len(pages))
	for i := range pages {
		p := &pages[i]
		if err := checkID("page", p.ID); err != nil {
			return res, err
		}
		if err := p.CheckText(); err != nil {
			return res, fmt.Errorf("pgstore: %w", err)
		}
		if seen[p.ID] {
			return res, fmt.Errorf("pgstore: page %q appears twice in one write", p.ID)
		}
		seen[p.ID] = true
		p.KBID = kbID
		p.Normalize()
		ids[i] = p.ID
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		res = store.PutPagesResult{}
		seq, err := lockKB(ctx, tx)
		if err != nil {
			return err
		}
		var count int32
		if err := tx.QueryRow(ctx, `SELECT page_count FROM kb_bases WHERE id = $1 FOR UPDATE`, kbID).Scan(&count); err != nil {
			return err
		}
		old, err := pagesByID(ctx, tx, ids)
		if err != nil {
			return err
		}
		for _, p := range old {
			if p.KBID != kbID {
				return fmt.Errorf("pgstore: page id %q belongs to knowledge base %q: %w", p.ID, p.KBID, store.ErrExists)
			}
		}
		var e entries
		for i := range pages {
			p := pages[i]
			prev, exists := old[p.ID]
			switch {
			case exists && prev.SameContent(p):
				res.Unchanged++
				continue
			case exists:
				res.Updated++
			default:
				res.Created++
			}
			seq++
			p.Version, p.UpdatedAt = uint64(seq), now
			v, err := json.Marshal(&p)
			if err != nil {
				return err
			}
			e.pageID, e.pageKB, e.version, e.pageJSON = append(e.pageID, p.ID), append(e.pageKB, kbID), append(e.version, seq), append(e.pageJSON, string(v))
			e.changeSeq, e.changePage = append(e.changeSeq, seq), append(e.changePage, p.ID)
			e.add(&p)
		}
		if len(e.pageID) == 0 {
			return nil
		}
		if err := e.write(ctx, tx, kbID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE kb_bases SET page_count = page_count + $2, updated_at = $3 WHERE id = $1`, kbID, res.Created, ns(now))
		if err == nil {
			_, err = tx.Exec(ctx, `UPDATE kb_seq SET seq = $1`, seq)
		}
		return err
	})
	if err != nil {
		return store.PutPagesResult{}, err
	}
	return res, nil
}

// pagesByID reads the pages that exist among ids.
func pagesByID(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, ids []string) (map[string]store.Page, error) {
	rows, err := q.Query(ctx, `SELECT page FROM kb_pages WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	ps, err := collectPages(rows)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.Page, len(ps))
	for _, p := range ps {
		out[p.ID] = p
	}
	return out, nil
}

func collectPages(rows pgx.Rows) ([]store.Page, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Page, error) {
		var b []byte
		var p store.Page
		if err := r.Scan(&b); err != nil {
			return p, err
		}
		return p, json.Unmarshal(b, &p)
	})
	if out == nil {
		out = []store.Page{}
	}
	return out, err
}

// deletePages removes pages of kbID (all of them when ids is nil), each a
// deletion change, inside tx; seq is the last change number, the new one
// is returned.
func deletePages(ctx context.Context, tx pgx.Tx, kbID string, ids []string, seq int64) (int64, int, error) {
	var rows pgx.Rows
	var err error
	if ids == nil {
		rows, err = tx.Query(ctx, `SELECT id FROM kb_pages WHERE kb_id = $1 ORDER BY id`, kbID)
	} else {
		rows, err = tx.Query(ctx, `SELECT id FROM kb_pages WHERE kb_id = $1 AND id = ANY($2) ORDER BY id`, kbID, ids)
	}
	if err != nil {
		return seq, 0, err
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(gone) == 0 {
		return seq, 0, err
	}
	seqs := make([]int64, len(gone))
	for i := range gone {
		seq++
		seqs[i] = seq
	}
	b := &pgx.Batch{}
	for _, t := range []string{"kb_tags", "kb_names", "kb_links", "kb_pages"} {
		col := "page_id"
		if t == "kb_pages" {
			col = "id"
		}
		b.Queue(`DELETE FROM `+t+` WHERE `+col+` = ANY($1)`, gone)
	}
	b.Queue(`INSERT INTO kb_changes (seq, page_id, kb_id, deleted)
		SELECT q, p, $3, true FROM unnest($1::bigint[], $2::text[]) AS u(q, p)
		ON CONFLICT (page_id) DO UPDATE SET seq = EXCLUDED.seq, kb_id = EXCLUDED.kb_id, deleted = true`, seqs, gone, kbID)
	b.Queue(`UPDATE kb_seq SET seq = $1`, seq)
	return seq, len(gone), tx.SendBatch(ctx, b).Close()
}

// DeletePage implements store.KnowledgeBases.
func (s *Store) DeletePage(ctx context.Context, kbID, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(kbID) || !validID(id) {
		return store.ErrNotFound
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		seq, err := lockKB(ctx, tx)
		if err != nil {
			return err
		}
		_, n, err := deletePages(ctx, tx, kbID, []string{id}, seq)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		_, err = tx.Exec(ctx, `UPDATE kb_bases SET page_count = page_count - $2, updated_at = $3 WHERE id = $1`, kbID, n, ns(time.Now()))
		return err
	})
}

// DeleteKnowledgeBase implements store.KnowledgeBases: its pages (each a
// deletion change), its source records and the base, in one transaction.
func (s *Store) DeleteKnowledgeBase(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		seq, err := lockKB(ctx, tx)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM kb_bases WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		if _, _, err := deletePages(ctx, tx, id, nil, seq); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM kb_sources WHERE kb_id = $1`, id)
		return err
	})
}

// GetPage implements store.KnowledgeBases.
func (s *Store) GetPage(ctx context.Context, id string) (store.Page, error) {
	if err := s.enter(ctx); err != nil {
		return store.Page{}, err
	}
	if !validID(id) {
		return store.Page{}, store.ErrNotFound
	}
	var b []byte
	if err := s.pool.QueryRow(ctx, `SELECT page FROM kb_pages WHERE id = $1`, id).Scan(&b); err != nil {
		return store.Page{}, s.fail(err)
	}
	var p store.Page
	return p, json.Unmarshal(b, &p)
}

// queryPages runs a query of page JSON.
func (s *Store) queryPages(ctx context.Context, sql string, args ...any) ([]store.Page, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := collectPages(rows)
	return out, s.fail(err)
}

// ListPages implements store.KnowledgeBases.
func (s *Store) ListPages(ctx context.Context, kbID, after string, limit int) ([]store.Page, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if !validID(kbID) {
		return []store.Page{}, nil
	}
	if limit <= 0 {
		limit = 1000
	}
	return s.queryPages(ctx, `SELECT page FROM kb_pages WHERE kb_id = $1 AND id > $2 ORDER BY id LIMIT $3`, kbID, txt(after), limit)
}

// PagesByTag implements store.KnowledgeBases.
func (s *Store) PagesByTag(ctx context.Context, kbID, tag string) ([]store.Page, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	f := fold(tag)
	if !validID(kbID) || f == "" || strings.IndexByte(f, 0) >= 0 {
		return []store.Page{}, nil
	}
	return s.queryPages(ctx, `SELECT p.page FROM kb_tags t JOIN kb_pages p ON p.id = t.page_id
		WHERE t.kb_id = $1 AND t.tag_f = $2 ORDER BY t.page_id`, kbID, txt(f))
}

// ListTags implements store.KnowledgeBases: each tag as its first page
// (by id) writes it.
func (s *Store) ListTags(ctx context.Context, kbID string) ([]store.TagCount, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.TagCount{}
	if !validID(kbID) {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT (array_agg(tag ORDER BY page_id))[1], count(*) FROM kb_tags
		WHERE kb_id = $1 GROUP BY tag_f ORDER BY tag_f`, kbID)
	if err != nil {
		return nil, s.fail(err)
	}
	for rows.Next() {
		var t store.TagCount
		var n int64
		if err := rows.Scan(&t.Tag, &n); err != nil {
			rows.Close()
			return nil, s.fail(err)
		}
		t.Count = int(n)
		out = append(out, t)
	}
	return out, s.fail(rows.Err())
}

// resolved is the page each folded name of kbID resolves to, with its
// title: the name's row of the lowest rank, then the smallest page id.
func (s *Store) resolved(ctx context.Context, kbID string, names []string) (map[string][2]string, error) {
	out := map[string][2]string{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (n.name_f) n.name_f, n.page_id, p.page->>'title'
		FROM kb_names n JOIN kb_pages p ON p.id = n.page_id
		WHERE n.kb_id = $1 AND n.name_f = ANY($2)
		ORDER BY n.name_f, n.rank, n.page_id`, kbID, names)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var f, id string
		var title *string
		if err := rows.Scan(&f, &id, &title); err != nil {
			return nil, s.fail(err)
		}
		t := ""
		if title != nil {
			t = *title
		}
		out[f] = [2]string{id, t}
	}
	return out, s.fail(rows.Err())
}

// ResolveLinks implements store.KnowledgeBases.
func (s *Store) ResolveLinks(ctx context.Context, p store.Page) ([]store.PageLink, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.PageLink{}
	if !validID(p.KBID) {
		return out, nil
	}
	var names []string
	for _, target := range p.Links {
		if f := fold(target); f != "" && strings.IndexByte(f, 0) < 0 {
			names = append(names, txt(f))
		}
	}
	res, err := s.resolved(ctx, p.KBID, names)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, target := range p.Links {
		f := fold(target)
		if f == "" || strings.IndexByte(f, 0) >= 0 {
			continue
		}
		l := store.PageLink{Target: target, ID: target}
		if r, ok := res[txt(f)]; ok {
			l.ID, l.Resolved, l.Title = r[0], true, r[1]
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
	return out, nil
}

// Backlinks implements store.KnowledgeBases: for each name of the page
// that resolves to it, the pages linking to that name.
func (s *Store) Backlinks(ctx context.Context, id string) ([]store.Page, error) {
	q, err := s.GetPage(ctx, id)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range append([]string{q.ID, q.Title}, q.Aliases...) {
		if f := fold(n); f != "" {
			names = append(names, txt(f))
		}
	}
	res, err := s.resolved(ctx, q.KBID, names)
	if err != nil {
		return nil, err
	}
	var mine []string
	for f, r := range res {
		if r[0] == q.ID {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return []store.Page{}, nil
	}
	return s.queryPages(ctx, `SELECT page FROM kb_pages WHERE id IN
		(SELECT page_id FROM kb_links WHERE kb_id = $1 AND target_f = ANY($2) AND page_id <> $3) ORDER BY id`,
		q.KBID, mine, q.ID)
}

// PageChanges implements store.KnowledgeBases.
func (s *Store) PageChanges(ctx context.Context, after uint64, limit int) ([]store.PageChange, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 1000
	}
	if after > 1<<63-1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, page_id, kb_id, deleted FROM kb_changes WHERE seq > $1 ORDER BY seq LIMIT $2`,
		int64(after), limit)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PageChange, error) {
		var c store.PageChange
		var seq int64
		err := r.Scan(&seq, &c.PageID, &c.KBID, &c.Deleted)
		c.Seq = uint64(seq)
		return c, err
	})
	return out, s.fail(err)
}

// PageVersion implements store.KnowledgeBases.
func (s *Store) PageVersion(ctx context.Context) (uint64, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT seq FROM kb_seq`).Scan(&n)
	return uint64(n), s.fail(err)
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
	err = s.tx(ctx, func(tx pgx.Tx) error {
		replaced = false
		if _, err := lockKB(ctx, tx); err != nil {
			return err
		}
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM kb_bases WHERE id = $1`, src.KBID).Scan(&one); err != nil {
			return err
		}
		var b []byte
		err := tx.QueryRow(ctx, `SELECT source FROM kb_sources WHERE kb_id = $1 AND key = $2`, src.KBID, src.Key).Scan(&b)
		switch {
		case err == nil:
			replaced = true
			if err := json.Unmarshal(b, &prev); err != nil {
				return err
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO kb_sources (kb_id, key, source) VALUES ($1, $2, $3)
			ON CONFLICT (kb_id, key) DO UPDATE SET source = EXCLUDED.source`, src.KBID, src.Key, string(v))
		return err
	})
	return prev, replaced, err
}

// GetKBSource implements store.KnowledgeBases.
func (s *Store) GetKBSource(ctx context.Context, kbID, key string) (store.KBSource, error) {
	var src store.KBSource
	if err := s.enter(ctx); err != nil {
		return src, err
	}
	if !validID(kbID) || !validID(key) {
		return src, store.ErrNotFound
	}
	var b []byte
	if err := s.pool.QueryRow(ctx, `SELECT source FROM kb_sources WHERE kb_id = $1 AND key = $2`, kbID, key).Scan(&b); err != nil {
		return src, s.fail(err)
	}
	return src, json.Unmarshal(b, &src)
}

// ListKBSources implements store.KnowledgeBases.
func (s *Store) ListKBSources(ctx context.Context, kbID string) ([]store.KBSource, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := []store.KBSource{}
	if !validID(kbID) {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT source FROM kb_sources WHERE kb_id = $1 ORDER BY key`, kbID)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		var src store.KBSource
		if err := rows.Scan(&b); err != nil {
			return nil, s.fail(err)
		}
		if err := json.Unmarshal(b, &src); err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, s.fail(rows.Err())
}

var _ store.KnowledgeBases = (*Store)(nil)
