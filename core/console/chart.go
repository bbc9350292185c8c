package console

import (
	"encoding/json"
	"time"

	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/money"
)

// chartData is a summary's spend by day, stacked by model, as the page's
// table shows it and console.js draws it with uPlot. Amounts stay exact
// decimal strings; only the drawing turns them into numbers.
type chartData struct {
	Days   []chartDay    `json:"-"`
	Series []chartSeries `json:"series"`
	// X are the days as Unix seconds (UTC midnights); Labels their dates.
	X      []int64  `json:"x"`
	Labels []string `json:"labels"`
	Totals []string `json:"totals"`
}

type chartSeries struct {
	Model string   `json:"model"`
	Costs []string `json:"costs"`
}

// chartDay is one row of the table beside the chart.
type chartDay struct {
	Date     string
	Requests int64
	Cost     money.Total
}

// chartModels is how many models get a band of their own; the rest are
// added up as "other".
const chartModels = 6

const otherModels = "other models"

// spendChart is a summary's chart: days in the API's UTC days, the most
// expensive models of the window each a band, the others one.
func spendChart(s *logsapi.Summary) chartData {
	var d chartData
	named := map[string]bool{}
	for i, m := range s.ByModel {
		if i < chartModels {
			named[m.Model] = true
			d.Series = append(d.Series, chartSeries{Model: m.Model})
		}
	}
	other := len(s.ByModel) > chartModels
	if other {
		d.Series = append(d.Series, chartSeries{Model: otherModels})
	}
	for i, day := range s.ByDay {
		t, _ := time.Parse("2006-01-02", day.Date)
		d.X = append(d.X, t.Unix())
		d.Labels = append(d.Labels, day.Date)
		d.Totals = append(d.Totals, day.Cost.String())
		d.Days = append(d.Days, chartDay{Date: day.Date, Requests: day.Requests, Cost: day.Cost})
		var costs map[string]money.Total
		if i < len(s.DayCosts) {
			costs = s.DayCosts[i]
		}
		var rest money.Total
		for model, c := range costs {
			if !named[model] {
				rest.AddTotal(c)
			}
		}
		for j := range d.Series {
			c := costs[d.Series[j].Model]
			if other && j == len(d.Series)-1 {
				c = rest
			}
			d.Series[j].Costs = append(d.Series[j].Costs, c.String())
		}
	}
	return d
}

// JSON is the chart as the page's data-chart attribute carries it.
func (d chartData) JSON() string {
	b, _ := json.Marshal(d)
	return string(b)
}

// Empty reports whether nothing was spent in the chart's days.
func (d chartData) Empty() bool {
	for _, t := range d.Totals {
		if t != "0" {
			return false
		}
	}
	return true
}
