package logsapi

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

var testNow = time.Date(2025, 6, 18, 15, 30, 45, 500_000_000, time.UTC)

func mustQuery(t *testing.T, s string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestParseWindow(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		desc     string
		query    string
		allowAll bool
		from, to time.Time
		wantErr  string
	}{
		{desc: "default period is 30d", query: "", from: testNow.Add(-30 * 24 * time.Hour), to: testNow},
		{desc: "period 7d", query: "period=7d", from: testNow.Add(-7 * 24 * time.Hour), to: testNow},
		{desc: "period today starts at UTC midnight", query: "period=today", from: day(2025, 6, 18), to: testNow},
		{desc: "period this_month", query: "period=this_month", from: day(2025, 6, 1), to: testNow},
		{desc: "period all", query: "period=all", allowAll: true, from: minTime, to: testNow},
		{desc: "period all refused where not allowed", query: "period=all", wantErr: "period=all"},
		{desc: "unknown period", query: "period=90d", wantErr: "period must be"},
		{desc: "date-form to includes the whole day", query: "from=2025-06-01&to=2025-06-02", from: day(2025, 6, 1), to: day(2025, 6, 3)},
		{desc: "timestamp-form to excludes the instant", query: "from=2025-06-01T10:00:00Z&to=2025-06-01T11:00:00.25Z",
			from: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), to: time.Date(2025, 6, 1, 11, 0, 0, 250_000_000, time.UTC)},
		{desc: "mixing forms is allowed", query: "from=2025-06-01&to=2025-06-01T12:00:00%2B02:00", from: day(2025, 6, 1), to: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)},
		{desc: "period ignored when from and to given", query: "period=bogus&from=2025-06-01&to=2025-06-01", from: day(2025, 6, 1), to: day(2025, 6, 2)},
		{desc: "from alone is refused", query: "from=2025-06-01", wantErr: "together"},
		{desc: "to alone is refused", query: "to=2025-06-01", wantErr: "together"},
		{desc: "from after to", query: "from=2025-06-03&to=2025-06-01", wantErr: "after"},
		{desc: "bad date", query: "from=2025-13-01&to=2025-06-01", wantErr: "from:"},
		{desc: "bad timestamp", query: "from=2025-06-01&to=yesterday", wantErr: "to:"},
		{desc: "an offset's unescaped + arrives as a space", query: "from=2025-06-01T12:00:00+02:00&to=2025-06-01T13:00:00-02:00",
			from: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), to: time.Date(2025, 6, 1, 15, 0, 0, 0, time.UTC)},
		{desc: "lower-case t and z, a space for T", query: "from=2025-06-01t10:00:00z&to=2025-06-01%2011:00:00.5Z",
			from: time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), to: time.Date(2025, 6, 1, 11, 0, 0, 500_000_000, time.UTC)},
		{desc: "a timestamp without an offset", query: "from=2025-06-01T10:00:00&to=2025-06-02", wantErr: "from:"},
		{desc: "an offset without its colon", query: "from=2025-06-01T10:00:00+0200&to=2025-06-02", wantErr: "from:"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w, err := parseWindow(mustQuery(t, tc.query), testNow, tc.allowAll)
			if tc.wantErr != "" {
				if err == nil || err.Status != 400 || !strings.Contains(err.Message, tc.wantErr) {
					t.Fatalf("err %v, want 400 containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !w.from.Equal(tc.from) || !w.to.Equal(tc.to) {
				t.Fatalf("window [%v, %v), want [%v, %v)", w.from, w.to, tc.from, tc.to)
			}
		})
	}
}

