package store

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// LogTotal is what a summary needs of a row, or of several rows of one
// UTC day, model and status added together.
type LogTotal struct {
	// Rows is how many rows the total stands for; 0 means one.
	Rows         int64
	CreatedAt    time.Time // of the row; of a group, an instant of its day
	Model        string
	Status       string
	Cost         money.Nano
	InputTokens  int64
	OutputTokens int64
	CachedTokens int64
}

// LogTotaler is an optional Store capability: totals read from an index
// alone, without reading each row (summaries over a million rows), or
// added up by the database a UTC day, model and status at a time.
type LogTotaler interface {
	ScanLogTotals(ctx context.Context, q LogQuery, fn func(LogTotal) bool) error
}

// ScanTotals calls fn with the totals of the rows matching q: one per row
// in order, or per group of rows (LogTotal.Rows) in no order, from the
// backend's index or aggregation when it can, else from the rows.
func ScanTotals(ctx context.Context, st Store, q LogQuery, fn func(LogTotal) bool) error {
	if t, ok := st.(LogTotaler); ok {
		return t.ScanLogTotals(ctx, q, fn)
	}
	return st.ScanLogs(ctx, q, func(r LogRow) bool {
		return fn(LogTotal{
			CreatedAt: r.CreatedAt, Model: r.Model, Status: r.Status, Cost: r.Cost,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedTokens: r.CachedTokens,
		})
	})
}
