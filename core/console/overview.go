package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/store"
)

// overviewData is the overview: the wallet, this month's spend, the
// 30-day chart and the last calls.
type overviewData struct {
	Wallet     store.Wallet
	Month      string // this month's spend (the person's month)
	MonthName  string
	Chart      chartData
	Calls      []logsapi.Row
	InFlight   int
	Keys       int
	Welcome    bool
	OwnKeyOnly bool // the figures are the person's own keys'
}

// lastCalls is how many calls the overview lists.
const lastCalls = 10

func (c *Console) overview(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	d := overviewData{Welcome: r.URL.Query().Get("welcome") != "", OwnKeyOnly: !v.owner()}
	var err error
	if d.Wallet, err = c.o.Store.GetWallet(ctx, v.User.AccountID); err != nil {
		return err
	}
	keys, err := c.ownKeys(ctx, v)
	if err != nil {
		return err
	}
	d.Keys = len(keys)
	viewers, scopes, err := c.viewers(ctx, v)
	if err != nil {
		return err
	}
	now := c.now().In(v.Zone)
	d.MonthName = now.Format("January 2006")
	month := url.Values{
		"from": {time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, v.Zone).UTC().Format(time.RFC3339Nano)},
		"to":   {now.UTC().Format(time.RFC3339Nano)},
	}
	var monthSum, chartSum *logsapi.Summary
	for i, vr := range viewers {
		ms, aerr := c.o.Logs.SummaryNow(ctx, vr, with(scopes[i], month))
		if aerr != nil {
			return aerr
		}
		cs, aerr := c.o.Logs.SummaryNow(ctx, vr, with(scopes[i], url.Values{"period": {"30d"}}))
		if aerr != nil {
			return aerr
		}
		monthSum, chartSum = addSummary(monthSum, ms), addSummary(chartSum, cs)
		list, aerr := c.o.Logs.List(ctx, vr, with(scopes[i], url.Values{"limit": {"10"}, "include": {"in_flight"}}))
		if aerr != nil {
			return aerr
		}
		d.Calls = append(d.Calls, list.Data...)
		if list.InFlight != nil {
			d.InFlight += len(*list.InFlight)
		}
	}
	d.Month = "0"
	if monthSum != nil {
		d.Month = monthSum.Total.Cost.String()
		d.Chart = spendChart(chartSum)
	}
	// Newest first across the keys; RFC 3339 in UTC sorts as time does
	// when the fractions agree, so compare parsed instants.
	slices.SortStableFunc(d.Calls, func(a, b logsapi.Row) int {
		ta, _ := time.Parse(time.RFC3339Nano, a.CreatedAt)
		tb, _ := time.Parse(time.RFC3339Nano, b.CreatedAt)
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return strings.Compare(b.RequestID, a.RequestID)
	})
	if len(d.Calls) > lastCalls {
		d.Calls = d.Calls[:lastCalls]
	}
	return c.render(w, v, http.StatusOK, "overview", "", view{Section: "overview", Title: "Overview", Data: d})
}

// addSummary adds s to sum (nil: none yet), never changing a cached one.
func addSummary(sum, s *logsapi.Summary) *logsapi.Summary {
	if sum == nil {
		return s
	}
	out := sum.Clone()
	out.Add(s)
	return out
}
