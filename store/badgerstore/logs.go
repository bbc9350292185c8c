package badgerstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

const (
	// maxPage caps QueryLogs; a Limit of 0 asks for this many.
	maxPage = 10_000
	// scanChunk is how many rows ScanLogs reads per transaction. fn runs
	// between chunks, outside any transaction, so a slow consumer holds
	// neither a read snapshot nor the close lock.
	scanChunk = 512
	// ctxEvery is how many index entries a walk reads between ctx checks.
	ctxEvery = 1024
)

// GetLog reads one row by id.
func (s *Store) GetLog(ctx context.Context, id uint64) (r store.LogRow, err error) {
	if err := s.seen(ctx); err != nil {
		return r, err
	}
	err = s.view(ctx, func(txn *badger.Txn) error {
		r, err = readRow(txn, id)
		return err
	})
	return r, err
}

func readRow(txn *badger.Txn, id uint64) (r store.LogRow, err error) {
	err = get(txn, logKey(id), func(v []byte) (e error) {
		r, e = decodeRow(v, id)
		return e
	})
	return r, err
}

// QueryLogs returns up to q.Limit rows (capped at 10,000; 0 means the cap).
func (s *Store) QueryLogs(ctx context.Context, q store.LogQuery) ([]store.LogRow, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxPage {
		limit = maxPage
	}
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	var out []store.LogRow
	err := s.view(ctx, func(txn *badger.Txn) error {
		return page(ctx, txn, &q, limit, func(r store.LogRow) { out = append(out, r) })
	})
	return out, err
}

