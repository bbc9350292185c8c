package pgstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The books (migrations/0007_books.sql) are read for an audit in one
// REPEATABLE READ, READ ONLY transaction: every query sees the database
// as of its first, while every instance goes on writing.

// AuditView implements store.Books.
func (s *Store) AuditView(ctx context.Context) (store.BooksView, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	v, err := openView(ctx, s.pool)
	return v, s.fail(err)
}

// BooksReader reads the books of a database without joining it as an
// instance (no lease, no migration): `tollgate audit` against a database.
type BooksReader struct{ pool *pgxpool.Pool }

// OpenBooks connects to the database at url, whose schema must have the
// books.
func OpenBooks(ctx context.Context, url string) (*BooksReader, error) {
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &BooksReader{pool: pool}, nil
}

// AuditView implements store.Books.
func (b *BooksReader) AuditView(ctx context.Context) (store.BooksView, error) {
	return openView(ctx, b.pool)
}

// Close closes the connections.
func (b *BooksReader) Close() error {
	b.pool.Close()
	return nil
}

type booksView struct {
	tx       pgx.Tx
	live     map[string]bool
	at       time.Time
	cursors  int
	interned map[string]string // rawRow.common
}

func openView(ctx context.Context, pool *pgxpool.Pool) (*booksView, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	v := &booksView{tx: tx, live: map[string]bool{}, interned: map[string]string{}}
	// The snapshot is taken by the transaction's first statement: this
	// one, whose now() is the transaction's start.
	var at time.Time
	err = tx.QueryRow(ctx, `SELECT now()`).Scan(&at)
	if err == nil {
		v.at = at.UTC()
		var ids []string
		rows, qerr := tx.Query(ctx, `SELECT id FROM instances WHERE lease_until > now()`)
		if err = qerr; err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		for _, id := range ids {
			v.live[id] = true
		}
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return v, nil
}

func (v *booksView) At() time.Time          { return v.at }
func (v *booksView) Live(owner string) bool { return v.live[owner] }

func (v *booksView) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := v.tx.Rollback(ctx)
	if err == pgx.ErrTxClosed {
		return nil
	}
	return err
}

// query yields what scan makes of each row of sql, read through a cursor
// a batch at a time: the view's sequences share one connection, and one
// may be walked while another waits (the audit walks rows and
// settlements side by side), so no batch stays open while it is yielded.
func query[T any](ctx context.Context, v *booksView, sql string, scan func(pgx.Rows) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		v.cursors++
		name := "audit_" + strconv.Itoa(v.cursors)
		if _, err := v.tx.Exec(ctx, `DECLARE `+name+` NO SCROLL CURSOR FOR `+sql); err != nil {
			yield(zero, err)
			return
		}
		defer func() { _, _ = v.tx.Exec(context.WithoutCancel(ctx), `CLOSE `+name) }()
		const batch = 4096
		buf := make([]T, 0, batch)
		for {
			rows, err := v.tx.Query(ctx, `FETCH `+strconv.Itoa(batch)+` FROM `+name)
			if err == nil {
				buf, err = collect(rows, buf[:0], scan)
			}
			if err != nil {
				yield(zero, err)
				return
			}
			for _, x := range buf {
				if !yield(x, nil) {
					return
				}
			}
			if len(buf) < batch {
				return
			}
		}
	}
}

func collect[T any](rows pgx.Rows, buf []T, scan func(pgx.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			return buf, err
		}
		buf = append(buf, x)
	}
	return buf, rows.Err()
}

const bookCols = `seq, kind, account_id, amount, charge, hold_id, request_id, task_id, order_id, admin_token,
	user_id, ledger_id, log_id, owner, note, created_at`

func (v *booksView) scanBook(r pgx.Rows) (store.BookEntry, error) {
	c := v.raw(r)
	x := store.BookEntry{Seq: uint64(c.int(0)), Kind: c.common(1), AccountID: c.common(2), Amount: money.Nano(c.int(3)),
		Charge: money.Nano(c.int(4)), HoldID: c.str(5), TaskID: c.str(7), OrderID: c.str(8), AdminToken: c.str(9),
		UserID: c.common(10), LedgerID: uint64(c.int(11)), LogID: uint64(c.int(12)), Owner: c.common(13), Note: c.common(14),
		At: fromNS(c.int(15))}
	// A hold's request is its id.
	if x.RequestID = x.HoldID; string(c.vals[6]) != x.HoldID {
		x.RequestID = c.str(6)
	}
	return x, c.err
}

