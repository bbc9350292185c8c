package logsapi

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// countingStore is the real Badger store, in memory, counting ScanLogs and
// ScanLogTotals calls so the tests can observe the summary cache.
type countingStore struct {
	*badgerstore.Store
	scans atomic.Int64
}

func newTestStore(t *testing.T) *countingStore {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &countingStore{Store: st}
}

func (s *countingStore) ScanLogs(ctx context.Context, q store.LogQuery, fn func(store.LogRow) bool) error {
	s.scans.Add(1)
	return s.Store.ScanLogs(ctx, q, fn)
}

func (s *countingStore) ScanLogTotals(ctx context.Context, q store.LogQuery, fn func(store.LogTotal) bool) error {
	s.scans.Add(1)
	return s.Store.ScanLogTotals(ctx, q, fn)
}

func (s *countingStore) scanCount() int64 { return s.scans.Load() }
