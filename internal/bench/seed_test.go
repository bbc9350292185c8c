package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

func TestSeedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		desc string
		n    int
	}{
		{desc: "none", n: 0},
		{desc: "fewer than the writers", n: 10},
		{desc: "many", n: 700},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			key := benchKey{AccountID: "acct-bench", KeyID: "key-bench", Name: "bench", Prefix: "sk-tollgate-ab"}
			now := time.Now().UTC()
			if err := SeedRows(ctx, st, key, tc.n, now); err != nil {
				t.Fatal(err)
			}
			got, oldest := 0, now
			err = st.ScanLogs(ctx, store.LogQuery{AccountID: key.AccountID}, func(r store.LogRow) bool {
				got++
				if r.KeyID != key.KeyID || r.Status != store.StatusSuccess || r.Cost != 0 || r.Model != Model {
					t.Errorf("row %+v", r)
				}
				if r.CreatedAt.Before(oldest) {
					oldest = r.CreatedAt
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.n {
				t.Fatalf("%d rows, want %d", got, tc.n)
			}
			if tc.n > 0 && now.Sub(oldest) < 29*24*time.Hour {
				t.Fatalf("rows not spread over 30 days: oldest %s", oldest)
			}
		})
	}
}

func TestSeedRowsCancelled(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SeedRows(ctx, st, benchKey{AccountID: "a"}, 1000, time.Now()); err == nil {
		t.Fatal("a cancelled seed reported success")
	}
}