func TestParseScope(t *testing.T) {
	own := store.Key{ID: "k1", AccountID: "a1", Kind: store.KindConsole}
	toggled := own
	toggled.LogsAccountScope = true
	employee := toggled
	employee.Kind = store.KindEmployee
	desktop := toggled
	desktop.Kind = store.KindDesktop
	tests := []struct {
		desc       string
		key        store.Key
		query      string
		want       scope
		wantStatus int
	}{
		{desc: "default is key scope", key: own, query: "", want: scope{}},
		{desc: "account scope with the toggle", key: toggled, query: "scope=account", want: scope{account: true}},
		{desc: "account scope without the toggle is 403", key: own, query: "scope=account", wantStatus: 403},
		{desc: "employee keys never get account scope", key: employee, query: "scope=account", wantStatus: 403},
		{desc: "desktop keys never get account scope", key: desktop, query: "scope=account", wantStatus: 403},
		{desc: "key_id with account scope", key: toggled, query: "scope=account&key_id=k2", want: scope{account: true, keyID: "k2"}},
		{desc: "key_id without account scope is 400", key: toggled, query: "key_id=k2", wantStatus: 400},
		{desc: "unknown scope is 400", key: toggled, query: "scope=org", wantStatus: 400},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			s, err := parseScope(mustQuery(t, tc.query), ViewerOf(tc.key))
			if tc.wantStatus != 0 {
				if err == nil || err.Status != tc.wantStatus {
					t.Fatalf("err %v, want status %d", err, tc.wantStatus)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s != tc.want {
				t.Fatalf("scope %+v, want %+v", s, tc.want)
			}
		})
	}
}

