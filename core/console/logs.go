package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/store"
)

// filters are the log site's form: the logs API's parameters, with the
// period and the dates in the person's zone.
type filters struct {
	Period    string // today, 7d, 30d, this_month, all, custom
	From, To  string // YYYY-MM-DD in the person's zone (custom)
	Models    []string
	Statuses  []string
	UnitType  string
	ErrorCode string
	Ref       string
	Key       string
	Order     string
	Cursor    string
}

// Periods and the unit types of the form, in the API's words.
var (
	periods = []struct{ ID, Label string }{
		{"today", "Today"}, {"7d", "Last 7 days"}, {"30d", "Last 30 days"}, {"this_month", "This month"},
		{"all", "All time"}, {"custom", "Dates…"},
	}
	statuses  = []string{store.StatusSuccess, store.StatusError, store.StatusInterrupted, store.StatusRejected}
	unitTypes = []string{"chat", "image", "video", "music", "audio", "avatar", "voice", "search", "transcript"}
)

func parseFilters(q url.Values) filters {
	f := filters{
		Period: q.Get("period"), From: q.Get("from"), To: q.Get("to"),
		UnitType: q.Get("unit_type"), ErrorCode: strings.TrimSpace(q.Get("error_code")), Ref: strings.TrimSpace(q.Get("ref")),
		Key: q.Get("key"), Order: q.Get("order"), Cursor: q.Get("cursor"),
	}
	for _, m := range q["model"] {
		for _, id := range strings.Split(m, ",") {
			if id = strings.TrimSpace(id); id != "" {
				f.Models = append(f.Models, id)
			}
		}
	}
	f.Statuses = q["status"]
	if f.Period == "" {
		f.Period = "30d"
		if f.From != "" || f.To != "" {
			f.Period = "custom"
		}
	}
	return f
}

// query is the form as the console's own links carry it.
func (f filters) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("period", f.Period)
	if f.Period == "custom" {
		set("from", f.From)
		set("to", f.To)
	}
	for _, m := range f.Models {
		q.Add("model", m)
	}
	for _, s := range f.Statuses {
		q.Add("status", s)
	}
	set("unit_type", f.UnitType)
	set("error_code", f.ErrorCode)
	set("ref", f.Ref)
	set("key", f.Key)
	set("order", f.Order)
	return q
}

// window is the form's period as the API's parameters: dates and today
// and this month are the person's, sent as instants.
func (f filters) window(loc *time.Location, now time.Time) (url.Values, *apierr.Error) {
	now = now.In(loc)
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc) }
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	switch f.Period {
	case "7d", "30d", "all":
		return url.Values{"period": {f.Period}}, nil
	case "today":
		return url.Values{"from": {stamp(day(now))}, "to": {stamp(now)}}, nil
	case "this_month":
		return url.Values{"from": {stamp(time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc))}, "to": {stamp(now)}}, nil
	case "custom":
		from, err1 := time.ParseInLocation("2006-01-02", f.From, loc)
		to, err2 := time.ParseInLocation("2006-01-02", f.To, loc)
		if err1 != nil || err2 != nil {
			return nil, apierr.New(apierr.InvalidRequest, "pick both dates of the range (from and to)")
		}
		if to.Before(from) {
			return nil, apierr.New(apierr.InvalidRequest, "the range ends before it starts")
		}
		// The whole last day, in the person's zone: to is the next midnight,
		// excluded (the API's timestamp form).
		return url.Values{"from": {stamp(from)}, "to": {stamp(to.AddDate(0, 0, 1))}}, nil
	}
	return nil, apierr.Newf(apierr.InvalidRequest, "unknown period %q", f.Period)
}

