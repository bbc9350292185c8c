package logsapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/store"
)

// clock is a settable time source; with a non-zero step every reading
// also advances it, so concurrent writers and readers see time move.
type clock struct {
	ns   atomic.Int64
	step time.Duration
}

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *clock) Now() time.Time {
	return time.Unix(0, c.ns.Add(int64(c.step))).UTC()
}
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

var (
	keyOwn      = store.Key{ID: "k1", AccountID: "a1", Name: "own", Prefix: "sk-tollgate-11", Kind: store.KindConsole}
	keyOther    = store.Key{ID: "k2", AccountID: "a1", Name: "other", Prefix: "sk-tollgate-22", Kind: store.KindConsole}
	keyToggled  = store.Key{ID: "k3", AccountID: "a1", Name: "toggled", Kind: store.KindConsole, LogsAccountScope: true}
	keyEmployee = store.Key{ID: "k4", AccountID: "a1", Kind: store.KindEmployee, LogsAccountScope: true}
	keyDesktop  = store.Key{ID: "k5", AccountID: "a1", Kind: store.KindDesktop, LogsAccountScope: true}
	keyAgent    = store.Key{ID: "k6", AccountID: "a1", Kind: store.KindAgent, LogsAccountScope: true}
	keyForeign  = store.Key{ID: "k9", AccountID: "a2", Name: "foreign", Kind: store.KindConsole, LogsAccountScope: true}
)

// now of the fixtures; rows are placed relative to it.
var fixNow = time.Date(2025, 6, 18, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	st    *countingStore
	clock *clock
	h     *Handler
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{t: t, st: newTestStore(t), clock: newClock(fixNow)}
	f.h = New(f.st, ratelimit.NewPerKey(1_000_000, time.Minute, f.clock.Now), f.clock.Now, nil, opts...)
	return f
}

// seed writes a row as settlement does for a request without a hold.
func (f *fixture) seed(key store.Key, ago time.Duration, mod func(*store.LogRow)) uint64 {
	f.t.Helper()
	created := fixNow.Add(-ago)
	row := store.LogRow{
		AccountID: key.AccountID, KeyID: key.ID, KeyName: key.Name, KeyPrefix: key.Prefix,
		CreatedAt: created, SubmittedAt: created.Add(-time.Second),
		Model: "gpt-4o-mini", Status: store.StatusSuccess,
		InputTokens: 10, OutputTokens: 20, Cost: money.MustParse("0.5"), LatencyMS: 900,
		RequestID: "req-" + strconv.FormatInt(created.UnixNano(), 36),
	}
	if mod != nil {
		mod(&row)
	}
	if err := f.st.Settle(context.Background(), store.Settlement{Row: &row}); err != nil {
		f.t.Fatal(err)
	}
	return row.ID // Settle sets the id the store gave the row
}

func (f *fixture) get(key store.Key, target string) *httptest.ResponseRecorder {
	f.t.Helper()
	w := httptest.NewRecorder()
	f.h.Serve(w, httptest.NewRequest(http.MethodGet, target, nil), key)
	return w
}

type listResp struct {
	Object     string            `json:"object"`
	Currency   string            `json:"currency"`
	Scope      string            `json:"scope"`
	PeriodFrom string            `json:"period_from"`
	PeriodTo   string            `json:"period_to"`
	Data       []json.RawMessage `json:"data"`
	HasMore    bool              `json:"has_more"`
	NextCursor *string           `json:"next_cursor"`
}

func (f *fixture) list(key store.Key, target string) (listResp, []map[string]any) {
	f.t.Helper()
	w := f.get(key, target)
	if w.Code != 200 {
		f.t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
	}
	var r listResp
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		f.t.Fatal(err)
	}
	rows := make([]map[string]any, len(r.Data))
	for i, d := range r.Data {
		if err := json.Unmarshal(d, &rows[i]); err != nil {
			f.t.Fatal(err)
		}
	}
	return r, rows
}

func ids(rows []map[string]any) []uint64 {
	out := make([]uint64, len(rows))
	for i, r := range rows {
		out[i] = uint64(r["id"].(float64))
	}
	return out
}

func sameIDs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type errBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

func expectError(t *testing.T, w *httptest.ResponseRecorder, status int, code, typ string) errBody {
	t.Helper()
	var b errBody
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if b.Error.Code != code || b.Error.Type != typ {
		t.Fatalf("error %+v, want code %s type %s", b.Error, code, typ)
	}
	return b
}

func TestScopeKeySeesOnlyOwnRows(t *testing.T) {
	f := newFixture(t)
	own := f.seed(keyOwn, time.Hour, nil)
	f.seed(keyOther, time.Hour, nil)
	f.seed(keyForeign, time.Hour, nil)
	r, rows := f.list(keyOwn, "/v1/logs")
	if r.Scope != "key" || !sameIDs(ids(rows), []uint64{own}) {
		t.Fatalf("scope %s ids %v", r.Scope, ids(rows))
	}
}

