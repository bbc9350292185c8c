package store

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Log row statuses.
const (
	StatusSuccess     = "success"
	StatusError       = "error"
	StatusInterrupted = "interrupted"
	StatusRejected    = "rejected"
)

// Attempt is a failed upstream attempt folded into the served request's row.
type Attempt struct {
	Seq          int       `json:"seq"`
	CreatedAt    time.Time `json:"created_at"`
	LatencyMS    int64     `json:"latency_ms"`
	ErrorCode    string    `json:"error_code,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
}

// KV is one line of the technical view.
type KV struct {
	K string `json:"k"`
	V string `json:"v"`
}

// TechView is the technical detail of a row (GET /v1/logs/{id}).
type TechView struct {
	Kind        string `json:"kind,omitempty"` // video, image, music, audio or ""
	Request     []KV   `json:"request"`
	Upstream    []KV   `json:"upstream"`
	Gateway     []KV   `json:"gateway"`
	RequestNote string `json:"request_note,omitempty"`
}

// LogRow is one usage-log row. Empty strings stand for the spec's nulls.
type LogRow struct {
	ID              uint64     `json:"id"` // assigned by the store, never reused
	AccountID       string     `json:"account_id"`
	CreatedAt       time.Time  `json:"created_at"`
	SubmittedAt     time.Time  `json:"submitted_at"`
	KeyID           string     `json:"key_id"`
	KeyName         string     `json:"key_name"`
	KeyPrefix       string     `json:"key_prefix"`
	Model           string     `json:"model"`
	Status          string     `json:"status"`
	ErrorCode       string     `json:"error_code,omitempty"`
	ErrorMessage    string     `json:"error_message,omitempty"`
	InputTokens     int64      `json:"input_tokens"`
	OutputTokens    int64      `json:"output_tokens"`
	CachedTokens    int64      `json:"cached_tokens"`
	UnitCount       *int64     `json:"unit_count,omitempty"`
	UnitType        string     `json:"unit_type,omitempty"`
	Cost            money.Nano `json:"cost"`
	LatencyMS       int64      `json:"latency_ms"`
	RequestID       string     `json:"request_id"`
	TaskID          string     `json:"task_id,omitempty"`
	ResultURLs      []string   `json:"result_urls,omitempty"`
	ResultExpiresAt *time.Time `json:"result_expires_at,omitempty"`
	AttemptsCount   *int       `json:"attempts_count,omitempty"`
	Attempts        []Attempt  `json:"attempts,omitempty"`
	Tech            *TechView  `json:"tech,omitempty"`
}

// LogQuery selects log rows of one account. Zero values mean "no filter".
type LogQuery struct {
	AccountID  string
	KeyID      string    // only this key's rows
	From, To   time.Time // created_at >= From and created_at < To; zero = open
	Models     []string  // any of
	Statuses   []string  // any of
	UnitTypes  []string  // any of; "chat" matches rows with an empty UnitType
	ErrorCodes []string  // any of
	Ref        string    // exact task_id or request_id
	Asc        bool      // order by (created_at, id) ascending; default descending
	// After continues a page: rows strictly after this (created_at, id)
	// position in the query's order. Nil starts at the window's edge.
	After *LogPosition
	Limit int // rows to return; the backend may cap it
}

// LogPosition is a row's place in (created_at, id) order, used by cursors.
type LogPosition struct {
	CreatedAt time.Time
	ID        uint64
}

// Logs is the role of the usage log (rows are written by Settle).
type Logs interface {
	GetLog(ctx context.Context, id uint64) (LogRow, error)
	QueryLogs(ctx context.Context, q LogQuery) ([]LogRow, error)
	// ScanLogs calls fn for each row matching q (Limit ignored) in order,
	// without holding them all in memory; fn returning false stops the scan.
	ScanLogs(ctx context.Context, q LogQuery, fn func(LogRow) bool) error
}