// rawRow decodes a row's values by hand: an audit reads every entry and
// row, and pgx's Scan costs a plan and an allocation per column. Values
// that repeat (kinds, accounts, instances) are interned.
type rawRow struct {
	v    *booksView
	fds  []pgconn.FieldDescription
	vals [][]byte
	err  error
}

func (v *booksView) raw(r pgx.Rows) rawRow {
	return rawRow{v: v, fds: r.FieldDescriptions(), vals: r.RawValues()}
}

func (c *rawRow) int(i int) int64 {
	b := c.vals[i]
	if c.fds[i].Format == pgx.BinaryFormatCode {
		if len(b) != 8 {
			c.fail(i)
			return 0
		}
		return int64(binary.BigEndian.Uint64(b))
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		c.fail(i)
	}
	return n
}

func (c *rawRow) fail(i int) {
	if c.err == nil {
		c.err = fmt.Errorf("pgstore: column %s: not a bigint", c.fds[i].Name)
	}
}

func (c *rawRow) str(i int) string { return string(c.vals[i]) }

// common is a text value that many rows share.
func (c *rawRow) common(i int) string {
	b := c.vals[i]
	if len(b) == 0 {
		return ""
	}
	if s, ok := c.v.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.v.interned) < maxInterned {
		c.v.interned[s] = s
	}
	return s
}

// maxInterned bounds the strings a view keeps for common.
const maxInterned = 100_000

func (v *booksView) Entries(ctx context.Context) iter.Seq2[store.BookEntry, error] {
	return query(ctx, v, `SELECT `+bookCols+` FROM book ORDER BY seq`, v.scanBook)
}

// Settlements reads only what a row is matched on: the second pass over
// the books costs a third of the first.
func (v *booksView) Settlements(ctx context.Context) iter.Seq2[store.BookEntry, error] {
	return query(ctx, v, `SELECT seq, kind, account_id, charge, hold_id, task_id, log_id FROM book
		WHERE kind IN ('settle', 'refund', 'late') ORDER BY log_id, seq`, func(r pgx.Rows) (store.BookEntry, error) {
		c := v.raw(r)
		x := store.BookEntry{Seq: uint64(c.int(0)), Kind: c.common(1), AccountID: c.common(2), Charge: money.Nano(c.int(3)),
			HoldID: c.str(4), TaskID: c.str(5), LogID: uint64(c.int(6))}
		return x, c.err
	})
}

func (v *booksView) Wallets(ctx context.Context) iter.Seq2[store.Wallet, error] {
	return query(ctx, v, `SELECT account_id, balance, held FROM wallets ORDER BY account_id`, func(r pgx.Rows) (store.Wallet, error) {
		var w store.Wallet
		err := r.Scan(&w.AccountID, (*int64)(&w.Balance), (*int64)(&w.Held))
		return w, err
	})
}

func (v *booksView) Holds(ctx context.Context) iter.Seq2[store.HoldRecord, error] {
	return query(ctx, v, `SELECT id, account_id, task_id, amount FROM holds`, func(r pgx.Rows) (store.HoldRecord, error) {
		var h store.HoldRecord
		err := r.Scan(&h.ID, &h.AccountID, &h.TaskID, (*int64)(&h.Amount))
		return h, err
	})
}

func (v *booksView) Tasks(ctx context.Context) iter.Seq2[store.TaskBrief, error] {
	return query(ctx, v, `SELECT id, account_id, status, coalesce(head->>'hold_id', ''), coalesce(head->>'completed_at', '')
		FROM tasks`, func(r pgx.Rows) (store.TaskBrief, error) {
		var t store.TaskBrief
		var done string
		if err := r.Scan(&t.ID, &t.AccountID, &t.Status, &t.HoldID, &done); err != nil {
			return t, err
		}
		if done != "" {
			at, err := time.Parse(time.RFC3339Nano, done)
			if err != nil {
				return t, fmt.Errorf("task %s: completed_at %q: %w", t.ID, done, err)
			}
			t.CompletedAt = at
		}
		return t, nil
	})
}

func (v *booksView) Rows(ctx context.Context) iter.Seq2[store.RowBrief, error] {
	return query(ctx, v, `SELECT id, account_id, request_id, task_id, cost FROM logs ORDER BY id`, func(r pgx.Rows) (store.RowBrief, error) {
		c := v.raw(r)
		x := store.RowBrief{ID: uint64(c.int(0)), AccountID: c.common(1), RequestID: c.str(2), TaskID: c.str(3), Cost: money.Nano(c.int(4))}
		return x, c.err
	})
}

var (
	_ store.Books = (*Store)(nil)
	_ store.Books = (*BooksReader)(nil)
)
