package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// A row's columns in insert order, and the type of each parameter (an
// INSERT ... SELECT cannot infer them).
var logCols = []struct{ name, typ string }{
	{"account_id", "text"}, {"created_at", "bigint"}, {"submitted_at", "bigint"}, {"key_id", "text"},
	{"key_name", "text"}, {"key_prefix", "text"}, {"model", "text"}, {"status", "text"},
	{"error_code", "text"}, {"error_message", "text"}, {"input_tokens", "bigint"}, {"output_tokens", "bigint"},
	{"cached_tokens", "bigint"}, {"unit_count", "bigint"}, {"unit_type", "text"}, {"cost", "bigint"},
	{"latency_ms", "bigint"}, {"request_id", "text"}, {"task_id", "text"}, {"result_urls", "text[]"},
	{"result_expires_at", "bigint"}, {"attempts_count", "integer"}, {"attempts", "json"}, {"tech", "json"},
}

var logInsertCols = func() string {
	names := make([]string, len(logCols))
	for i, c := range logCols {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}()

// logSelectCols reads a row back: its id, then the insert columns.
var logSelectCols = "id, " + logInsertCols

// logInsertArgs is "$from::type, ..." for the row's columns.
func logInsertArgs(from int) string {
	parts := make([]string, len(logCols))
	for i, c := range logCols {
		parts[i] = "$" + strconv.Itoa(from+i) + "::" + c.typ
	}
	return strings.Join(parts, ", ")
}

// logArg is the parameter of one row column when the row's columns start
// at parameter from.
func logArg(name string, from int) string {
	for i, c := range logCols {
		if c.name == name {
			return "$" + strconv.Itoa(from+i) + "::" + c.typ
		}
	}
	panic("pgstore: no log column " + name)
}

// logArgs are a row's values in logCols order.
func logArgs(r *store.LogRow) []any {
	var attempts, tech []byte
	if r.Attempts != nil {
		attempts, _ = json.Marshal(r.Attempts)
	}
	if r.Tech != nil {
		tech, _ = json.Marshal(r.Tech)
	}
	var attemptsCount *int32
	if r.AttemptsCount != nil {
		n := int32(*r.AttemptsCount)
		attemptsCount = &n
	}
	return []any{
		r.AccountID, ns(r.CreatedAt), ns(r.SubmittedAt), txt(r.KeyID),
		txt(r.KeyName), txt(r.KeyPrefix), txt(r.Model), txt(r.Status),
		txt(r.ErrorCode), txt(r.ErrorMessage), r.InputTokens, r.OutputTokens,
		r.CachedTokens, r.UnitCount, txt(r.UnitType), int64(r.Cost),
		r.LatencyMS, txt(r.RequestID), txt(r.TaskID), txts(r.ResultURLs),
		nsPtr(r.ResultExpiresAt), attemptsCount, jsonArg(attempts), jsonArg(tech),
	}
}

// jsonArg is nil (NULL) for no JSON, else the JSON as a string.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func scanRow(row pgx.Row) (store.LogRow, error) {
	var r store.LogRow
	var id, created, submitted int64
	var expires *int64
	var attemptsCount *int32
	var attempts, tech []byte
	err := row.Scan(&id, &r.AccountID, &created, &submitted, &r.KeyID,
		&r.KeyName, &r.KeyPrefix, &r.Model, &r.Status,
		&r.ErrorCode, &r.ErrorMessage, &r.InputTokens, &r.OutputTokens,
		&r.CachedTokens, &r.UnitCount, &r.UnitType, (*int64)(&r.Cost),
		&r.LatencyMS, &r.RequestID, &r.TaskID, &r.ResultURLs,
		&expires, &attemptsCount, &attempts, &tech)
	if err != nil {
		return r, err
	}
	r.ID, r.CreatedAt, r.SubmittedAt = uint64(id), fromNS(created), fromNS(submitted)
	r.ResultExpiresAt = fromNSPtr(expires)
	if attemptsCount != nil {
		n := int(*attemptsCount)
		r.AttemptsCount = &n
	}
	if attempts != nil {
		if err := json.Unmarshal(attempts, &r.Attempts); err != nil {
			return r, fmt.Errorf("pgstore: row %d attempts: %w", id, err)
		}
	}
	if tech != nil {
		r.Tech = &store.TechView{}
		if err := json.Unmarshal(tech, r.Tech); err != nil {
			return r, fmt.Errorf("pgstore: row %d tech: %w", id, err)
		}
	}
	return r, nil
}

