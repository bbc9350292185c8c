package logsapi

import (
	"net/url"
	"testing"
)

// FuzzParams: no query string panics the logs API's parameters (list,
// export, summary); a refusal is a 400; an accepted window is ordered and
// inside the bounds unix nanoseconds hold; a page's limit is in range.
func FuzzParams(f *testing.F) {
	c := cursor{V: cursorVersion, From: 1, To: 2e18, Asc: true, At: 5, ID: 9}.encode()
	for _, s := range []string{
		"", "period=7d&scope=account&status=success,error&limit=200&order=asc",
		"from=2025-06-01&to=2025-06-02&model=a,b&include=request,response", "cursor=" + c + "&order=asc",
		"from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z", "from=2025-06-01T10:00:00%2B14:00&to=2025-06-01",
		"limit=-1", "limit=99999999999999999999", "scope=key&key_id=x", "period=today&unit_type=image,chat",
		"cursor=AAAA", "order=desc&cursor=" + c, "from=2025-02-30&to=2025-03-01",
	} {
		f.Add(s, uint8(0))
	}
	viewers := []Viewer{
		{AccountID: "a", KeyID: "k", AccountScope: true},
		{AccountID: "a", KeyID: "k", NoAccountScope: "an employee key reads its own rows"},
		{AccountID: "a", AccountScope: true},
	}
	f.Fuzz(func(t *testing.T, raw string, who uint8) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		v := viewers[int(who)%len(viewers)]
		check := func(w window, aerr error, status int) {
			if aerr != nil {
				if status != 400 && status != 403 {
					t.Fatalf("%q: refusal %d %v", raw, status, aerr)
				}
				return
			}
			if w.from.After(w.to) || w.from.Before(minTime) || w.to.After(maxTime) {
				t.Fatalf("%q: window %s..%s", raw, w.from, w.to)
			}
		}
		p, e := parseList(q, v, testNow)
		if e == nil {
			if p.limit < 1 || p.limit > maxLimit {
				t.Fatalf("%q: limit %d", raw, p.limit)
			}
			check(p.window, nil, 0)
			_ = p.query(v)
		} else {
			check(window{}, e, e.Status)
		}
		if p, e := parseExport(q, v, testNow); e == nil {
			check(p.window, nil, 0)
		} else {
			check(window{}, e, e.Status)
		}
		if _, w, e := parseSummary(q, v, testNow); e == nil {
			check(w, nil, 0)
		} else {
			check(window{}, e, e.Status)
		}
	})
}

// FuzzCursor: a cursor that was not issued is refused, never decoded
// into a window that runs backwards.
func FuzzCursor(f *testing.F) {
	f.Add(cursor{V: cursorVersion, From: 1, To: 2, At: 1, ID: 1}.encode())
	f.Add("")
	f.Add("eyJ2IjoxfQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			return
		}
		if c.From > c.To || c.V != cursorVersion {
			t.Fatalf("%q decoded to %+v", s, c)
		}
	})
}
