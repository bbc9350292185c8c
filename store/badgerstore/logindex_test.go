package badgerstore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// Filtered pages answered through the per-value indexes (models, error
// codes) match a brute-force filter of every row, in both orders, in both
// scopes, with windows and cursors; and a store from before those indexes
// gets them at open.
func TestLogValueIndexesMatchAFullScan(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{})
	rnd := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	pick := func(weighted ...string) string { // value, weight pairs
		n := 0
		for i := 1; i < len(weighted); i += 2 {
			var w int
			fmt.Sscan(weighted[i], &w)
			n += w
		}
		r := rnd.IntN(n)
		for i := 0; i < len(weighted); i += 2 {
			var w int
			fmt.Sscan(weighted[i+1], &w)
			if r < w {
				return weighted[i]
			}
			r -= w
		}
		return ""
	}
	var all []store.LogRow
	for range 3000 {
		r := store.LogRow{
			AccountID: pick("a", "9", "b", "1"),
			KeyID:     pick("k1", "6", "k2", "3", "k3", "1"),
			CreatedAt: t0.Add(time.Duration(rnd.IntN(10*24*60)) * time.Minute), // ties on purpose
			Model:     pick("common", "70", "mid", "27", "rare", "2", "rarer", "1"),
			Status:    store.StatusSuccess,
		}
		if code := pick("", "90", "upstream_error", "9", "odd_code", "1"); code != "" {
			r.Status, r.ErrorCode = store.StatusError, code
		}
		r.RequestID = fmt.Sprintf("req_%d", len(all))
		if err := s.Settle(ctx, store.Settlement{Row: &r}); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}

	check := func(t *testing.T, s *Store, rounds int) {
		subsets := [][]string{nil, {"rare"}, {"rarer", "rare"}, {"common"}, {"mid", "rarer"}, {"nope"}, {"rare", "nope"}}
		codes := [][]string{nil, {"odd_code"}, {"upstream_error", "odd_code"}, {"never"}}
		for i := range rounds {
			q := store.LogQuery{
				AccountID:  "a",
				Models:     subsets[rnd.IntN(len(subsets))],
				ErrorCodes: codes[rnd.IntN(len(codes))],
				Asc:        rnd.IntN(2) == 0,
				Limit:      1 + rnd.IntN(60),
			}
			if rnd.IntN(2) == 0 {
				q.KeyID = pick("k1", "1", "k2", "1", "k3", "1")
			}
			if rnd.IntN(3) == 0 {
				q.Statuses = []string{store.StatusError}
			}
			if rnd.IntN(2) == 0 {
				q.From = t0.Add(time.Duration(rnd.IntN(5*24)) * time.Hour)
				q.To = q.From.Add(time.Duration(1+rnd.IntN(5*24)) * time.Hour)
			}
			want := oracle(all, q)
			if rnd.IntN(2) == 0 && len(want) > 1 {
				at := want[rnd.IntN(len(want))]
				q.After = &store.LogPosition{CreatedAt: at.CreatedAt, ID: at.ID}
				want = oracle(all, q)
			}
			got, err := s.QueryLogs(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rowIDs(got), rowIDs(want)) {
				t.Fatalf("query %d %+v:\n got  %v\n want %v", i, q, rowIDs(got), rowIDs(want))
			}
		}
	}
	t.Run("fresh store", func(t *testing.T) { check(t, s, 400) })

	// A store from before the per-value indexes: drop them and the mark.
	if err := s.db.DropPrefix([]byte(pLogMod), []byte(pLogErr), logDimsKey); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTemp(t, dir, Options{})
	t.Run("store indexed at open", func(t *testing.T) { check(t, s, 400) })
}

func rowIDs(rs []store.LogRow) []uint64 {
	ids := make([]uint64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

// oracle answers q by filtering every row.
func oracle(all []store.LogRow, q store.LogQuery) []store.LogRow {
	in := func(want []string, got string) bool { return len(want) == 0 || slices.Contains(want, got) }
	order := func(a, b store.LogRow) int {
		c := cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		if !q.Asc {
			c = -c
		}
		return c
	}
	var out []store.LogRow
	for _, r := range all {
		if r.AccountID != q.AccountID || q.KeyID != "" && r.KeyID != q.KeyID ||
			!in(q.Models, r.Model) || !in(q.ErrorCodes, r.ErrorCode) || !in(q.Statuses, r.Status) ||
			!q.From.IsZero() && r.CreatedAt.Before(q.From) || !q.To.IsZero() && !r.CreatedAt.Before(q.To) {
			continue
		}
		if q.After != nil && order(r, store.LogRow{CreatedAt: q.After.CreatedAt, ID: q.After.ID}) <= 0 {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, order)
	return out[:min(len(out), q.Limit)]
}