// rowParams are the API's row filters of the form.
func (f filters) rowParams() url.Values {
	q := url.Values{}
	if len(f.Models) > 0 {
		q.Set("model", strings.Join(f.Models, ","))
	}
	if len(f.Statuses) > 0 {
		q.Set("status", strings.Join(f.Statuses, ","))
	}
	for k, v := range map[string]string{"unit_type": f.UnitType, "error_code": f.ErrorCode, "ref": f.Ref, "order": f.Order} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// logsData is the log site's page.
type logsData struct {
	F         filters
	Keys      []store.Key // the keys the person may pick
	NoKeys    bool
	Periods   []struct{ ID, Label string }
	Statuses  []string
	UnitTypes []string
	Models    []string
	List      *logsapi.List
	Summary   *logsapi.Summary
	Chart     chartData
	// SummaryNote says why there is no summary (period all, over a year).
	SummaryNote string
	Next, First string
	Export      string
}

func (c *Console) logsPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	f := parseFilters(r.URL.Query())
	sc, ok, err := c.logScope(ctx, v, f.Key)
	if err != nil {
		return err
	}
	d := logsData{F: f, Keys: sc.keys, Periods: periods, Statuses: statuses, UnitTypes: unitTypes, Models: c.modelIDs()}
	vw := view{Section: "logs", Title: "Logs", Data: &d}
	if !ok {
		d.NoKeys = true
		return c.render(w, v, http.StatusOK, "logs", "results", vw)
	}
	d.F.Key = sc.key
	if v.owner() && sc.whole {
		d.F.Key = ""
	}
	win, aerr := f.window(v.Zone, c.now())
	if aerr != nil {
		vw.Problem = sentence(aerr.Message)
		return c.render(w, v, aerr.Status, "logs", "results", vw)
	}
	params := with(with(sc.params, win), f.rowParams())
	params.Set("include", "attempts,in_flight")
	if f.Cursor != "" {
		params.Set("cursor", f.Cursor)
	}
	list, aerr := c.o.Logs.List(ctx, sc.viewer, params)
	if aerr != nil {
		if aerr.Status >= 500 {
			return aerr
		}
		vw.Problem = sentence(aerr.Message)
		return c.render(w, v, aerr.Status, "logs", "results", vw)
	}
	d.List = list
	links := d.F.query()
	d.First = Prefix + "logs?" + links.Encode()
	if list.NextCursor != nil {
		next := with(links, url.Values{"cursor": {*list.NextCursor}})
		d.Next = Prefix + "logs?" + next.Encode()
	}
	d.Export = Prefix + "logs/export.csv?" + links.Encode()
	// The summary of the window, whatever the row filters (the API's
	// summary takes none).
	if f.Period == "all" {
		d.SummaryNote = "The summary covers at most a year: pick a shorter period to see it."
	} else if sum, aerr := c.o.Logs.SummaryNow(ctx, sc.viewer, with(sc.params, win)); aerr == nil {
		d.Summary = sum
		d.Chart = spendChart(sum)
	} else if aerr.Status >= 500 {
		return aerr
	} else {
		d.SummaryNote = sentence(aerr.Message)
	}
	return c.render(w, v, http.StatusOK, "logs", "results", vw)
}

// exportCSV streams the logs API's CSV export of the form's rows.
func (c *Console) exportCSV(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := parseFilters(r.URL.Query())
	sc, ok, err := c.logScope(r.Context(), v, f.Key)
	if err != nil {
		return err
	}
	if !ok {
		return apierr.New(apierr.InvalidRequest, "you have no key yet, so no calls to export")
	}
	win, aerr := f.window(v.Zone, c.now())
	if aerr != nil {
		return aerr
	}
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = with(with(sc.params, win), f.rowParams()).Encode()
	c.o.Logs.Export(w, r2, sc.viewer)
	return nil
}

// entryData is a row's page: the row and its technical view.
type entryData struct {
	Row  *logsapi.Row
	Tech *logsapi.Tech
	Back string
}

func (c *Console) logEntry(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	sc, ok, err := c.logScope(ctx, v, "")
	if err != nil {
		return err
	}
	if !ok {
		return store.ErrNotFound
	}
	id := r.PathValue("id")
	row, tech, aerr := c.o.Logs.Entry(ctx, sc.viewer, sc.params, id)
	if aerr != nil && aerr.Code == apierr.LogNotFound && !v.owner() {
		// Someone else's view is one key at a time: try each of theirs.
		for _, k := range sc.keys {
			kv := logsapi.Viewer{AccountID: k.AccountID, KeyID: k.ID}
			if row, tech, aerr = c.o.Logs.Entry(ctx, kv, url.Values{"scope": {"key"}}, id); aerr == nil {
				break
			}
		}
	}
	if aerr != nil {
		if aerr.Code == apierr.LogNotFound {
			return store.ErrNotFound
		}
		return aerr
	}
	back := r.URL.Query().Get("back")
	if !strings.HasPrefix(back, Prefix+"logs") {
		back = Prefix + "logs"
	}
	return c.render(w, v, http.StatusOK, "entry", "entry", view{Section: "logs", Title: "Call " + id,
		Data: entryData{Row: row, Tech: tech, Back: back}})
}

// modelIDs are the configured models, for the forms.
func (c *Console) modelIDs() []string {
	out := make([]string, 0, len(c.o.Config.Models))
	for _, m := range c.o.Config.Models {
		out = append(out, m.ID)
	}
	return out
}