func TestScopeAccount(t *testing.T) {
	f := newFixture(t)
	a := f.seed(keyOwn, 3*time.Hour, nil)
	b := f.seed(keyOther, 2*time.Hour, nil)
	f.seed(keyForeign, time.Hour, nil)
	tests := []struct {
		desc  string
		query string
		want  []uint64
	}{
		{desc: "whole account, not other accounts", query: "scope=account", want: []uint64{b, a}},
		{desc: "key_id narrows to one key", query: "scope=account&key_id=k1", want: []uint64{a}},
		{desc: "key_id of another account finds nothing", query: "scope=account&key_id=k9", want: []uint64{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r, rows := f.list(keyToggled, "/v1/logs?"+tc.query)
			if r.Scope != "account" || !sameIDs(ids(rows), tc.want) {
				t.Fatalf("scope %s ids %v, want %v", r.Scope, ids(rows), tc.want)
			}
		})
	}
}

func TestAccountScopePermissions(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		desc string
		key  store.Key
	}{
		{desc: "without the toggle", key: keyOwn},
		{desc: "employee key with the toggle", key: keyEmployee},
		{desc: "desktop key with the toggle", key: keyDesktop},
	}
	for _, tc := range tests {
		for _, path := range []string{"/v1/logs", "/v1/logs/summary", "/v1/logs/export.csv", "/v1/logs/1"} {
			t.Run(tc.desc+" "+path, func(t *testing.T) {
				expectError(t, f.get(tc.key, path+"?scope=account"), 403, "permission_denied", "permission_error")
			})
		}
	}
}

func TestAgentKeysForbiddenOnAllLogsEndpoints(t *testing.T) {
	f := newFixture(t)
	id := f.seed(keyAgent, time.Hour, nil)
	for _, path := range []string{"/v1/logs", "/v1/logs/summary", "/v1/logs/export.csv", "/v1/logs/" + strconv.FormatUint(id, 10)} {
		t.Run(path, func(t *testing.T) {
			w := f.get(keyAgent, path)
			expectError(t, w, 403, "permission_denied", "permission_error")
			if w.Header().Get("x-ratelimit-limit") == "" {
				t.Error("no rate-limit headers on the 403")
			}
		})
	}
}

func TestKeyIDOnlyWithAccountScope(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/v1/logs", "/v1/logs/summary", "/v1/logs/export.csv"} {
		t.Run(path, func(t *testing.T) {
			expectError(t, f.get(keyToggled, path+"?key_id=k1"), 400, "invalid_request", "invalid_request_error")
		})
	}
}

func TestPeriods(t *testing.T) {
	f := newFixture(t)
	d40 := f.seed(keyOwn, 40*24*time.Hour, nil)
	d20 := f.seed(keyOwn, 20*24*time.Hour, nil)
	d3 := f.seed(keyOwn, 3*24*time.Hour, nil)
	h2 := f.seed(keyOwn, 2*time.Hour, nil)
	tests := []struct {
		desc     string
		query    string
		want     []uint64
		wantFrom string
	}{
		{desc: "default 30d", query: "", want: []uint64{h2, d3, d20}, wantFrom: "2025-05-19T12:00:00Z"},
		{desc: "7d", query: "period=7d", want: []uint64{h2, d3}, wantFrom: "2025-06-11T12:00:00Z"},
		{desc: "today", query: "period=today", want: []uint64{h2}, wantFrom: "2025-06-18T00:00:00Z"},
		{desc: "this_month", query: "period=this_month", want: []uint64{h2, d3}, wantFrom: "2025-06-01T00:00:00Z"},
		{desc: "all", query: "period=all", want: []uint64{h2, d3, d20, d40}, wantFrom: "1970-01-01T00:00:00Z"},
		{desc: "ignored when from and to given", query: "period=today&from=2025-05-01&to=2025-05-31", want: []uint64{d20, d40}, wantFrom: "2025-05-01T00:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r, rows := f.list(keyOwn, "/v1/logs?"+tc.query)
			if !sameIDs(ids(rows), tc.want) {
				t.Fatalf("ids %v, want %v", ids(rows), tc.want)
			}
			if r.PeriodFrom != tc.wantFrom {
				t.Errorf("period_from %s, want %s", r.PeriodFrom, tc.wantFrom)
			}
			if tc.query == "" && r.PeriodTo != "2025-06-18T12:00:00Z" {
				t.Errorf("period_to %s", r.PeriodTo)
			}
		})
	}
}

