package pgstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
)

// group is what a summary keeps of rows: per UTC day, model and status.
type group struct {
	day           time.Time
	model, status string
}

type sums struct {
	rows                 int64
	cost                 money.Total
	input, output, cache int64
}

func totalsOf(t *testing.T, s *Store, q store.LogQuery) map[group]sums {
	t.Helper()
	out := map[group]sums{}
	err := store.ScanTotals(t.Context(), s, q, func(r store.LogTotal) bool {
		g := group{r.CreatedAt.UTC().Truncate(24 * time.Hour), r.Model, r.Status}
		x := out[g]
		x.rows += max(r.Rows, 1)
		x.cost.Add(r.Cost)
		x.input, x.output, x.cache = x.input+r.InputTokens, x.output+r.OutputTokens, x.cache+r.CachedTokens
		out[g] = x
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The database's grouped totals are the rows' totals, to the nano; a
// group whose sum leaves int64 falls back to the rows themselves.
func TestLogTotals(t *testing.T) {
	s := openURL(t, testpg.Schema(t), Options{})
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[group]sums{}
	var rows []store.LogRow
	for i := range 3000 {
		r := store.LogRow{
			AccountID: "a", CreatedAt: t0.Add(time.Duration(rng.IntN(5*24*3600)) * time.Second).Add(-48 * time.Hour),
			Model: fmt.Sprintf("m%d", rng.IntN(4)), Status: []string{store.StatusSuccess, store.StatusError}[rng.IntN(2)],
			Cost: money.Nano(rng.Int64N(1e12)), InputTokens: rng.Int64N(1e6), OutputTokens: rng.Int64N(1e5),
			CachedTokens: rng.Int64N(10), RequestID: fmt.Sprint(i),
		}
		rows = append(rows, r)
		g := group{r.CreatedAt.Truncate(24 * time.Hour), r.Model, r.Status}
		x := want[g]
		x.rows++
		x.cost.Add(r.Cost)
		x.input, x.output, x.cache = x.input+r.InputTokens, x.output+r.OutputTokens, x.cache+r.CachedTokens
		want[g] = x
	}
	if err := s.ImportRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	q := store.LogQuery{AccountID: "a", From: t0.Add(-72 * time.Hour), To: t0.Add(72 * time.Hour)}
	got := totalsOf(t, s, q)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Fatalf("grouped totals differ:\n got %v\nwant %v", got, want)
	}

	// Two rows of one group past int64 together.
	for i := range 2 {
		r := &store.LogRow{AccountID: "big", CreatedAt: t0, Model: "m", Status: store.StatusSuccess, Cost: money.Max, RequestID: fmt.Sprint("big", i)}
		if err := s.Settle(ctx, store.Settlement{Row: r}); err != nil {
			t.Fatal(err)
		}
	}
	big := totalsOf(t, s, store.LogQuery{AccountID: "big"})
	var wantCost money.Total
	wantCost.Add(money.Max)
	wantCost.Add(money.Max)
	if x := big[group{t0.Truncate(24 * time.Hour), "m", store.StatusSuccess}]; x.rows != 2 || x.cost != wantCost {
		t.Fatalf("totals past int64: %+v", big)
	}
}
