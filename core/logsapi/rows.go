package logsapi

import (
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// Row is a usage-log row as the API answers it (and the console shows
// it): redacted, pointers for the spec's nulls.
type Row struct {
	Object          string     `json:"object"`
	ID              uint64     `json:"id"`
	CreatedAt       string     `json:"created_at"`
	SubmittedAt     string     `json:"submitted_at"`
	KeyID           string     `json:"key_id"`
	KeyName         string     `json:"key_name"`
	KeyPrefix       string     `json:"key_prefix"`
	Model           string     `json:"model"`
	Status          string     `json:"status"`
	ErrorCode       *string    `json:"error_code"`
	ErrorMessage    *string    `json:"error_message"`
	InputTokens     int64      `json:"input_tokens"`
	OutputTokens    int64      `json:"output_tokens"`
	CachedTokens    int64      `json:"cached_tokens"`
	UnitCount       *int64     `json:"unit_count"`
	UnitType        *string    `json:"unit_type"`
	Cost            money.Nano `json:"cost"`
	LatencyMS       int64      `json:"latency_ms"`
	RequestID       string     `json:"request_id"`
	TaskID          *string    `json:"task_id"`
	ResultURLs      []string   `json:"result_urls"`
	ResultExpiresAt *string    `json:"result_expires_at"`
	AttemptsCount   *int       `json:"attempts_count"`
	Attempts        *[]Attempt `json:"attempts,omitempty"`
}

// Attempt is a failed upstream attempt folded into a row.
type Attempt struct {
	Seq          int     `json:"seq"`
	CreatedAt    string  `json:"created_at"`
	LatencyMS    int64   `json:"latency_ms"`
	ErrorCode    *string `json:"error_code"`
	ErrorMessage *string `json:"error_message"`
}

// formatTime renders an instant as RFC 3339 in UTC, with the fraction of a
// second when there is one, so a period_to passed back as from loses nothing.
func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// redactedNullable redacts s; empty stays null.
func redactedNullable(r *redact.Redactor, s string) *string {
	if s == "" {
		return nil
	}
	s = r.Redact(s)
	return &s
}

func toRow(row *store.LogRow, withAttempts bool, red *redact.Redactor) Row {
	submitted := row.SubmittedAt
	if submitted.IsZero() {
		submitted = row.CreatedAt
	}
	out := Row{
		Object:        "log",
		ID:            row.ID,
		CreatedAt:     formatTime(row.CreatedAt),
		SubmittedAt:   formatTime(submitted),
		KeyID:         row.KeyID,
		KeyName:       row.KeyName,
		KeyPrefix:     row.KeyPrefix,
		Model:         row.Model,
		Status:        row.Status,
		ErrorCode:     redactedNullable(red, row.ErrorCode),
		ErrorMessage:  redactedNullable(red, row.ErrorMessage),
		InputTokens:   row.InputTokens,
		OutputTokens:  row.OutputTokens,
		CachedTokens:  row.CachedTokens,
		UnitCount:     row.UnitCount,
		UnitType:      nullable(row.UnitType),
		Cost:          row.Cost,
		LatencyMS:     row.LatencyMS,
		RequestID:     row.RequestID,
		TaskID:        nullable(row.TaskID),
		ResultURLs:    row.ResultURLs,
		AttemptsCount: row.AttemptsCount,
	}
	if out.ResultURLs == nil {
		out.ResultURLs = []string{}
	}
	if row.ResultExpiresAt != nil {
		s := formatTime(*row.ResultExpiresAt)
		out.ResultExpiresAt = &s
	}
	if withAttempts {
		atts := make([]Attempt, len(row.Attempts))
		for i, a := range row.Attempts {
			atts[i] = Attempt{
				Seq:          a.Seq,
				CreatedAt:    formatTime(a.CreatedAt),
				LatencyMS:    a.LatencyMS,
				ErrorCode:    redactedNullable(red, a.ErrorCode),
				ErrorMessage: redactedNullable(red, a.ErrorMessage),
			}
		}
		out.Attempts = &atts
	}
	return out
}

// Tech is a row's technical view (GET /v1/logs/{id}).
type Tech struct {
	ID          uint64     `json:"id"`
	Kind        *string    `json:"kind"`
	Request     []store.KV `json:"request"`
	Upstream    []store.KV `json:"upstream"`
	Gateway     []store.KV `json:"gateway"`
	RequestNote *string    `json:"request_note"`
}

// toTech renders row.Tech; its values go through the redactor like the
// error fields, since the upstream group names channels and addresses.
func toTech(row *store.LogRow, red *redact.Redactor) Tech {
	out := Tech{ID: row.ID, Request: []store.KV{}, Upstream: []store.KV{}, Gateway: []store.KV{}}
	t := row.Tech
	if t == nil {
		return out
	}
	if vendor.ValidLogKind(t.Kind) { // a kind outside the vocabulary is null
		out.Kind = &t.Kind
	}
	out.Request = redactKVs(t.Request, red)
	out.Upstream = redactKVs(t.Upstream, red)
	out.Gateway = redactKVs(t.Gateway, red)
	out.RequestNote = redactedNullable(red, t.RequestNote)
	return out
}

func redactKVs(in []store.KV, red *redact.Redactor) []store.KV {
	out := make([]store.KV, len(in))
	for i, kv := range in {
		out[i] = store.KV{K: kv.K, V: red.Redact(kv.V)}
	}
	return out
}