func TestParseFiltersOrderLimitInclude(t *testing.T) {
	tests := []struct {
		desc    string
		query   string
		check   func(t *testing.T, p listParams)
		wantErr string
	}{
		{desc: "comma-separated filters", query: "model=a,b&status=success,error&unit_type=chat,image&error_code=x&ref=req-1",
			check: func(t *testing.T, p listParams) {
				want := filters{models: []string{"a", "b"}, statuses: []string{"success", "error"},
					unitTypes: []string{"chat", "image"}, errorCodes: []string{"x"}, ref: "req-1"}
				if !reflect.DeepEqual(p.filters, want) {
					t.Fatalf("filters %+v", p.filters)
				}
			}},
		{desc: "empty values are no filter", query: "model=&status=&unit_type=&error_code=&ref=",
			check: func(t *testing.T, p listParams) {
				if !reflect.DeepEqual(p.filters, filters{}) {
					t.Fatalf("filters %+v", p.filters)
				}
			}},
		{desc: "misspelled status", query: "status=failed", wantErr: `status "failed"`},
		{desc: "misspelled unit_type", query: "unit_type=images", wantErr: `unit_type "images"`},
		{desc: "defaults", query: "",
			check: func(t *testing.T, p listParams) {
				if p.asc || p.limit != 50 || !p.include.attempts || p.include.inFlight || p.after != nil {
					t.Fatalf("params %+v", p)
				}
			}},
		{desc: "order asc", query: "order=asc", check: func(t *testing.T, p listParams) {
			if !p.asc {
				t.Fatal("not asc")
			}
		}},
		{desc: "bad order", query: "order=up", wantErr: "order must be"},
		{desc: "limit 1", query: "limit=1", check: func(t *testing.T, p listParams) {
			if p.limit != 1 {
				t.Fatal(p.limit)
			}
		}},
		{desc: "limit 200", query: "limit=200", check: func(t *testing.T, p listParams) {
			if p.limit != 200 {
				t.Fatal(p.limit)
			}
		}},
		{desc: "limit 0", query: "limit=0", wantErr: "limit must be"},
		{desc: "limit 201", query: "limit=201", wantErr: "limit must be"},
		{desc: "limit not a number", query: "limit=ten", wantErr: "limit must be"},
		{desc: "include none", query: "include=none", check: func(t *testing.T, p listParams) {
			if p.include != (include{}) {
				t.Fatalf("%+v", p.include)
			}
		}},
		{desc: "include attempts and in_flight", query: "include=attempts,in_flight", check: func(t *testing.T, p listParams) {
			if p.include != (include{attempts: true, inFlight: true}) {
				t.Fatalf("%+v", p.include)
			}
		}},
		{desc: "include in_flight alone drops attempts", query: "include=in_flight", check: func(t *testing.T, p listParams) {
			if p.include != (include{inFlight: true}) {
				t.Fatalf("%+v", p.include)
			}
		}},
		{desc: "unknown include token", query: "include=attempts,children", wantErr: `include token "children"`},
	}
	key := store.Key{ID: "k1", AccountID: "a1", Kind: store.KindConsole}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p, err := parseList(mustQuery(t, tc.query), ViewerOf(key), testNow)
			if tc.wantErr != "" {
				if err == nil || err.Status != 400 || !strings.Contains(err.Message, tc.wantErr) {
					t.Fatalf("err %v, want 400 containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestCursor(t *testing.T) {
	c := cursor{V: cursorVersion, From: 1, To: 1e18, Asc: true, At: 123456789, ID: 42}
	enc := c.encode()
	key := store.Key{ID: "k1", AccountID: "a1", Kind: store.KindConsole}

	t.Run("round trip", func(t *testing.T) {
		got, err := decodeCursor(enc)
		if err != nil || got != c {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("freezes the window", func(t *testing.T) {
		p, err := parseList(mustQuery(t, "order=asc&period=7d&cursor="+enc), ViewerOf(key), testNow)
		if err != nil {
			t.Fatal(err)
		}
		if p.window.from.UnixNano() != 1 || p.window.to.UnixNano() != 1e18 || p.after.ID != 42 {
			t.Fatalf("params %+v", p)
		}
	})
	t.Run("asc cursor with desc order is 400", func(t *testing.T) {
		if _, err := parseList(mustQuery(t, "cursor="+enc), ViewerOf(key), testNow); err == nil || err.Status != 400 {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("desc cursor with asc order is 400", func(t *testing.T) {
		d := c
		d.Asc = false
		if _, err := parseList(mustQuery(t, "order=asc&cursor="+d.encode()), ViewerOf(key), testNow); err == nil || err.Status != 400 {
			t.Fatalf("err %v", err)
		}
	})
	tampered := []struct {
		desc string
		s    string
	}{
		{desc: "not base64", s: "!!!"},
		{desc: "too short", s: "AAAA"},
		{desc: "one character changed", s: flip(enc, 3)},
		{desc: "last character changed", s: flip(enc, len(enc)-1)},
		{desc: "truncated", s: enc[:len(enc)-2]},
	}
	for _, tc := range tampered {
		t.Run("tampered: "+tc.desc, func(t *testing.T) {
			if _, err := decodeCursor(tc.s); err == nil {
				t.Fatal("accepted")
			}
			if _, err := parseList(mustQuery(t, "order=asc&cursor="+url.QueryEscape(tc.s)), ViewerOf(key), testNow); err == nil || err.Status != 400 {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestParseSummary(t *testing.T) {
	key := store.Key{ID: "k1", AccountID: "a1", Kind: store.KindConsole}
	tests := []struct {
		desc     string
		query    string
		from, to time.Time
		wantErr  string
	}{
		{desc: "window widened to whole minutes", query: "period=7d",
			from: testNow.Add(-7 * 24 * time.Hour).Truncate(time.Minute), to: testNow.Truncate(time.Minute).Add(time.Minute)},
		{desc: "from and to are answered exactly", query: "from=2025-06-01T10:00:30.5Z&to=2025-06-01T10:01:10Z",
			from: time.Date(2025, 6, 1, 10, 0, 30, 500_000_000, time.UTC), to: time.Date(2025, 6, 1, 10, 1, 10, 0, time.UTC)},
		{desc: "365 days accepted", query: "from=2024-01-01&to=2024-12-30",
			from: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), to: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)},
		{desc: "window over 365 days", query: "from=2024-01-01&to=2024-12-31", wantErr: "365 days"},
		{desc: "period all", query: "period=all", wantErr: "period=all"},
		{desc: "model filter", query: "model=m", wantErr: "model is a row filter"},
		{desc: "status filter", query: "status=success", wantErr: "status is a row filter"},
		{desc: "unit_type filter", query: "unit_type=chat", wantErr: "unit_type is a row filter"},
		{desc: "error_code filter", query: "error_code=x", wantErr: "error_code is a row filter"},
		{desc: "ref filter", query: "ref=r", wantErr: "ref is a row filter"},
		{desc: "half range", query: "from=2024-01-01", wantErr: "together"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, w, err := parseSummary(mustQuery(t, tc.query), ViewerOf(key), testNow)
			if tc.wantErr != "" {
				if err == nil || err.Status != 400 || !strings.Contains(err.Message, tc.wantErr) {
					t.Fatalf("err %v, want 400 containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !w.from.Equal(tc.from) || !w.to.Equal(tc.to) {
				t.Fatalf("window [%v, %v), want [%v, %v)", w.from, w.to, tc.from, tc.to)
			}
		})
	}
}