// GetLog reads one row.
func (s *Store) GetLog(ctx context.Context, id uint64) (store.LogRow, error) {
	if err := s.enter(ctx); err != nil {
		return store.LogRow{}, err
	}
	if id > 1<<63-1 {
		return store.LogRow{}, store.ErrNotFound
	}
	r, err := scanRow(s.pool.QueryRow(ctx, `SELECT `+logSelectCols+` FROM logs WHERE id = $1`, int64(id)))
	return r, s.fail(err)
}

// maxLimit caps a page, as the Badger store does.
const maxLimit = 10_000

// where builds the WHERE clause of q and its arguments. The indexes
// (migrations/0001_init.sql) lead with the account, then the key, model,
// status or error code, then (created_at, id): PostgreSQL's planner picks
// the one a filter narrows most.
func where(q *store.LogQuery) (string, []any) {
	var b strings.Builder
	args := []any{q.AccountID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	b.WriteString("account_id = $1")
	if q.KeyID != "" {
		b.WriteString(" AND key_id = " + arg(q.KeyID))
	}
	if !q.From.IsZero() {
		b.WriteString(" AND created_at >= " + arg(ns(q.From)))
	}
	if !q.To.IsZero() {
		b.WriteString(" AND created_at < " + arg(ns(q.To)))
	}
	in := func(col string, vals []string) {
		// One value is an equality, which the column's index answers in
		// (created_at, id) order: a page of a rare value reads only its
		// rows. Several values are = ANY.
		if len(vals) == 1 {
			b.WriteString(" AND " + col + " = " + arg(txt(vals[0])))
		} else if len(vals) > 1 {
			b.WriteString(" AND " + col + " = ANY(" + arg(txts(vals)) + ")")
		}
	}
	in("model", q.Models)
	in("status", q.Statuses)
	if ut := unitTypes(q.UnitTypes); len(q.UnitTypes) > 0 && len(ut) == 0 {
		b.WriteString(" AND false") // only "": a row without a unit type is chat
	} else {
		in("unit_type", ut)
	}
	in("error_code", q.ErrorCodes)
	if q.Ref != "" {
		ref := arg(txt(q.Ref))
		b.WriteString(" AND (request_id = " + ref + " OR (task_id = " + ref + " AND task_id <> ''))")
	}
	if p := q.After; p != nil {
		op := "<"
		if q.Asc {
			op = ">"
		}
		id := int64(min(p.ID, 1<<63-1))
		b.WriteString(" AND (created_at, id) " + op + " (" + arg(ns(p.CreatedAt)) + ", " + arg(id) + ")")
	}
	return b.String(), args
}

// unitTypes are the stored unit types a filter names: "chat" names the
// rows without one as well.
func unitTypes(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	out := make([]string, 0, len(names)+1)
	for _, n := range names {
		if n == "chat" {
			out = append(out, "")
		}
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

func order(asc bool) string {
	if asc {
		return " ORDER BY created_at, id"
	}
	return " ORDER BY created_at DESC, id DESC"
}

// QueryLogs returns up to q.Limit rows (0 or more than 10,000: 10,000).
func (s *Store) QueryLogs(ctx context.Context, q store.LogQuery) ([]store.LogRow, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if !validID(q.AccountID) {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 || limit > maxLimit {
		limit = maxLimit
	}
	w, args := where(&q)
	args = append(args, limit)
	rows, err := s.pool.Query(ctx, `SELECT `+logSelectCols+` FROM logs WHERE `+w+order(q.Asc)+
		` LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LogRow, error) { return scanRow(r) })
	return out, s.fail(err)
}

// scanChunk is how many rows one read of ScanLogs takes.
const scanChunk = 512

// ScanLogs walks q in chunks of 512 rows, each its own query continuing
// from the last row's position, and calls fn between them: a slow
// consumer (a CSV export) holds no snapshot and no connection. Rows
// written during a scan appear if they sort after its position.
func (s *Store) ScanLogs(ctx context.Context, q store.LogQuery, fn func(store.LogRow) bool) error {
	q.Limit = scanChunk
	for {
		page, err := s.QueryLogs(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !fn(r) {
				return nil
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(page) < scanChunk {
			return nil
		}
		last := page[len(page)-1]
		q.After = &store.LogPosition{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// ScanLogTotals implements store.LogTotaler: the database adds the rows
// up by UTC day, model and status, and fn gets one total per group (a few
// hundred for a month), not a million rows. Sums come back as numeric and
// are used only if each fits (it always does short of 9.2e9 credits in a
// day and model); else the rows are streamed one by one.
func (s *Store) ScanLogTotals(ctx context.Context, q store.LogQuery, fn func(store.LogTotal) bool) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(q.AccountID) {
		return nil
	}
	q.After = nil
	w, args := where(&q)
	const day = int64(24 * time.Hour)
	d := strconv.FormatInt(day, 10)
	rows, err := s.pool.Query(ctx, `SELECT created_at / `+d+` - CASE WHEN created_at % `+d+` < 0 THEN 1 ELSE 0 END AS day,
			model, status, count(*), sum(cost)::text, sum(input_tokens)::text, sum(output_tokens)::text, sum(cached_tokens)::text
		FROM logs WHERE `+w+` GROUP BY 1, 2, 3`, args...)
	if err != nil {
		return s.fail(err)
	}
	var groups []store.LogTotal
	fits := true
	for rows.Next() {
		var t store.LogTotal
		var d int64
		var cost, in, out, cached string
		if err := rows.Scan(&d, &t.Model, &t.Status, &t.Rows, &cost, &in, &out, &cached); err != nil {
			rows.Close()
			return s.fail(err)
		}
		t.CreatedAt = time.Unix(0, 0).UTC().Add(time.Duration(d) * 24 * time.Hour)
		var c int64
		var e1, e2, e3, e4 error
		c, e1 = strconv.ParseInt(cost, 10, 64)
		t.InputTokens, e2 = strconv.ParseInt(in, 10, 64)
		t.OutputTokens, e3 = strconv.ParseInt(out, 10, 64)
		t.CachedTokens, e4 = strconv.ParseInt(cached, 10, 64)
		t.Cost = money.Nano(c)
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil || !t.Cost.Valid() {
			fits = false
		}
		groups = append(groups, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.fail(err)
	}
	if !fits {
		return s.scanRowTotals(ctx, w, args, q.Asc, fn)
	}
	for _, t := range groups {
		if !fn(t) {
			return nil
		}
	}
	return nil
}

// scanRowTotals streams each row's totals.
func (s *Store) scanRowTotals(ctx context.Context, w string, args []any, asc bool, fn func(store.LogTotal) bool) error {
	rows, err := s.pool.Query(ctx, `SELECT created_at, model, status, cost, input_tokens, output_tokens, cached_tokens
		FROM logs WHERE `+w+order(asc), args...)
	if err != nil {
		return s.fail(err)
	}
	defer rows.Close()
	var t store.LogTotal
	var created int64
	for rows.Next() {
		if err := rows.Scan(&created, &t.Model, &t.Status, (*int64)(&t.Cost), &t.InputTokens, &t.OutputTokens, &t.CachedTokens); err != nil {
			return s.fail(err)
		}
		t.CreatedAt = fromNS(created)
		if !fn(t) {
			return nil
		}
	}
	return s.fail(rows.Err())
}

var _ store.LogTotaler = (*Store)(nil)

// ImportRows bulk-loads rows without holds (PostgreSQL's COPY), each given
// a new id: for importing a ledger and for benchmarks, many times faster
// than settling row by row. The rows' ids are not set.
func (s *Store) ImportRows(ctx context.Context, rows []store.LogRow) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	cols := make([]string, len(logCols))
	for i, c := range logCols {
		cols[i] = c.name
	}
	for i := range rows {
		if err := checkID("account", rows[i].AccountID); err != nil {
			return err
		}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"logs"}, cols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		return logArgs(&rows[i]), nil
	}))
	return s.fail(err)
}
