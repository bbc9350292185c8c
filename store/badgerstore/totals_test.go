package badgerstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The index-only totals equal the totals of the rows, for every filter.
func TestScanLogTotalsMatchesRows(t *testing.T) {
	s, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateAccount(ctx, store.Account{ID: "a", Status: store.AccountActive}, money.Credits(10), "x"); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{store.StatusSuccess, store.StatusError, store.StatusRejected}
	for i := 0; i < 1500; i++ {
		r := &store.LogRow{
			AccountID: "a", KeyID: fmt.Sprintf("k%d", i%3), Model: fmt.Sprintf("m%d", i%4),
			Status: statuses[i%3], CreatedAt: base.Add(time.Duration(i) * time.Minute), RequestID: fmt.Sprintf("r%d", i),
			Cost: money.Nano(i * 1000), InputTokens: int64(i), OutputTokens: int64(2 * i), CachedTokens: int64(i % 7),
		}
		if err := s.Settle(ctx, store.Settlement{Row: r}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []store.LogQuery{
		{AccountID: "a"},
		{AccountID: "a", Asc: true, From: base.Add(100 * time.Minute), To: base.Add(900 * time.Minute)},
		{AccountID: "a", KeyID: "k1", Statuses: []string{store.StatusError}},
		{AccountID: "a", Models: []string{"m2", "m3"}},
		{AccountID: "a", Ref: "r42"},
	}
	for i, q := range queries {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var want, got []store.LogTotal
			if err := s.ScanLogs(ctx, q, func(r store.LogRow) bool {
				want = append(want, store.LogTotal{CreatedAt: r.CreatedAt, Model: r.Model, Status: r.Status, Cost: r.Cost,
					InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedTokens: r.CachedTokens})
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if err := store.ScanTotals(ctx, s, q, func(lt store.LogTotal) bool { got = append(got, lt); return true }); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("got %d totals, want %d", len(got), len(want))
			}
			for j := range want {
				if !got[j].CreatedAt.Equal(want[j].CreatedAt) || got[j].Model != want[j].Model || got[j].Status != want[j].Status ||
					got[j].Cost != want[j].Cost || got[j].InputTokens != want[j].InputTokens ||
					got[j].OutputTokens != want[j].OutputTokens || got[j].CachedTokens != want[j].CachedTokens {
					t.Fatalf("total %d: got %+v, want %+v", j, got[j], want[j])
				}
			}
		})
	}
}
