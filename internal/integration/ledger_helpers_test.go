package integration

import (
	"encoding/json"
	"net/url"
	"strconv"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// logsPage is a decoded GET /v1/logs answer.
type logsPage struct {
	Object     string           `json:"object"`
	Currency   string           `json:"currency"`
	Scope      string           `json:"scope"`
	PeriodFrom string           `json:"period_from"`
	PeriodTo   string           `json:"period_to"`
	Data       []map[string]any `json:"data"`
	HasMore    bool             `json:"has_more"`
	NextCursor *string          `json:"next_cursor"`
	InFlight   *[]any           `json:"in_flight"`
}

func (p logsPage) ids() []uint64 {
	out := make([]uint64, len(p.Data))
	for i, r := range p.Data {
		out[i] = uint64(r["id"].(float64))
	}
	return out
}

// readers hands out fresh account-scope keys of one account, so a test can
// make more logs requests than one key's 60 per minute.
type readers struct {
	g    *testgw.Gateway
	acct string
}

func (r readers) next() string {
	_, raw := r.g.Key(r.acct, map[string]any{"name": "reader", "logs_account_scope": true})
	return raw
}

// getLogs calls a logs endpoint with key and wants 200 and a list.
func getLogs(t *testing.T, g *testgw.Gateway, key, query string) logsPage {
	t.Helper()
	c := do(t, "GET", g.URL+"/v1/logs?"+query, bearer(key), "")
	if c.Status != 200 {
		t.Fatalf("GET /v1/logs?%s: %d %s", query, c.Status, c.Body)
	}
	var p logsPage
	if err := json.Unmarshal(c.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Object != "list" || p.Currency != "points" {
		t.Fatalf("list envelope: %s", c.Body)
	}
	return p
}

// wantErr checks a completions-style error.
func wantErr(t *testing.T, c call, status int, code, typ string) string {
	t.Helper()
	if c.Status != status {
		t.Fatalf("status %d, want %d: %s", c.Status, status, c.Body)
	}
	gotCode, gotType, msg := c.errorOf(t)
	if gotCode != code || gotType != typ {
		t.Fatalf("error %s/%s, want %s/%s: %s", gotCode, gotType, code, typ, c.Body)
	}
	return msg
}

func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

func idStr(id uint64) string { return strconv.FormatUint(id, 10) }
