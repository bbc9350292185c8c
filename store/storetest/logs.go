package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

func testGetLog(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(10))
	units, attempts := int64(3), 2
	exp := t0.Add(48 * time.Hour)
	full := &store.LogRow{
		AccountID: "a", CreatedAt: t0.Add(1234567 * time.Nanosecond), SubmittedAt: t0,
		KeyID: "k1", KeyName: "main", KeyPrefix: "tg-ab", Model: "img-1", Status: store.StatusError,
		ErrorCode: "upstream_error", ErrorMessage: "the upstream said \"no\"\n",
		InputTokens: 1 << 40, OutputTokens: -1, CachedTokens: 7, UnitCount: &units, UnitType: "image",
		Cost: money.MustParse("-0.000000001"), LatencyMS: 1234, RequestID: "req-1", TaskID: "task-1",
		ResultURLs: []string{"https://x/1.png", ""}, ResultExpiresAt: &exp, AttemptsCount: &attempts,
		Attempts: []store.Attempt{
			{Seq: 1, CreatedAt: t0, LatencyMS: 5, ErrorCode: "timeout", ErrorMessage: "slow"},
			{Seq: 2, CreatedAt: t0.Add(time.Second), LatencyMS: 6},
		},
		Tech: &store.TechView{
			Kind: "image", Request: []store.KV{{K: "size", V: "1024x1024"}}, Upstream: []store.KV{{K: "vendor", V: "sim"}},
			Gateway: []store.KV{{K: "", V: ""}}, RequestNote: "ünïcödé ✓",
		},
	}
	minimal := &store.LogRow{AccountID: "a", CreatedAt: t0, Status: store.StatusRejected, RequestID: "req-2"}
	emptyTech := &store.LogRow{AccountID: "a", CreatedAt: t0, RequestID: "req-3", Tech: &store.TechView{}}
	for _, r := range []*store.LogRow{full, minimal, emptyTech} {
		mustNil(t, "settle", s.Settle(ctx, store.Settlement{Row: r}))
		got, err := s.GetLog(ctx, r.ID)
		mustNil(t, "get log", err)
		same(t, "round trip", normRow(got), *r)
	}
	if full.ID >= minimal.ID || minimal.ID >= emptyTech.ID {
		t.Fatalf("ids %d, %d, %d do not increase", full.ID, minimal.ID, emptyTech.ID)
	}
	_, err := s.GetLog(ctx, emptyTech.ID+1000)
	mustIs(t, "unknown id", err, store.ErrNotFound)
}