func TestWindowBounds(t *testing.T) {
	f := newFixture(t)
	// fixNow is 2025-06-18T12:00Z.
	atTo := f.seed(keyOwn, 2*time.Hour, nil)               // 10:00:00 exactly
	before := f.seed(keyOwn, 2*time.Hour+time.Second, nil) // 09:59:59
	lateDay := f.seed(keyOwn, 12*time.Hour-time.Second, nil)
	tests := []struct {
		desc, query string
		want        []uint64
	}{
		{desc: "timestamp-form to excludes the instant", query: "from=2025-06-18T00:00:00Z&to=2025-06-18T10:00:00Z", want: []uint64{before, lateDay}},
		{desc: "timestamp-form from includes the instant", query: "from=2025-06-18T10:00:00Z&to=2025-06-18T11:00:00Z", want: []uint64{atTo}},
		{desc: "date-form to includes the whole day", query: "from=2025-06-18&to=2025-06-18", want: []uint64{atTo, before, lateDay}},
		{desc: "mixed forms", query: "from=2025-06-18T09:00:00Z&to=2025-06-18", want: []uint64{atTo, before}},
		{desc: "date-form bounds are UTC days", query: "from=2025-06-17&to=2025-06-17", want: []uint64{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, rows := f.list(keyOwn, "/v1/logs?"+tc.query)
			if !sameIDs(ids(rows), tc.want) {
				t.Fatalf("ids %v, want %v", ids(rows), tc.want)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	f := newFixture(t)
	chat := f.seed(keyOwn, 5*time.Hour, nil)
	img := f.seed(keyOwn, 4*time.Hour, func(r *store.LogRow) {
		r.Model, r.UnitType, r.TaskID = "img-1", "image", "task-abc"
		n := int64(2)
		r.UnitCount = &n
	})
	failed := f.seed(keyOwn, 3*time.Hour, func(r *store.LogRow) {
		r.Status, r.ErrorCode, r.RequestID = store.StatusError, "upstream_error", "req-xyz"
	})
	rejected := f.seed(keyOwn, 2*time.Hour, func(r *store.LogRow) {
		r.Status, r.ErrorCode, r.Cost = store.StatusRejected, "quota_exceeded", 0
	})
	tests := []struct {
		desc, query string
		want        []uint64
	}{
		{desc: "model", query: "model=img-1", want: []uint64{img}},
		{desc: "model list", query: "model=img-1,gpt-4o-mini", want: []uint64{rejected, failed, img, chat}},
		{desc: "status list", query: "status=error,rejected", want: []uint64{rejected, failed}},
		{desc: "unit_type chat is token-billed rows", query: "unit_type=chat", want: []uint64{rejected, failed, chat}},
		{desc: "unit_type image", query: "unit_type=image", want: []uint64{img}},
		{desc: "error_code", query: "error_code=quota_exceeded", want: []uint64{rejected}},
		{desc: "ref by task id", query: "ref=task-abc", want: []uint64{img}},
		{desc: "ref by request id", query: "ref=req-xyz", want: []uint64{failed}},
		{desc: "empty values are no filter", query: "model=&status=&unit_type=&error_code=&ref=", want: []uint64{rejected, failed, img, chat}},
		{desc: "order asc", query: "order=asc", want: []uint64{chat, img, failed, rejected}},
		{desc: "limit", query: "limit=2", want: []uint64{rejected, failed}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, rows := f.list(keyOwn, "/v1/logs?"+tc.query)
			if !sameIDs(ids(rows), tc.want) {
				t.Fatalf("ids %v, want %v", ids(rows), tc.want)
			}
		})
	}
}

// TestErrorsRule8 covers each 400 of the spec's errors rule 8, plus the
// other parameter errors, on the endpoints they apply to.
func TestErrorsRule8(t *testing.T) {
	f := newFixture(t)
	asc := cursor{V: cursorVersion, From: fixNow.Add(-time.Hour).UnixNano(), To: fixNow.UnixNano(), Asc: true, At: fixNow.UnixNano(), ID: 1}.encode()
	desc := cursor{V: cursorVersion, From: fixNow.Add(-time.Hour).UnixNano(), To: fixNow.UnixNano(), At: fixNow.UnixNano(), ID: 1}.encode()
	tests := []struct {
		desc, target string
	}{
		{desc: "misspelled status", target: "/v1/logs?status=failed"},
		{desc: "misspelled status on export", target: "/v1/logs/export.csv?status=ok"},
		{desc: "misspelled unit_type", target: "/v1/logs?unit_type=images"},
		{desc: "half range from", target: "/v1/logs?from=2025-06-01"},
		{desc: "half range to", target: "/v1/logs?to=2025-06-01"},
		{desc: "half range on summary", target: "/v1/logs/summary?to=2025-06-01"},
		{desc: "half range on export", target: "/v1/logs/export.csv?from=2025-06-01"},
		{desc: "asc cursor on a desc request", target: "/v1/logs?cursor=" + asc},
		{desc: "desc cursor on an asc request", target: "/v1/logs?order=asc&cursor=" + desc},
		{desc: "tampered cursor", target: "/v1/logs?order=asc&cursor=" + flip(asc, 5)},
		{desc: "unknown include token", target: "/v1/logs?include=everything"},
		{desc: "model on summary", target: "/v1/logs/summary?model=gpt-4o-mini"},
		{desc: "status on summary", target: "/v1/logs/summary?status=success"},
		{desc: "unit_type on summary", target: "/v1/logs/summary?unit_type=chat"},
		{desc: "error_code on summary", target: "/v1/logs/summary?error_code=x"},
		{desc: "ref on summary", target: "/v1/logs/summary?ref=req-1"},
		{desc: "summary window over 365 days", target: "/v1/logs/summary?from=2024-01-01&to=2025-01-01"},
		{desc: "summary period all", target: "/v1/logs/summary?period=all"},
		{desc: "limit 0", target: "/v1/logs?limit=0"},
		{desc: "limit 201", target: "/v1/logs?limit=201"},
		{desc: "bad order", target: "/v1/logs?order=newest"},
		{desc: "bad period", target: "/v1/logs?period=1y"},
		{desc: "key_id without account scope", target: "/v1/logs?key_id=k2"},
		{desc: "cursor on export", target: "/v1/logs/export.csv?order=asc&cursor=" + asc},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := expectError(t, f.get(keyOwn, tc.target), 400, "invalid_request", "invalid_request_error")
			if b.Error.Message == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestCursorPagination(t *testing.T) {
	f := newFixture(t)
	var all []uint64 // newest first
	for i := 7; i >= 1; i-- {
		all = append([]uint64{f.seed(keyOwn, time.Duration(i)*time.Minute, nil)}, all...)
	}
	// Two rows share a created_at: the id breaks the tie.
	same := f.seed(keyOwn, 30*time.Second, nil)
	same2 := f.seed(keyOwn, 30*time.Second, nil)
	all = append([]uint64{same2, same}, all...)

	for _, order := range []string{"desc", "asc"} {
		t.Run(order, func(t *testing.T) {
			want := all
			if order == "asc" {
				want = make([]uint64, len(all))
				for i, id := range all {
					want[len(all)-1-i] = id
				}
			}
			var got []uint64
			target := "/v1/logs?limit=4&order=" + order
			var periodTo string
			pages := 0
			for {
				r, rows := f.list(keyOwn, target)
				pages++
				if periodTo == "" {
					periodTo = r.PeriodTo
					// Written after page 1: outside the frozen window.
					f.clock.Advance(time.Second)
				} else if r.PeriodTo != periodTo {
					t.Fatalf("window moved: %s then %s", periodTo, r.PeriodTo)
				}
				got = append(got, ids(rows)...)
				if !r.HasMore {
					if r.NextCursor != nil {
						t.Fatal("next_cursor set on the last page")
					}
					break
				}
				target = "/v1/logs?limit=4&order=" + order + "&cursor=" + *r.NextCursor
			}
			if pages != 3 || !sameIDs(got, want) {
				t.Fatalf("pages %d ids %v, want %v", pages, got, want)
			}
		})
	}
	t.Run("the frozen window hides rows written later", func(t *testing.T) {
		r, _ := f.list(keyOwn, "/v1/logs?limit=2")
		late := f.seed(keyOwn, -time.Minute, nil) // after page 1's to
		f.clock.Advance(2 * time.Minute)
		target := "/v1/logs?limit=200&cursor=" + *r.NextCursor
		_, rows := f.list(keyOwn, target)
		for _, id := range ids(rows) {
			if id == late {
				t.Fatal("page 2 shows a row outside page 1's window")
			}
		}
	})
}

func TestIncludeAttemptsAndInFlight(t *testing.T) {
	f := newFixture(t)
	n := 2
	f.seed(keyOwn, time.Hour, func(r *store.LogRow) {
		r.AttemptsCount = &n
		r.Attempts = []store.Attempt{{Seq: 1, CreatedAt: fixNow.Add(-time.Hour - time.Second), LatencyMS: 30,
			ErrorCode: "upstream_error", ErrorMessage: "https://upstream.example/v1 returned 502"}}
	})
	f.seed(keyOwn, 2*time.Hour, nil)
	tests := []struct {
		desc         string
		query        string
		wantAttempts bool
		wantInFlight bool
	}{
		{desc: "default includes attempts", query: "", wantAttempts: true},
		{desc: "none", query: "include=none", wantAttempts: false},
		{desc: "in_flight on the first page", query: "include=in_flight", wantInFlight: true},
		{desc: "both", query: "include=attempts,in_flight", wantAttempts: true, wantInFlight: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := f.get(keyOwn, "/v1/logs?limit=1&"+tc.query)
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			inFlight, has := raw["in_flight"]
			if has != tc.wantInFlight || (has && string(inFlight) != "[]") {
				t.Fatalf("in_flight %q present=%v", inFlight, has)
			}
			var rows []map[string]json.RawMessage
			if err := json.Unmarshal(raw["data"], &rows); err != nil {
				t.Fatal(err)
			}
			att, has := rows[0]["attempts"]
			if has != tc.wantAttempts {
				t.Fatalf("attempts present=%v", has)
			}
			if has && !strings.Contains(string(att), `"error_message":"[url] returned 502"`) {
				t.Fatalf("attempts %s", att)
			}
			// The later page omits in_flight entirely; rows without attempts get [].
			var page listResp
			_ = json.Unmarshal(w.Body.Bytes(), &page)
			w2 := f.get(keyOwn, "/v1/logs?limit=1&"+tc.query+"&cursor="+*page.NextCursor)
			if strings.Contains(w2.Body.String(), "in_flight") {
				t.Fatalf("in_flight on a later page: %s", w2.Body)
			}
			if tc.wantAttempts && !strings.Contains(w2.Body.String(), `"attempts":[]`) {
				t.Fatalf("row without attempts: %s", w2.Body)
			}
		})
	}
}

func TestRowJSON(t *testing.T) {
	f := newFixture(t, WithChannelNames([]string{"azure-east"}))
	expires := fixNow.Add(24 * time.Hour)
	n, cnt := int64(3), 1
	f.seed(keyOwn, time.Hour, func(r *store.LogRow) {
		r.UnitType, r.UnitCount, r.TaskID = "image", &n, "task-1"
		r.ResultURLs, r.ResultExpiresAt, r.AttemptsCount = []string{"https://cdn/a.png", "https://cdn/b.png"}, &expires, &cnt
		r.Status, r.ErrorCode = store.StatusError, "upstream_error"
		r.ErrorMessage = "azure-east said 401 for key sk-abcdef1234567890 at https://x.example/v1"
		r.Cost = money.MustParse("0.075")
	})
	f.seed(keyOwn, 2*time.Hour, nil)
	_, rows := f.list(keyOwn, "/v1/logs")
	full, chat := rows[0], rows[1]
	want := map[string]any{
		"object": "log", "key_id": "k1", "key_name": "own", "key_prefix": "sk-tollgate-11",
		"model": "gpt-4o-mini", "status": "error", "error_code": "upstream_error",
		"error_message": "[channel] said 401 for key sk-[redacted] at [url]",
		"unit_count":    3.0, "unit_type": "image", "cost": "0.075", "latency_ms": 900.0,
		"task_id": "task-1", "attempts_count": 1.0,
		"created_at": "2025-06-18T11:00:00Z", "submitted_at": "2025-06-18T10:59:59Z",
		"result_expires_at": "2025-06-19T12:00:00Z", "input_tokens": 10.0, "output_tokens": 20.0, "cached_tokens": 0.0,
	}
	for k, v := range want {
		if full[k] != v {
			t.Errorf("%s = %#v, want %#v", k, full[k], v)
		}
	}
	if urls, _ := full["result_urls"].([]any); len(urls) != 2 {
		t.Errorf("result_urls %v", full["result_urls"])
	}
	for _, k := range []string{"error_code", "error_message", "unit_count", "unit_type", "task_id", "result_expires_at", "attempts_count"} {
		if v, ok := chat[k]; !ok || v != nil {
			t.Errorf("chat row %s = %#v, want null", k, v)
		}
	}
	if urls, ok := chat["result_urls"].([]any); !ok || len(urls) != 0 {
		t.Errorf("chat row result_urls %#v, want []", chat["result_urls"])
	}
}

func TestGetLogTechView(t *testing.T) {
	f := newFixture(t, WithChannelNames([]string{"openai-main"}))
	own := f.seed(keyOwn, time.Hour, func(r *store.LogRow) {
		r.Tech = &store.TechView{
			Kind:     "image",
			Request:  []store.KV{{K: "size", V: "1024x1024"}},
			Upstream: []store.KV{{K: "channel", V: "openai-main"}},
		}
	})
	bare := f.seed(keyOwn, time.Hour, nil)
	other := f.seed(keyOther, time.Hour, nil)
	strange := f.seed(keyOwn, time.Hour, func(r *store.LogRow) { r.Tech = &store.TechView{Kind: "avatar"} })
	foreign := f.seed(keyForeign, time.Hour, nil)
	path := func(id uint64) string { return "/v1/logs/" + strconv.FormatUint(id, 10) }

	t.Run("own row", func(t *testing.T) {
		w := f.get(keyOwn, path(own))
		want := `{"id":1,"kind":"image","request":[{"k":"size","v":"1024x1024"}],"upstream":[{"k":"channel","v":"[channel]"}],"gateway":[],"request_note":null}`
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("row without technical detail", func(t *testing.T) {
		w := f.get(keyOwn, path(bare))
		want := `{"id":2,"kind":null,"request":[],"upstream":[],"gateway":[],"request_note":null}`
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("a kind outside the spec's vocabulary is null", func(t *testing.T) {
		w := f.get(keyOwn, path(strange))
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"kind":null`) {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	notFound := []struct {
		desc   string
		key    store.Key
		target string
	}{
		{desc: "another key's row without account scope", key: keyOwn, target: path(other)},
		{desc: "another key's row, toggled key without scope=account", key: keyToggled, target: path(other)},
		{desc: "another account's row even with account scope", key: keyToggled, target: path(foreign) + "?scope=account"},
		{desc: "key_id excludes the row", key: keyToggled, target: path(other) + "?scope=account&key_id=k1"},
		{desc: "missing id", key: keyOwn, target: path(999)},
		{desc: "not a number", key: keyOwn, target: "/v1/logs/abc"},
	}
	for _, tc := range notFound {
		t.Run(tc.desc, func(t *testing.T) {
			expectError(t, f.get(tc.key, tc.target), 404, "log_not_found", "invalid_request_error")
		})
	}
	t.Run("another key's row with account scope", func(t *testing.T) {
		if w := f.get(keyToggled, path(other)+"?scope=account"); w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
}

func TestSummary(t *testing.T) {
	f := newFixture(t)
	f.seed(keyOwn, 26*time.Hour, func(r *store.LogRow) { r.Model, r.Cost, r.CachedTokens = "m-big", money.MustParse("2"), 4 })
	f.seed(keyOwn, 2*time.Hour, nil)
	f.seed(keyOwn, time.Hour, func(r *store.LogRow) { r.Status, r.Cost = store.StatusRejected, 0 })
	f.seed(keyOwn, time.Hour, func(r *store.LogRow) { r.Status = store.StatusInterrupted })
	f.seed(keyOther, time.Hour, nil)
	f.seed(keyOwn, 10*24*time.Hour, nil) // outside 7d

	var got struct {
		Object       string           `json:"object"`
		Currency     string           `json:"currency"`
		Scope        string           `json:"scope"`
		PeriodFrom   string           `json:"period_from"`
		PeriodTo     string           `json:"period_to"`
		Total        map[string]any   `json:"total"`
		StatusCounts map[string]int   `json:"status_counts"`
		ByDay        []map[string]any `json:"by_day"`
		ByModel      []map[string]any `json:"by_model"`
	}
	w := f.get(keyOwn, "/v1/logs/summary?period=7d")
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "logs.summary" || got.Currency != "points" || got.Scope != "key" ||
		got.PeriodFrom != "2025-06-11T12:00:00Z" || got.PeriodTo != "2025-06-18T12:00:00Z" {
		t.Fatalf("header fields %+v", got)
	}
	wantTotal := map[string]any{"requests": 4.0, "cost": "3", "input_tokens": 40.0, "output_tokens": 80.0, "cached_tokens": 4.0}
	for k, v := range wantTotal {
		if got.Total[k] != v {
			t.Errorf("total.%s = %#v, want %#v", k, got.Total[k], v)
		}
	}
	wantCounts := map[string]int{"success": 2, "error": 0, "interrupted": 1, "rejected": 1}
	for k, v := range wantCounts {
		if got.StatusCounts[k] != v {
			t.Errorf("status_counts.%s = %d, want %d", k, got.StatusCounts[k], v)
		}
	}
	if len(got.ByDay) != 8 || got.ByDay[0]["date"] != "2025-06-11" || got.ByDay[7]["date"] != "2025-06-18" {
		t.Fatalf("by_day %v", got.ByDay)
	}
	if got.ByDay[6]["requests"] != 1.0 || got.ByDay[6]["cost"] != "2" || got.ByDay[7]["requests"] != 3.0 || got.ByDay[7]["cost"] != "1" {
		t.Errorf("by_day 17th %v 18th %v", got.ByDay[6], got.ByDay[7])
	}
	if len(got.ByModel) != 2 || got.ByModel[0]["model"] != "m-big" || got.ByModel[1]["total_tokens"] != 90.0 || got.ByModel[1]["requests"] != 3.0 {
		t.Errorf("by_model %v", got.ByModel)
	}

	t.Run("account scope counts every key", func(t *testing.T) {
		w := f.get(keyToggled, "/v1/logs/summary?period=7d&scope=account")
		if !strings.Contains(w.Body.String(), `"requests":5`) {
			t.Fatalf("%s", w.Body)
		}
	})
}

func TestSummaryCache(t *testing.T) {
	f := newFixture(t)
	f.seed(keyOwn, time.Hour, nil)
	f.clock.Advance(10 * time.Second) // 12:00:10
	first := f.get(keyOwn, "/v1/logs/summary?period=today").Body.String()
	scans := f.st.scanCount()

	f.seed(keyOwn, -5*time.Second, nil) // 12:00:05, inside the current minute bucket
	f.clock.Advance(20 * time.Second)   // same minute bucket
	if got := f.get(keyOwn, "/v1/logs/summary?period=today").Body.String(); got != first || f.st.scanCount() != scans {
		t.Fatalf("not served from the cache: %s", got)
	}
	// Another scope is another entry.
	f.get(keyToggled, "/v1/logs/summary?period=today&scope=account")
	if f.st.scanCount() != scans+1 {
		t.Fatal("account scope served from the key's entry")
	}
	// The next minute is a new bucket.
	f.clock.Advance(40 * time.Second)
	if got := f.get(keyOwn, "/v1/logs/summary?period=today").Body.String(); got == first || !strings.Contains(got, `"requests":2`) {
		t.Fatalf("stale after the minute: %s", got)
	}
	// A fixed window is cached until its minute ends (12:01:10 to 12:02).
	q := "/v1/logs/summary?from=2025-06-18&to=2025-06-18"
	f.get(keyOwn, q)
	scans = f.st.scanCount()
	f.clock.Advance(49 * time.Second)
	f.get(keyOwn, q)
	if f.st.scanCount() != scans {
		t.Fatal("recomputed within the minute")
	}
	f.clock.Advance(time.Second)
	f.get(keyOwn, q)
	if f.st.scanCount() != scans+1 {
		t.Fatal("not recomputed in the next minute")
	}
}

// A from and to window is answered as asked, to the nanosecond, as the
// list answers it; only a period's window (which ends now) is widened to
// the minute.
func TestSummaryExactWindow(t *testing.T) {
	f := newFixture(t)
	f.seed(keyOwn, 90*time.Second, nil)                 // 11:58:30
	f.seed(keyOwn, 70*time.Second, nil)                 // 11:58:50
	f.seed(keyOwn, 70*time.Second-time.Nanosecond, nil) // 11:58:50 + 1 ns
	f.seed(keyOwn, 50*time.Second, nil)                 // 11:59:10
	from, to := fixNow.Add(-70*time.Second), fixNow.Add(-50*time.Second)
	target := "/v1/logs/summary?" + url.Values{"from": {formatTime(from)}, "to": {formatTime(to)}}.Encode()
	var s struct {
		PeriodFrom string `json:"period_from"`
		PeriodTo   string `json:"period_to"`
		Total      struct{ Requests int64 }
	}
	w := f.get(keyOwn, target)
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || w.Code != 200 {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	if s.Total.Requests != 2 || s.PeriodFrom != formatTime(from) || s.PeriodTo != formatTime(to) {
		t.Fatalf("requests %d over [%s, %s), want 2 over [%s, %s)", s.Total.Requests, s.PeriodFrom, s.PeriodTo, formatTime(from), formatTime(to))
	}
	// Another window within the same minute is its own entry.
	target = "/v1/logs/summary?" + url.Values{"from": {formatTime(from.Add(time.Nanosecond))}, "to": {formatTime(to)}}.Encode()
	if w := f.get(keyOwn, target); !strings.Contains(w.Body.String(), `"requests":1,`) {
		t.Fatalf("a window 1 ns shorter: %s", w.Body)
	}
}

func TestSummaryCacheBounded(t *testing.T) {
	f := newFixture(t, WithSummaryCacheSize(3))
	for i := 0; i < 10; i++ {
		f.get(keyOwn, "/v1/logs/summary?from=2025-06-0"+strconv.Itoa(i%9+1)+"&to=2025-06-18")
	}
	if n := f.h.cache.len(); n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
}

func TestExportCSV(t *testing.T) {
	f := newFixture(t, WithChannelNames([]string{"line-a"}))
	exp := fixNow.Add(time.Hour)
	n := int64(2)
	f.seed(keyOwn, 2*time.Hour, func(r *store.LogRow) {
		r.UnitType, r.UnitCount, r.TaskID = "image", &n, "task-9"
		r.ResultURLs, r.ResultExpiresAt = []string{"https://cdn/1.png", "https://cdn/2.png"}, &exp
		r.Status, r.ErrorCode, r.ErrorMessage = store.StatusError, "upstream_error", "line-a, said \"no\""
		r.KeyName = "=cmd()"
	})
	f.seed(keyOwn, time.Hour, nil)
	f.seed(keyOther, time.Hour, nil)

	w := f.get(keyOwn, "/v1/logs/export.csv?order=asc")
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/csv; charset=utf-8" || w.Header().Get("x-truncated") != "" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	recs, err := csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := "id,created_at,key_name,key_prefix,model,status,error_code,error_message,input_tokens,output_tokens,cached_tokens,unit_count,unit_type,cost_usd,latency_ms,request_id,task_id,submitted_at,attempts_count,result_urls,result_expires_at"
	if strings.Join(recs[0], ",") != wantHeader {
		t.Fatalf("header %v", recs[0])
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	img := recs[1]
	checks := map[int]string{
		0: "1", 1: "2025-06-18T10:00:00Z", 2: "'=cmd()", 5: "error", 6: "upstream_error", 7: `[channel], said "no"`,
		11: "2", 12: "image", 13: "0.5", 16: "task-9", 17: "2025-06-18T09:59:59Z", 18: "",
		19: "https://cdn/1.png|https://cdn/2.png", 20: "2025-06-18T13:00:00Z",
	}
	for i, v := range checks {
		if img[i] != v {
			t.Errorf("column %s = %q, want %q", recs[0][i], img[i], v)
		}
	}
	chat := recs[2]
	for _, i := range []int{6, 7, 11, 12, 16, 18, 19, 20} {
		if chat[i] != "" {
			t.Errorf("chat row column %s = %q, want empty", recs[0][i], chat[i])
		}
	}
}

func TestExportTruncatedAt10000(t *testing.T) {
	f := newFixture(t)
	// Concurrent writers let the store group-commit the 10,001 rows.
	const workers = 8
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < ExportMaxRows+1; i += workers {
				row := store.LogRow{AccountID: "a1", KeyID: "k1", CreatedAt: fixNow.Add(-time.Duration(i+1) * time.Second), Status: store.StatusSuccess}
				if err := f.st.Settle(context.Background(), store.Settlement{Row: &row}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	w := f.get(keyOwn, "/v1/logs/export.csv")
	if w.Header().Get("x-truncated") != "true" {
		t.Fatal("x-truncated not set")
	}
	if lines := strings.Count(w.Body.String(), "\n"); lines != ExportMaxRows+1 {
		t.Fatalf("%d lines, want header + %d", lines, ExportMaxRows)
	}
	// Exactly the cap is not truncated.
	w = f.get(keyOwn, "/v1/logs/export.csv?from=2025-01-01T00:00:00Z&to="+url.QueryEscape(formatTime(fixNow.Add(-time.Second))))
	if w.Header().Get("x-truncated") != "" || strings.Count(w.Body.String(), "\n") != ExportMaxRows+1 {
		t.Fatalf("cap exactly: truncated=%q", w.Header().Get("x-truncated"))
	}
}

func TestLogsRateLimit(t *testing.T) {
	c := newClock(fixNow.Add(15 * time.Second))
	h := New(newTestStore(t), nil, c.Now, nil)
	serve := func(key store.Key, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.Serve(w, httptest.NewRequest(http.MethodGet, target, nil), key)
		return w
	}
	paths := []string{"/v1/logs", "/v1/logs/summary", "/v1/logs/export.csv", "/v1/logs/1", "/v1/logs?status=bad"}
	for i := 0; i < RateLimit; i++ {
		w := serve(keyOwn, paths[i%len(paths)])
		if w.Code == 429 {
			t.Fatalf("request %d refused", i)
		}
		if w.Header().Get("x-ratelimit-limit") != "60" || w.Header().Get("x-ratelimit-remaining") != strconv.Itoa(RateLimit-1-i) ||
			w.Header().Get("x-ratelimit-reset") != "45" {
			t.Fatalf("request %d headers %v", i, w.Header())
		}
	}
	for _, p := range paths {
		w := serve(keyOwn, p)
		expectError(t, w, 429, "logs_rate_limited", "rate_limit_error")
		if w.Header().Get("Retry-After") != "45" || w.Header().Get("x-ratelimit-remaining") != "0" {
			t.Fatalf("headers %v", w.Header())
		}
	}
	if w := serve(keyOther, "/v1/logs"); w.Code != 200 {
		t.Fatalf("another key limited: %d", w.Code)
	}
	c.Advance(45 * time.Second)
	if w := serve(keyOwn, "/v1/logs"); w.Code != 200 {
		t.Fatalf("not reset after the window: %d", w.Code)
	}
}

// TestIncrementalSync runs the spec's recommended sync (order=asc,
// timestamp-form to passed back as the next from, watermark rewound 5
// minutes, dedupe on id) while writers insert rows stamped a little before
// they become visible, and checks every row is seen, once after dedupe.
func TestIncrementalSync(t *testing.T) {
	f := newFixture(t)
	f.clock.step = time.Millisecond // every reading moves time on

	const writers, perWriter = 3, 120
	var mu sync.Mutex
	written := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				// created_at is stamped now, the row lands a moment later:
				// a reader may have moved its watermark past it meanwhile.
				created := f.clock.Now()
				time.Sleep(50 * time.Microsecond)
				row := store.LogRow{AccountID: "a1", KeyID: "k1", CreatedAt: created, SubmittedAt: created, Status: store.StatusSuccess}
				if err := f.st.Settle(context.Background(), store.Settlement{Row: &row}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				written[row.ID] = true
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[uint64]int{}
	from := fixNow.Add(-time.Hour)
	sync := func() {
		to := f.clock.Now()
		q := url.Values{"order": {"asc"}, "limit": {"7"}, "from": {formatTime(from)}, "to": {formatTime(to)}}
		target := "/v1/logs?" + q.Encode()
		pass := map[uint64]bool{}
		for {
			r, rows := f.list(keyOwn, target)
			if r.PeriodTo != formatTime(to) {
				t.Fatalf("period_to %s, want %s", r.PeriodTo, formatTime(to))
			}
			for _, id := range ids(rows) {
				if pass[id] {
					t.Fatalf("row %d twice within one pass", id)
				}
				pass[id] = true
				seen[id]++
			}
			if !r.HasMore {
				break
			}
			target = "/v1/logs?order=asc&limit=7&cursor=" + *r.NextCursor
		}
		from = to.Add(-5 * time.Minute) // the next from is this to, rewound
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		sync()
	}
	sync() // one pass after the writers are done, as a periodic sync would

	if len(written) != writers*perWriter {
		t.Fatalf("written %d", len(written))
	}
	for id := range written {
		if seen[id] == 0 {
			t.Errorf("row %d never seen", id)
		}
	}
	for id := range seen {
		if !written[id] {
			t.Errorf("row %d seen but not written", id)
		}
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		desc, method, target string
		status               int
	}{
		{desc: "path outside the logs API", method: http.MethodGet, target: "/v1/logsx", status: 404},
		{desc: "nested path", method: http.MethodGet, target: "/v1/logs/1/raw", status: 404},
		{desc: "POST", method: http.MethodPost, target: "/v1/logs", status: 405},
		{desc: "trailing slash lists", method: http.MethodGet, target: "/v1/logs/", status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := httptest.NewRecorder()
			f.h.Serve(w, httptest.NewRequest(tc.method, tc.target, nil), keyOwn)
			if w.Code != tc.status {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
}
