package integration

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

type summaryJSON struct {
	Object       string           `json:"object"`
	Currency     string           `json:"currency"`
	Scope        string           `json:"scope"`
	PeriodFrom   string           `json:"period_from"`
	PeriodTo     string           `json:"period_to"`
	Total        totals           `json:"total"`
	StatusCounts map[string]int64 `json:"status_counts"`
	ByDay        []struct {
		Date string `json:"date"`
		totals
	} `json:"by_day"`
	ByModel []struct {
		Model       string `json:"model"`
		Requests    int64  `json:"requests"`
		Cost        string `json:"cost"`
		TotalTokens int64  `json:"total_tokens"`
	} `json:"by_model"`
}

type totals struct {
	Requests     int64  `json:"requests"`
	Cost         string `json:"cost"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	CachedTokens int64  `json:"cached_tokens"`
}

// TestLedgerSummary checks /v1/logs/summary against the rows the list
// returns for the same scope and window, and its refusals, on each store.
func TestLedgerSummary(t *testing.T) { onEachStore(t, testLedgerSummary) }

func testLedgerSummary(t *testing.T, g *testgw.Gateway) {
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	rd := readers{g, acct}
	_, key2 := g.Key(acct, nil)
	for i, p := range []string{"one", "two words here", "three [sim:error=500]", "four [sim:cached=3]"} {
		k := key
		if i == 3 {
			k = key2
		}
		do(t, "POST", g.URL+"/v1/chat/completions", bearer(k), chatBody("sim-chat", p, ""))
	}
	do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("nope", "unknown model", ""))

	reader := rd.next()
	for _, scope := range []string{"key", "account"} {
		t.Run("totals equal the sum of rows, scope "+scope, func(t *testing.T) {
			k := key
			if scope == "account" {
				k = reader
			}
			rows := getLogs(t, g, k, q("scope", scope, "period", "today", "limit", "200"))
			c := do(t, "GET", g.URL+"/v1/logs/summary?"+q("scope", scope, "period", "today"), bearer(k), "")
			if c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
			var s summaryJSON
			if err := json.Unmarshal(c.Body, &s); err != nil {
				t.Fatal(err)
			}
			if s.Object != "logs.summary" || s.Currency != "points" || s.Scope != scope {
				t.Fatalf("envelope %s", c.Body)
			}
			var want totals
			var cost money.Nano
			status := map[string]int64{}
			models := map[string]int64{}
			for _, r := range rows.Data {
				want.Requests++
				cost += checkCost(t, r) // each exactly what its usage costs
				want.InputTokens += int64(r["input_tokens"].(float64))
				want.OutputTokens += int64(r["output_tokens"].(float64))
				want.CachedTokens += int64(r["cached_tokens"].(float64))
				status[r["status"].(string)]++
				models[r["model"].(string)]++
			}
			want.Cost = cost.String()
			if want.Requests < 4 || s.Total != want {
				t.Fatalf("total %+v, rows sum to %+v", s.Total, want)
			}
			for _, st := range []string{"success", "error", "interrupted", "rejected"} {
				if s.StatusCounts[st] != status[st] {
					t.Errorf("status_counts.%s = %d, rows %d", st, s.StatusCounts[st], status[st])
				}
			}
			if len(s.ByDay) != 1 || s.ByDay[0].Date != time.Now().UTC().Format("2006-01-02") || s.ByDay[0].totals != want {
				t.Errorf("by_day %+v", s.ByDay)
			}
			var byModel int64
			for _, m := range s.ByModel {
				if m.Requests != models[m.Model] {
					t.Errorf("by_model %s: %d, rows %d", m.Model, m.Requests, models[m.Model])
				}
				byModel += m.Requests
			}
			if byModel != want.Requests {
				t.Errorf("by_model adds up to %d requests, want %d", byModel, want.Requests)
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		r := rd.next()
		tests := []struct{ desc, query string }{
			{"model is a row filter", "model=sim-chat"},
			{"status is a row filter", "status=success"},
			{"unit_type is a row filter", "unit_type=chat"},
			{"error_code is a row filter", "error_code=upstream_error"},
			{"ref is a row filter", "ref=req_1"},
			{"period=all", "period=all"},
			{"window over 365 days", "from=2024-01-01&to=2024-12-31"}, // 366 days: 2024 is a leap year, date-form to includes the 31st
			{"half a range", "from=2025-01-01"},
			{"key_id without account scope", "key_id=k1"},
		}
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				wantErr(t, do(t, "GET", g.URL+"/v1/logs/summary?"+tc.query, bearer(r), ""), 400, "invalid_request", "invalid_request_error")
			})
		}
		t.Run("exactly 365 days is accepted", func(t *testing.T) {
			c := do(t, "GET", g.URL+"/v1/logs/summary?from=2025-01-01&to=2025-12-31", bearer(r), "")
			if c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
			var s summaryJSON
			_ = json.Unmarshal(c.Body, &s)
			if len(s.ByDay) != 365 {
				t.Fatalf("%d days", len(s.ByDay))
			}
		})
		t.Run("empty row filters are no filters", func(t *testing.T) {
			if c := do(t, "GET", g.URL+"/v1/logs/summary?model=&status=", bearer(r), ""); c.Status != 200 {
				t.Fatalf("%d %s", c.Status, c.Body)
			}
		})
	})
}

// TestLedgerExportCSV checks the export's header, columns, values and that
// it is streamed (chunked, no Content-Length).
func TestLedgerExportCSV(t *testing.T) { onEachStore(t, testLedgerExportCSV) }

func testLedgerExportCSV(t *testing.T, g *testgw.Gateway) {
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	rd := readers{g, acct}
	for i := 0; i < 12; i++ {
		prompt := "export row " + strconv.Itoa(i)
		if i == 5 {
			prompt += " [sim:error=503]"
		}
		do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", prompt, ""))
	}
	r := rd.next()
	rows := getLogs(t, g, key, q("order", "asc", "limit", "200"))

	req, _ := http.NewRequest("GET", g.URL+"/v1/logs/export.csv?order=asc", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if resp.ContentLength != -1 || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("not streamed: Content-Length %d, Transfer-Encoding %v (body %d bytes)", resp.ContentLength, resp.TransferEncoding, len(body))
	}
	if resp.Header.Get("x-truncated") != "" || resp.Header.Get("x-ratelimit-limit") != "60" {
		t.Fatalf("headers %v", resp.Header)
	}
	recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	spec := "id,created_at,key_name,key_prefix,model,status,error_code,error_message,input_tokens,output_tokens,cached_tokens,unit_count,unit_type,cost_usd,latency_ms,request_id,task_id,submitted_at,attempts_count,result_urls,result_expires_at"
	if strings.Join(recs[0], ",") != spec {
		t.Fatalf("header %v", recs[0])
	}
	if len(recs)-1 != len(rows.Data) || len(rows.Data) != 12 {
		t.Fatalf("%d CSV rows, %d list rows", len(recs)-1, len(rows.Data))
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	for i, rec := range recs[1:] {
		row := rows.Data[i]
		checks := map[string]string{
			"id":           idStr(uint64(row["id"].(float64))),
			"created_at":   row["created_at"].(string),
			"key_prefix":   row["key_prefix"].(string),
			"model":        row["model"].(string),
			"status":       row["status"].(string),
			"input_tokens": strconv.FormatInt(int64(row["input_tokens"].(float64)), 10),
			"cost_usd":     row["cost"].(string),
			"request_id":   row["request_id"].(string),
			"unit_type":    "",
			"task_id":      "",
		}
		if ec, ok := row["error_code"].(string); ok {
			checks["error_code"] = ec
		} else {
			checks["error_code"] = ""
		}
		for name, want := range checks {
			if rec[col[name]] != want {
				t.Errorf("row %d %s = %q, want %q", i, name, rec[col[name]], want)
			}
		}
	}
	t.Run("cursor is refused", func(t *testing.T) {
		wantErr(t, do(t, "GET", g.URL+"/v1/logs/export.csv?cursor=abc", bearer(r), ""), 400, "invalid_request", "invalid_request_error")
	})
	t.Run("filters and scope apply", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/logs/export.csv?scope=account&status=error", bearer(r), "")
		recs, err := csv.NewReader(bytes.NewReader(c.Body)).ReadAll()
		if err != nil || c.Status != 200 || len(recs) != 2 || recs[1][col["status"]] != "error" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		wantErr(t, do(t, "GET", g.URL+"/v1/logs/export.csv?status=failed", bearer(r), ""), 400, "invalid_request", "invalid_request_error")
		wantErr(t, do(t, "GET", g.URL+"/v1/logs/export.csv?scope=account", bearer(key), ""), 403, "permission_denied", "permission_error")
	})
}