// seedLogs writes rows for account "a" (more than a few scan chunks) and
// for two neighbours whose ids share its bytes, inserted in shuffled
// order so id order differs from time order, with many rows sharing a
// created_at. It returns every row with its id.
func seedLogs(t *testing.T, s store.Store) []store.LogRow {
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []*store.LogRow
	add := func(account string, n int) {
		newAccount(t, s, account, 0)
		for i := range n {
			r := &store.LogRow{
				AccountID:   account,
				CreatedAt:   t0.Add(time.Duration(i/3) * time.Second),
				SubmittedAt: t0,
				KeyID:       fmt.Sprintf("k%d", 1+rng.IntN(3)),
				Model:       fmt.Sprintf("m%d", 1+rng.IntN(3)),
				Status:      []string{store.StatusSuccess, store.StatusError, store.StatusInterrupted, store.StatusRejected}[rng.IntN(4)],
				UnitType:    []string{"", "", "image", "video"}[rng.IntN(4)],
				ErrorCode:   []string{"", "", "timeout", "upstream_error"}[rng.IntN(4)],
				Cost:        money.Nano(rng.IntN(1000)),
				RequestID:   fmt.Sprintf("req-%s-%d", account, i),
			}
			if i%7 == 0 {
				r.CreatedAt = r.CreatedAt.Add(500 * time.Nanosecond)
			}
			if i%10 == 0 {
				r.TaskID = fmt.Sprintf("task-%d", i/20) // two rows per task
			}
			if i == 42 {
				r.RequestID = "req-shared" // in every account
			}
			rows = append(rows, r)
		}
	}
	add("a", 1100)
	add("ab", 40)
	add("b", 40)
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })

	next := make(chan *store.LogRow)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for r := range next {
				if err := s.Settle(t.Context(), store.Settlement{Row: r}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, r := range rows {
		next <- r
	}
	close(next)
	wg.Wait()
	close(errs)
	mustNil(t, "seed", <-errs)
	out := make([]store.LogRow, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out
}

// matches is the reference reading of store.LogQuery.
func matches(q store.LogQuery, r *store.LogRow) bool {
	if r.AccountID != q.AccountID || q.KeyID != "" && r.KeyID != q.KeyID {
		return false
	}
	if !q.From.IsZero() && r.CreatedAt.Before(q.From) || !q.To.IsZero() && !r.CreatedAt.Before(q.To) {
		return false
	}
	ut := cmp.Or(r.UnitType, "chat")
	if len(q.Models) > 0 && !slices.Contains(q.Models, r.Model) ||
		len(q.Statuses) > 0 && !slices.Contains(q.Statuses, r.Status) ||
		len(q.UnitTypes) > 0 && !slices.Contains(q.UnitTypes, ut) ||
		len(q.ErrorCodes) > 0 && !slices.Contains(q.ErrorCodes, r.ErrorCode) {
		return false
	}
	if q.Ref != "" && r.TaskID != q.Ref && r.RequestID != q.Ref {
		return false
	}
	if q.After != nil {
		c := order(q.Asc, r.CreatedAt, r.ID, q.After.CreatedAt, q.After.ID)
		if c <= 0 {
			return false
		}
	}
	return true
}

// order compares two positions in a query's order.
func order(asc bool, ta time.Time, ia uint64, tb time.Time, ib uint64) int {
	c := cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
	if !asc {
		c = -c
	}
	return c
}

func expect(all []store.LogRow, q store.LogQuery) []store.LogRow {
	var out []store.LogRow
	for i := range all {
		if matches(q, &all[i]) {
			out = append(out, all[i])
		}
	}
	slices.SortFunc(out, func(a, b store.LogRow) int { return order(q.Asc, a.CreatedAt, a.ID, b.CreatedAt, b.ID) })
	return out
}

func ids(rows []store.LogRow) []uint64 {
	out := make([]uint64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func sameRows(t *testing.T, what string, got, want []store.LogRow) {
	t.Helper()
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("%s: ids\n got  %v\n want %v", what, ids(got), ids(want))
	}
	for i := range got {
		same(t, what, normRow(got[i]), want[i])
	}
}

func testQueryLogs(t *testing.T, s store.Store) {
	ctx := t.Context()
	all := seedLogs(t, s)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	queries := []struct {
		desc string
		q    store.LogQuery
	}{
		{"everything", store.LogQuery{}},
		{"one key", store.LogQuery{KeyID: "k2"}},
		{"window", store.LogQuery{From: sec(50), To: sec(120)}},
		{"window edges inside tie groups", store.LogQuery{From: sec(50).Add(500 * time.Nanosecond), To: sec(56).Add(500 * time.Nanosecond)}},
		{"from only", store.LogQuery{From: sec(300)}},
		{"to only", store.LogQuery{To: sec(10)}},
		{"empty window", store.LogQuery{From: sec(50), To: sec(50)}},
		{"models", store.LogQuery{Models: []string{"m1", "m3"}}},
		{"statuses", store.LogQuery{Statuses: []string{store.StatusError}}},
		{"chat unit type matches empty", store.LogQuery{UnitTypes: []string{"chat"}}},
		{"unit types", store.LogQuery{UnitTypes: []string{"image", "chat"}}},
		{"error codes", store.LogQuery{ErrorCodes: []string{"timeout"}}},
		{"no error code", store.LogQuery{ErrorCodes: []string{""}}},
		{"unknown model", store.LogQuery{Models: []string{"nope"}}},
		{"everything at once", store.LogQuery{
			KeyID: "k1", From: sec(20), To: sec(300), Models: []string{"m2", "m3"},
			Statuses: []string{store.StatusError, store.StatusSuccess}, UnitTypes: []string{"chat", "video"},
			ErrorCodes: []string{"", "timeout"},
		}},
		{"request id", store.LogQuery{Ref: "req-a-17"}},
		{"task id", store.LogQuery{Ref: "task-3"}},
		{"ref shared with other accounts", store.LogQuery{Ref: "req-shared"}},
		{"ref and filters", store.LogQuery{Ref: "task-3", Statuses: []string{store.StatusError}, From: sec(20)}},
		{"unknown ref", store.LogQuery{Ref: "req-b-1"}},
		{"after a position between rows", store.LogQuery{After: &store.LogPosition{CreatedAt: sec(200), ID: 0}}},
		{"after a far position", store.LogQuery{After: &store.LogPosition{CreatedAt: sec(1 << 20), ID: 1}}},
	}
	for _, tc := range queries {
		for _, asc := range []bool{false, true} {
			q := tc.q
			q.AccountID, q.Asc = "a", asc
			t.Run(fmt.Sprintf("%s asc=%v", tc.desc, asc), func(t *testing.T) {
				checkQuery(t, s, all, q)
			})
		}
	}
	for _, acct := range []string{"ab", "b", "nope"} {
		t.Run("account "+acct, func(t *testing.T) { checkQuery(t, s, all, store.LogQuery{AccountID: acct}) })
	}
	t.Run("limit", func(t *testing.T) {
		got, err := s.QueryLogs(ctx, store.LogQuery{AccountID: "a", Limit: 5, Statuses: []string{store.StatusError}})
		mustNil(t, "query", err)
		sameRows(t, "first five", got, expect(all, store.LogQuery{AccountID: "a", Statuses: []string{store.StatusError}})[:5])
	})
}

// checkQuery checks one query whole, page by page, and scanned.
func checkQuery(t *testing.T, s store.Store, all []store.LogRow, q store.LogQuery) {
	ctx := t.Context()
	want := expect(all, q)
	got, err := s.QueryLogs(ctx, q)
	mustNil(t, "query", err)
	sameRows(t, "whole", got, want)

	// Pages continue from the last row's position: never skip or repeat.
	const size = 7
	var paged []store.LogRow
	p := q
	p.Limit = size
	for range len(want)/size + 2 {
		page, err := s.QueryLogs(ctx, p)
		mustNil(t, "page", err)
		if len(page) > size {
			t.Fatalf("page of %d rows, limit %d", len(page), size)
		}
		paged = append(paged, page...)
		if len(page) < size {
			break
		}
		last := page[len(page)-1]
		p.After = &store.LogPosition{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	sameRows(t, "paged", paged, want)

	var scanned []store.LogRow
	sq := q
	sq.Limit = 3 // ignored by ScanLogs
	mustNil(t, "scan", s.ScanLogs(ctx, sq, func(r store.LogRow) bool {
		scanned = append(scanned, r)
		return true
	}))
	sameRows(t, "scanned", scanned, want)
}

func testScanLogs(t *testing.T, s store.Store) {
	ctx := t.Context()
	all := seedLogs(t, s)
	for _, stop := range []int{1, 5, 600} {
		for _, asc := range []bool{false, true} {
			t.Run(fmt.Sprintf("stop after %d asc=%v", stop, asc), func(t *testing.T) {
				q := store.LogQuery{AccountID: "a", Asc: asc}
				var got []store.LogRow
				mustNil(t, "scan", s.ScanLogs(ctx, q, func(r store.LogRow) bool {
					got = append(got, r)
					return len(got) < stop
				}))
				sameRows(t, "scanned", got, expect(all, q)[:stop])
			})
		}
	}
	t.Run("rows written during a scan", func(t *testing.T) {
		q := store.LogQuery{AccountID: "b", Asc: true}
		n := 0
		var late *store.LogRow
		mustNil(t, "scan", s.ScanLogs(ctx, q, func(r store.LogRow) bool {
			if n == 0 {
				late = &store.LogRow{AccountID: "b", CreatedAt: t0.Add(time.Hour), RequestID: "late"}
				if err := s.Settle(ctx, store.Settlement{Row: late}); err != nil {
					t.Errorf("settle during scan: %v", err)
				}
			}
			n++
			return true
		}))
		if n != 40 && n != 41 {
			t.Fatalf("scan saw %d rows, want the 40 seeded (and maybe the late one)", n)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := contextWithCancel(t)
		calls := 0
		err := s.ScanLogs(cctx, store.LogQuery{AccountID: "a"}, func(store.LogRow) bool {
			calls++
			cancel()
			return true
		})
		if err == nil || !errors.Is(err, cctx.Err()) {
			t.Fatalf("scan after cancel: err = %v, want %v", err, cctx.Err())
		}
		if calls >= 1100 {
			t.Fatalf("cancelled scan went through all %d rows", calls)
		}
	})
}
