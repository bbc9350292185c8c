package logsapi

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/store"
)

// exportColumns are the CSV columns, in the spec's order. cost_usd holds
// credits, as the spec says.
var exportColumns = []string{
	"id", "created_at", "key_name", "key_prefix", "model", "status",
	"error_code", "error_message", "input_tokens", "output_tokens",
	"cached_tokens", "unit_count", "unit_type", "cost_usd", "latency_ms",
	"request_id", "task_id", "submitted_at", "attempts_count", "result_urls",
	"result_expires_at",
}

// Export streams the CSV export of v's rows with the parameters of GET
// /v1/logs/export.csv (the console's log site links to it too), or the
// parameters' error.
//
// x-truncated must be known before the first byte, so the export reads the
// window twice: a counting pass that stops at ExportMaxRows+1 rows and keeps
// nothing, then the streaming pass that writes at most ExportMaxRows rows.
// Neither pass holds more than one row in memory.
func (h *Handler) Export(w http.ResponseWriter, r *http.Request, v Viewer) {
	p, aerr := parseExport(r.URL.Query(), v, h.now())
	if aerr != nil {
		h.fail(w, aerr)
		return
	}
	q := p.query(v)
	ctx := r.Context()
	n := 0
	err := h.st.ScanLogs(ctx, q, func(store.LogRow) bool {
		n++
		return n <= ExportMaxRows
	})
	if err != nil {
		h.fail(w, apierr.Internal(err))
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/csv; charset=utf-8")
	hdr.Set("Content-Disposition", `attachment; filename="logs.csv"`)
	if n > ExportMaxRows {
		hdr.Set("x-truncated", "true")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}

	cw := csv.NewWriter(w)
	_ = cw.Write(exportColumns)
	rec := make([]string, len(exportColumns))
	written := 0
	err = h.st.ScanLogs(ctx, q, func(row store.LogRow) bool {
		h.csvRecord(rec, &row)
		if cw.Write(rec) != nil {
			return false // the client went away
		}
		written++
		return written < ExportMaxRows
	})
	cw.Flush()
	if err != nil {
		// The status is sent; all that is left is to end the body early.
		h.log.Error("csv export scan failed", "error", err, "rows", written)
	}
}

// csvRecord fills rec with row's cells; nulls are empty cells.
func (h *Handler) csvRecord(rec []string, row *store.LogRow) {
	submitted := row.SubmittedAt
	if submitted.IsZero() {
		submitted = row.CreatedAt
	}
	rec[0] = strconv.FormatUint(row.ID, 10)
	rec[1] = formatTime(row.CreatedAt)
	rec[2] = cell(row.KeyName)
	rec[3] = cell(row.KeyPrefix)
	rec[4] = cell(row.Model)
	rec[5] = row.Status
	rec[6] = cell(h.red.Redact(row.ErrorCode))
	rec[7] = cell(h.red.Redact(row.ErrorMessage))
	rec[8] = strconv.FormatInt(row.InputTokens, 10)
	rec[9] = strconv.FormatInt(row.OutputTokens, 10)
	rec[10] = strconv.FormatInt(row.CachedTokens, 10)
	rec[11] = ""
	if row.UnitCount != nil {
		rec[11] = strconv.FormatInt(*row.UnitCount, 10)
	}
	rec[12] = row.UnitType
	rec[13] = row.Cost.String()
	rec[14] = strconv.FormatInt(row.LatencyMS, 10)
	rec[15] = cell(row.RequestID)
	rec[16] = cell(row.TaskID)
	rec[17] = formatTime(submitted)
	rec[18] = ""
	if row.AttemptsCount != nil {
		rec[18] = strconv.Itoa(*row.AttemptsCount)
	}
	rec[19] = cell(strings.Join(row.ResultURLs, "|"))
	rec[20] = ""
	if row.ResultExpiresAt != nil {
		rec[20] = formatTime(*row.ResultExpiresAt)
	}
}

// cell defuses spreadsheet formulas in free-text cells: a value starting
// with =, +, -, @, tab or CR gets a leading apostrophe (OWASP CSV injection).
func cell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}
