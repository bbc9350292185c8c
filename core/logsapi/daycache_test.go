package logsapi

import (
	"fmt"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// plainSummary adds up the window straight from the store, without the
// day cache: what a summary must equal.
func plainSummary(t *testing.T, f *fixture, v Viewer, q url.Values) *tally {
	t.Helper()
	s, win, err := parseSummary(q, v, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	lq := store.LogQuery{AccountID: v.AccountID, KeyID: s.keyID, Asc: true}
	if !s.account {
		lq.KeyID = v.KeyID
	}
	tl := newTally(win.from, win.to)
	if err := tl.scan(t.Context(), f.st, lq, win.from, win.to); err != nil {
		t.Fatal(err)
	}
	return tl
}

func sameSummary(t *testing.T, what string, got *Summary, want *tally) {
	t.Helper()
	byModel := map[string]ModelTotal{}
	for _, m := range got.ByModel {
		byModel[m.Model] = m
	}
	wantModels := map[string]ModelTotal{}
	for id, m := range want.models {
		wantModels[id] = *m
	}
	for _, c := range []struct {
		part      string
		got, want any
	}{
		{"total", got.Total, want.total},
		{"status counts", got.StatusCounts, want.status},
		{"by day", got.ByDay, want.days},
		{"day costs", got.DayCosts, want.dayCosts},
		{"by model", byModel, wantModels},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Fatalf("%s: %s differs from a plain scan:\n got  %+v\n want %+v", what, c.part, c.got, c.want)
		}
	}
}

// TestSummaryDayCache: summaries that take closed days from the day cache
// equal a plain scan of the window, whatever the window's edges and the
// clock, and rows of the current day show at once.
func TestSummaryDayCache(t *testing.T) {
	f := newFixture(t)
	models := []string{"gpt-4o-mini", "claude-sonnet-4-5", "o3-pro"}
	statuses := []string{store.StatusSuccess, store.StatusError, store.StatusRejected, store.StatusInterrupted}
	// Rows every 97 minutes over 40 days, and one a second each side of
	// every midnight.
	n := 0
	add := func(key store.Key, ago time.Duration) {
		n++
		i := n
		f.seed(key, ago, func(r *store.LogRow) {
			r.Model, r.Status = models[i%len(models)], statuses[i%len(statuses)]
			r.Cost = money.Nano(int64(i) * 1_234_567)
			r.InputTokens, r.OutputTokens, r.CachedTokens = int64(i), int64(2*i), int64(i%3)
			r.RequestID = fmt.Sprintf("req-%d", i)
		})
	}
	for ago := time.Minute; ago < 40*day; ago += 97 * time.Minute {
		add([]store.Key{keyOwn, keyOther}[n%2], ago)
	}
	midnight := fixNow.Truncate(day)
	for d := 0; d < 40; d++ {
		m := midnight.Add(-time.Duration(d) * day)
		add(keyOwn, fixNow.Sub(m.Add(-time.Second)))
		add(keyOther, fixNow.Sub(m))
	}

	owner := Viewer{AccountID: "a1", AccountScope: true}
	cases := []struct {
		v     Viewer
		query string
	}{
		{owner, "scope=account&period=30d"},
		{owner, "scope=account&period=7d"},
		{owner, "scope=account&period=today"},
		{owner, "scope=account&period=this_month"},
		{owner, "scope=account&key_id=k2&period=30d"},
		{ViewerOf(keyOwn), "period=30d"},
		{owner, "scope=account&from=2025-05-20&to=2025-06-02"},
		{owner, "scope=account&from=2025-05-20T07:13:00Z&to=2025-06-17T23:59:00Z"},
		{owner, "scope=account&from=2025-06-17T00:00:00Z&to=" + url.QueryEscape(fixNow.Format(time.RFC3339))},
	}
	// Just after midnight (the last day not yet closed), later that day,
	// and a day on.
	for _, now := range []time.Time{midnight.Add(3 * time.Minute), midnight.Add(dayGrace + time.Minute), fixNow, fixNow.Add(day)} {
		f.clock.ns.Store(now.UnixNano())
		for _, c := range cases {
			q, _ := url.ParseQuery(c.query)
			what := fmt.Sprintf("%s at %s", c.query, now.Format(time.RFC3339))
			for pass := range 2 { // the second pass reads the day cache
				f.clock.Advance(summaryTTL) // past the summary cache
				got, err := f.h.Summary(t.Context(), c.v, q)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				sameSummary(t, fmt.Sprintf("%s, pass %d", what, pass), got, plainSummary(t, f, c.v, q))
			}
		}
	}
	if f.h.days.len() == 0 {
		t.Fatal("no day was cached")
	}

	// A call of the current day shows in the next summary.
	f.clock.ns.Store(fixNow.UnixNano())
	q, _ := url.ParseQuery("scope=account&period=7d")
	before, _ := f.h.Summary(t.Context(), owner, q)
	add(keyOwn, time.Second)
	f.clock.Advance(summaryTTL)
	after, _ := f.h.Summary(t.Context(), owner, q)
	if after.Total.Requests != before.Total.Requests+1 {
		t.Fatalf("requests %d then %d: the new call is not counted", before.Total.Requests, after.Total.Requests)
	}
	sameSummary(t, "after a new call", after, plainSummary(t, f, owner, q))
}