// ScanLogs streams every matching row in order, a chunk per transaction;
// rows written during a scan appear if they sort after its position.
func (s *Store) ScanLogs(ctx context.Context, q store.LogQuery, fn func(store.LogRow) bool) error {
	if err := s.seen(ctx); err != nil {
		return err
	}
	buf := make([]store.LogRow, 0, scanChunk)
	for {
		buf = buf[:0]
		err := s.view(ctx, func(txn *badger.Txn) error {
			return page(ctx, txn, &q, scanChunk, func(r store.LogRow) { buf = append(buf, r) })
		})
		if err != nil {
			return err
		}
		for _, r := range buf {
			if !fn(r) {
				return nil
			}
		}
		if len(buf) < scanChunk {
			return nil
		}
		last := buf[len(buf)-1]
		q.After = &store.LogPosition{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// page emits up to limit rows matching q, in q's order.
func page(ctx context.Context, txn *badger.Txn, q *store.LogQuery, limit int, emit func(store.LogRow)) error {
	if q.Ref != "" {
		return refPage(ctx, txn, q, limit, emit)
	}
	return walk(ctx, txn, q, limit, func(k, _ []byte) error {
		r, err := readRow(txn, tailID(k))
		if err == nil {
			emit(r)
		}
		return err
	})
}

// walk visits up to limit index entries of q's window that pass its
// filters, in q's order; v is the entry's index value. A page filtered on
// models or error codes also walks the per-value index of that field, in
// step with the account's (or key's) index: both yield the same entries in
// the same order, so the first to finish answers, and a filter matching
// few rows costs those rows instead of the whole window.
func walk(ctx context.Context, txn *badger.Txn, q *store.LogQuery, limit int, visit func(k, v []byte) error) error {
	m := newMatcher(q)
	main := newCursor(txn, m, nil, "", mainPrefix(q))
	defer main.close()
	dim := dimCursor(txn, m)
	if dim == nil {
		for n := 0; ; n++ {
			if n%ctxEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k, v, state := main.step()
			switch state {
			case cursorDone:
				return nil
			case cursorMatch:
				if err := visit(k, v); err != nil {
					return err
				}
				if limit--; limit == 0 {
					return nil
				}
			}
		}
	}
	defer dim.close()
	var got [2][][2][]byte
	for n := 0; ; n++ {
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for i, c := range [2]*cursor{main, dim} {
			k, v, state := c.step()
			if state == cursorMatch {
				got[i] = append(got[i], [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			}
			if state == cursorDone || len(got[i]) == limit {
				for _, e := range got[i] {
					if err := visit(e[0], e[1]); err != nil {
						return err
					}
				}
				return nil
			}
		}
	}
}

func mainPrefix(q *store.LogQuery) []byte {
	if q.KeyID != "" {
		return logKeyPrefix(q.AccountID, q.KeyID)
	}
	return logAcctPrefix(q.AccountID)
}

// dimCursor is a cursor over the per-value index of the query's model
// filter, else its error-code filter; nil when it has neither (or a value
// the index cannot hold).
func dimCursor(txn *badger.Txn, m *matcher) *cursor {
	dim, values := pLogMod, m.q.Models
	if len(values) == 0 {
		dim, values = pLogErr, m.q.ErrorCodes
	}
	if len(values) == 0 {
		return nil
	}
	prefixes := make([][]byte, 0, len(values))
	for _, v := range values {
		if !validID(v) {
			return nil
		}
		prefixes = append(prefixes, logDimPrefix(dim, m.q.AccountID, v))
	}
	return newCursor(txn, m, []byte(m.q.KeyID), "dim", prefixes...)
}

// cursor walks one or more index ranges of a query in its order, merged.
type cursor struct {
	m        *matcher
	dim      bool   // per-value index: values start with the key id
	keyID    []byte // dim: the key the query is scoped to (nil = any)
	its      []*badger.Iterator
	prefixes [][]byte
	read     int // iterator whose entry step returned last; it moves on at the next step
}

const (
	cursorSkip  = iota // read an entry that does not match
	cursorMatch        // read a matching entry
	cursorDone         // nothing left in the window
)

func newCursor(txn *badger.Txn, m *matcher, keyID []byte, kind string, prefixes ...[]byte) *cursor {
	c := &cursor{m: m, dim: kind == "dim", keyID: keyID, prefixes: prefixes, read: -1}
	if len(keyID) == 0 {
		c.keyID = nil
	}
	for _, p := range prefixes {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p, Reverse: !m.asc})
		it.Seek(m.seek(p))
		c.its = append(c.its, it)
	}
	return c
}

func (c *cursor) close() {
	for _, it := range c.its {
		it.Close()
	}
}

// step reads the next entry in walk order. k and v stay valid until the
// next step (Badger reuses an item once its iterator moves on).
func (c *cursor) step() (k, v []byte, state int) {
	if c.read >= 0 {
		c.its[c.read].Next()
		c.read = -1
	}
	best := -1
	var bestPos []byte
	for i, it := range c.its {
		for it.Valid() && len(it.Item().Key())-len(c.prefixes[i]) != posLen {
			it.Next() // another account's or value's entry sharing the prefix bytes
		}
		if !it.Valid() {
			continue
		}
		pos := it.Item().Key()[len(c.prefixes[i]):]
		if best < 0 || c.m.asc == (bytes.Compare(pos, bestPos) < 0) {
			best, bestPos = i, pos
		}
	}
	if best < 0 || c.m.pastFarEdge(bestPos) {
		return nil, nil, cursorDone
	}
	c.read = best
	item := c.its[best].Item()
	if !c.m.inRange(bestPos) {
		return nil, nil, cursorSkip
	}
	ok := true
	err := item.Value(func(val []byte) error {
		if c.dim {
			key, rest, good := dimParts(val)
			ok = good && (c.keyID == nil || bytes.Equal(key, c.keyID))
			val = rest
		}
		if ok && c.m.filters {
			ok = c.m.index(val)
		}
		v = val
		return nil
	})
	if err != nil || !ok {
		return nil, nil, cursorSkip
	}
	return item.Key(), v, cursorMatch
}

// ScanLogTotals is ScanLogs for summaries: the totals come from the index
// entries, so no row is read (but for entries written without totals).
func (s *Store) ScanLogTotals(ctx context.Context, q store.LogQuery, fn func(store.LogTotal) bool) error {
	toTotal := func(r store.LogRow) store.LogTotal {
		return store.LogTotal{CreatedAt: r.CreatedAt, Model: r.Model, Status: r.Status, Cost: r.Cost,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedTokens: r.CachedTokens}
	}
	if q.Ref != "" {
		return s.ScanLogs(ctx, q, func(r store.LogRow) bool { return fn(toTotal(r)) })
	}
	if err := s.seen(ctx); err != nil {
		return err
	}
	buf := make([]store.LogTotal, 0, scanChunk)
	var lastID uint64
	for {
		buf = buf[:0]
		err := s.view(ctx, func(txn *badger.Txn) error {
			return walk(ctx, txn, &q, scanChunk, func(k, v []byte) error {
				id := tailID(k)
				var t store.LogTotal
				var have bool
				if status, model, _, _, rest, ok := indexParts(v); ok {
					if cost, in, out, cached, ok := indexTotals(rest); ok {
						t = store.LogTotal{Model: string(model), Status: string(status), Cost: cost,
							InputTokens: in, OutputTokens: out, CachedTokens: cached}
						have = true
					}
				}
				if have {
					t.CreatedAt = parseTS(k[len(k)-posLen:])
				} else {
					r, err := readRow(txn, id)
					if err != nil {
						return err
					}
					t = toTotal(r)
				}
				buf = append(buf, t)
				lastID = id
				return nil
			})
		})
		if err != nil {
			return err
		}
		for _, t := range buf {
			if !fn(t) {
				return nil
			}
		}
		if len(buf) < scanChunk {
			return nil
		}
		q.After = &store.LogPosition{CreatedAt: buf[len(buf)-1].CreatedAt, ID: lastID}
	}
}

// refPage answers a Ref query from the ref index: a handful of rows,
// checked in full and sorted here.
func refPage(ctx context.Context, txn *badger.Txn, q *store.LogQuery, limit int, emit func(store.LogRow)) error {
	if !validID(q.Ref) {
		return nil
	}
	m := newMatcher(q)
	prefix := logRefPrefix(q.Ref)
	var rows []store.LogRow
	err := scanPrefix(txn, prefix, false, func(it *badger.Item) error {
		k := it.Key()
		if len(k) != len(prefix)+8 {
			return nil
		}
		r, err := readRow(txn, tailID(k))
		if err != nil {
			return err
		}
		if m.row(&r) {
			rows = append(rows, r)
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	slices.SortFunc(rows, func(a, b store.LogRow) int {
		c := cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		if !q.Asc {
			c = -c
		}
		return c
	})
	for _, r := range rows[:min(limit, len(rows))] {
		emit(r)
	}
	return nil
}

// matcher holds a query's window and filters in key form.
type matcher struct {
	q        *store.LogQuery
	asc      bool
	from, to []byte // encoded times; nil when open
	after    []byte // encoded position; nil when none
	filters  bool
}

func newMatcher(q *store.LogQuery) *matcher {
	m := &matcher{q: q, asc: q.Asc}
	if !q.From.IsZero() {
		m.from = appendTS(nil, q.From)
	}
	if !q.To.IsZero() {
		m.to = appendTS(nil, q.To)
	}
	if q.After != nil {
		m.after = appendPos(nil, q.After.CreatedAt, q.After.ID)
	}
	m.filters = len(q.Models)+len(q.Statuses)+len(q.UnitTypes)+len(q.ErrorCodes) > 0
	return m
}

// seek is where a walk starts: the near edge of the window, or the
// cursor when that is further in. Reverse iteration lands on the last key
// at or before the seek key.
func (m *matcher) seek(prefix []byte) []byte {
	var edge []byte
	if m.asc {
		edge = append(bytes.Clone(prefix), m.from...)
		if m.after != nil && bytes.Compare(m.after, edge[len(prefix):]) > 0 {
			edge = append(edge[:len(prefix)], m.after...)
		}
		return edge
	}
	if m.to != nil {
		edge = append(bytes.Clone(prefix), m.to...)
	} else {
		edge = seekPast(prefix)
	}
	if m.after != nil && bytes.Compare(m.after, edge[len(prefix):]) < 0 {
		edge = append(edge[:len(prefix)], m.after...)
	}
	return edge
}

// pastFarEdge reports that pos and everything after it in walk order lie
// outside the window.
func (m *matcher) pastFarEdge(pos []byte) bool {
	ts := pos[:tsLen]
	if m.asc {
		return m.to != nil && bytes.Compare(ts, m.to) >= 0
	}
	return m.from != nil && bytes.Compare(ts, m.from) < 0
}

// inRange checks the near edge and the cursor.
func (m *matcher) inRange(pos []byte) bool {
	ts := pos[:tsLen]
	if m.from != nil && bytes.Compare(ts, m.from) < 0 || m.to != nil && bytes.Compare(ts, m.to) >= 0 {
		return false
	}
	if m.after == nil {
		return true
	}
	c := bytes.Compare(pos, m.after)
	return m.asc && c > 0 || !m.asc && c < 0
}

// index applies the value filters to an index value.
func (m *matcher) index(v []byte) bool {
	status, model, unitType, errorCode, ok := indexFields(v)
	return ok && m.values(status, model, unitType, errorCode)
}

func (m *matcher) values(status, model, unitType, errorCode []byte) bool {
	if len(unitType) == 0 {
		unitType = chat
	}
	return anyOf(m.q.Statuses, status) && anyOf(m.q.Models, model) &&
		anyOf(m.q.UnitTypes, unitType) && anyOf(m.q.ErrorCodes, errorCode)
}

var chat = []byte("chat")

func anyOf(want []string, got []byte) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if w == string(got) {
			return true
		}
	}
	return false
}

// row applies the whole query to a decoded row (the Ref path).
func (m *matcher) row(r *store.LogRow) bool {
	q := m.q
	if r.AccountID != q.AccountID || q.KeyID != "" && r.KeyID != q.KeyID {
		return false
	}
	if r.RequestID != q.Ref && r.TaskID != q.Ref {
		return false
	}
	if !m.inRange(appendPos(make([]byte, 0, posLen), r.CreatedAt, r.ID)) {
		return false
	}
	if !m.filters {
		return true
	}
	return m.index(encodeIndex(nil, r))
}

// indexLogValues gives the rows of a store written before the per-value
// log indexes their entries, once: from the account index (key unknown),
// then from the key index, whose entries overwrite those with the key id.
func (s *Store) indexLogValues() error {
	var done bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		done, err = exists(txn, logDimsKey)
		return err
	})
	if err != nil || done {
		return err
	}
	if err := s.health.space.admit(); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	n := 0
	for _, index := range []string{pLogAcct, pLogKey} {
		err := s.db.View(func(txn *badger.Txn) error {
			return scanPrefix(txn, []byte(index), true, func(it *badger.Item) error {
				k := it.Key()
				if len(k) < len(index)+posLen+1 {
					return nil
				}
				scope, pos := k[len(index):len(k)-posLen], k[len(k)-posLen:]
				account, key, _ := bytes.Cut(scope[:len(scope)-1], []byte{sep})
				if index == pLogAcct {
					key = nil
				}
				return it.Value(func(v []byte) error {
					_, model, _, code, ok := indexFields(v)
					if !ok {
						return nil
					}
					dv := appendDimValue(nil, string(key), v)
					for _, d := range [2]struct {
						prefix string
						value  []byte
					}{{pLogMod, model}, {pLogErr, code}} {
						if !validID(string(d.value)) {
							continue
						}
						dk := append(logDimPrefix(d.prefix, string(account), string(d.value)), pos...)
						if err := wb.Set(dk, dv); err != nil {
							return err
						}
						n++
					}
					return nil
				})
			})
		})
		if err != nil {
			return fmt.Errorf("badgerstore: indexing log rows by model and error code: %w", err)
		}
	}
	if err := wb.Set(logDimsKey, nil); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("log rows indexed by model and error code", "entries", n)
	}
	return nil
}
