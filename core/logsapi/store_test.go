package logsapi

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// memStore implements the log methods of store.Store with the interface's
// documented semantics; the other methods are left to the embedded nil
// interface and are not called by the logs API.
type memStore struct {
	store.Store
	mu     sync.Mutex
	nextID uint64
	rows   []store.LogRow
	scans  int // ScanLogs calls, to observe the summary cache
}

func newMemStore() *memStore { return &memStore{} }

func (m *memStore) Settle(_ context.Context, s store.Settlement) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.HoldID != "" {
		return store.ErrNotFound
	}
	m.nextID++
	row := *s.Row
	row.ID = m.nextID
	m.rows = append(m.rows, row)
	return nil
}

func (m *memStore) GetLog(_ context.Context, id uint64) (store.LogRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.rows {
		if r.ID == id {
			return r, nil
		}
	}
	return store.LogRow{}, store.ErrNotFound
}

func (m *memStore) KeyUsage(_ context.Context, keyID string) (money.Nano, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n money.Nano
	for _, r := range m.rows {
		if r.KeyID == keyID {
			n += r.Cost
		}
	}
	return n, nil
}

func matches(q store.LogQuery, r *store.LogRow) bool {
	if r.AccountID != q.AccountID || (q.KeyID != "" && r.KeyID != q.KeyID) {
		return false
	}
	if !q.From.IsZero() && r.CreatedAt.Before(q.From) {
		return false
	}
	if !q.To.IsZero() && !r.CreatedAt.Before(q.To) {
		return false
	}
	ut := r.UnitType
	if ut == "" {
		ut = "chat"
	}
	if (len(q.Models) > 0 && !slices.Contains(q.Models, r.Model)) ||
		(len(q.Statuses) > 0 && !slices.Contains(q.Statuses, r.Status)) ||
		(len(q.UnitTypes) > 0 && !slices.Contains(q.UnitTypes, ut)) ||
		(len(q.ErrorCodes) > 0 && !slices.Contains(q.ErrorCodes, r.ErrorCode)) {
		return false
	}
	if q.Ref != "" && r.TaskID != q.Ref && r.RequestID != q.Ref {
		return false
	}
	if q.After != nil {
		c := r.CreatedAt.Compare(q.After.CreatedAt)
		if c == 0 {
			c = cmpID(r.ID, q.After.ID)
		}
		if q.Asc && c <= 0 || !q.Asc && c >= 0 {
			return false
		}
	}
	return true
}

func cmpID(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *memStore) selectRows(q store.LogQuery) []store.LogRow {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.LogRow
	for i := range m.rows {
		if matches(q, &m.rows[i]) {
			out = append(out, m.rows[i])
		}
	}
	sort.Slice(out, func(i, j int) bool {
		c := out[i].CreatedAt.Compare(out[j].CreatedAt)
		if c == 0 {
			c = cmpID(out[i].ID, out[j].ID)
		}
		if q.Asc {
			return c < 0
		}
		return c > 0
	})
	return out
}

func (m *memStore) QueryLogs(_ context.Context, q store.LogQuery) ([]store.LogRow, error) {
	out := m.selectRows(q)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func (m *memStore) ScanLogs(_ context.Context, q store.LogQuery, fn func(store.LogRow) bool) error {
	m.mu.Lock()
	m.scans++
	m.mu.Unlock()
	for _, r := range m.selectRows(q) {
		if !fn(r) {
			break
		}
	}
	return nil
}

func (m *memStore) scanCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.scans
}
