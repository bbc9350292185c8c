package logsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// summaryTTL is the cache's bucket: a summary is served from the cache
// until the end of the minute it was computed in.
const summaryTTL = 60 * time.Second

// Total is a summary's sum of requests, cost and tokens. Costs are
// money.Total: a period's sum is exact even past money.Max.
type Total struct {
	Requests     int64       `json:"requests"`
	Cost         money.Total `json:"cost"`
	InputTokens  int64       `json:"input_tokens"`
	OutputTokens int64       `json:"output_tokens"`
	CachedTokens int64       `json:"cached_tokens"`
}

// StatusCounts are a summary's requests by status.
type StatusCounts struct {
	Success     int64 `json:"success"`
	Error       int64 `json:"error"`
	Interrupted int64 `json:"interrupted"`
	Rejected    int64 `json:"rejected"`
}

// Day is one UTC day of a summary.
type Day struct {
	Date string `json:"date"`
	Total
}

// ModelTotal is one model of a summary.
type ModelTotal struct {
	Model       string      `json:"model"`
	Requests    int64       `json:"requests"`
	Cost        money.Total `json:"cost"`
	TotalTokens int64       `json:"total_tokens"`
}

// Summary is GET /v1/logs/summary's answer.
type Summary struct {
	Object       string       `json:"object"`
	Currency     string       `json:"currency"`
	Scope        string       `json:"scope"`
	PeriodFrom   string       `json:"period_from"`
	PeriodTo     string       `json:"period_to"`
	Total        Total        `json:"total"`
	StatusCounts StatusCounts `json:"status_counts"`
	ByDay        []Day        `json:"by_day"`
	ByModel      []ModelTotal `json:"by_model"`
	// DayCosts is each day's cost by model, in ByDay's order: what the
	// console stacks in its charts. Not part of the API's answer.
	DayCosts []map[string]money.Total `json:"-"`
}

// rowsOf is how many rows a total stands for.
func rowsOf(row *store.LogTotal) int64 { return max(row.Rows, 1) }

func (t *Total) add(row *store.LogTotal) {
	t.Requests += rowsOf(row)
	t.Cost.Add(row.Cost)
	t.InputTokens += row.InputTokens
	t.OutputTokens += row.OutputTokens
	t.CachedTokens += row.CachedTokens
}

func (t *Total) merge(u *Total) {
	t.Requests += u.Requests
	t.Cost.AddTotal(u.Cost)
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.CachedTokens += u.CachedTokens
}

func (c *StatusCounts) add(status string, n int64) {
	switch status {
	case store.StatusSuccess:
		c.Success += n
	case store.StatusError:
		c.Error += n
	case store.StatusInterrupted:
		c.Interrupted += n
	case store.StatusRejected:
		c.Rejected += n
	}
}

func (c *StatusCounts) merge(u *StatusCounts) {
	c.Success += u.Success
	c.Error += u.Error
	c.Interrupted += u.Interrupted
	c.Rejected += u.Rejected
}

// Summary answers the summary of v's rows with the parameters of GET
// /v1/logs/summary, as the API does: from the cache when a request for the
// same scope and window was answered earlier in the same minute.
func (h *Handler) Summary(ctx context.Context, v Viewer, params url.Values) (*Summary, *apierr.Error) {
	sum, _, err := h.summary(ctx, v, params, true)
	return sum, err
}

// SummaryNow is Summary computed now, past the summary cache (closed days
// still come from the day cache): what a person who just made a call
// expects to see.
func (h *Handler) SummaryNow(ctx context.Context, v Viewer, params url.Values) (*Summary, *apierr.Error) {
	sum, _, err := h.summary(ctx, v, params, false)
	return sum, err
}

// summary is Summary with the answer's JSON, which the cache keeps too.
func (h *Handler) summary(ctx context.Context, v Viewer, params url.Values, cached bool) (*Summary, []byte, *apierr.Error) {
	s, win, aerr := parseSummary(params, v, h.now())
	if aerr != nil {
		return nil, nil, aerr
	}
	q := store.LogQuery{AccountID: v.AccountID, KeyID: s.keyID, From: win.from, To: win.to, Asc: true}
	if !s.account {
		q.KeyID = v.KeyID
	}
	ck := summaryKey(q, s.name())
	now := h.now()
	if e, ok := h.cache.get(ck, now); ok && cached {
		return e.sum, e.body, nil
	}
	sum, err := h.summarize(ctx, q, s, win)
	if err != nil {
		return nil, nil, apierr.Internal(err)
	}
	if !cached {
		return sum, nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sum); err != nil {
		return nil, nil, apierr.Internal(err)
	}
	// Minute-aligned buckets: the entry lives until its minute ends.
	h.cache.put(ck, cacheEntry{sum: sum, body: buf.Bytes()}, now.Truncate(summaryTTL))
	return sum, buf.Bytes(), nil
}

func (h *Handler) serveSummary(w http.ResponseWriter, r *http.Request, v Viewer) {
	_, body, err := h.summary(r.Context(), v, r.URL.Query(), true)
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// summaryKey is the cache key: who is summarised and the window (a
// period's window parseSummary has aligned on whole minutes).
func summaryKey(q store.LogQuery, scopeName string) string {
	b := make([]byte, 0, 96)
	b = append(b, q.AccountID...)
	b = append(b, 0)
	b = append(b, scopeName...)
	b = append(b, 0)
	b = append(b, q.KeyID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, q.From.UnixNano(), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, q.To.UnixNano(), 10)
	return string(b)
}

const day = 24 * time.Hour

// tally adds up totals over a window, by UTC day and by model.
type tally struct {
	first    time.Time // the window's first UTC day
	total    Total
	status   StatusCounts
	days     []Day
	dayCosts []map[string]money.Total
	models   map[string]*ModelTotal
}

func newTally(from, to time.Time) *tally {
	t := &tally{first: from.Truncate(day), models: map[string]*ModelTotal{}}
	n := 0
	if to.After(from) {
		n = int(to.Add(-1).Truncate(day).Sub(t.first)/day) + 1
	}
	t.days = make([]Day, n)
	t.dayCosts = make([]map[string]money.Total, n)
	for i := range t.days {
		t.days[i].Date = t.first.Add(time.Duration(i) * day).Format("2006-01-02")
		t.dayCosts[i] = map[string]money.Total{}
	}
	return t
}

// dayIndex is the index of the day of at, ok false outside the window.
func (t *tally) dayIndex(at time.Time) (int, bool) {
	i := int(at.UTC().Truncate(day).Sub(t.first) / day)
	return i, i >= 0 && i < len(t.days) && !at.Before(t.first)
}

func (t *tally) model(id string) *ModelTotal {
	m := t.models[id]
	if m == nil {
		m = &ModelTotal{Model: id}
		t.models[id] = m
	}
	return m
}

func (t *tally) add(row *store.LogTotal) {
	n := rowsOf(row)
	t.total.add(row)
	t.status.add(row.Status, n)
	if i, ok := t.dayIndex(row.CreatedAt); ok {
		t.days[i].add(row)
		c := t.dayCosts[i][row.Model]
		c.Add(row.Cost)
		t.dayCosts[i][row.Model] = c
	}
	m := t.model(row.Model)
	m.Requests += n
	m.Cost.Add(row.Cost)
	m.TotalTokens += row.InputTokens + row.OutputTokens
}

// merge adds o, a tally of one day inside t's window, to t.
func (t *tally) merge(o *tally) {
	t.total.merge(&o.total)
	t.status.merge(&o.status)
	for id, om := range o.models {
		m := t.model(id)
		m.Requests += om.Requests
		m.Cost.AddTotal(om.Cost)
		m.TotalTokens += om.TotalTokens
	}
	for j := range o.days {
		i, ok := t.dayIndex(o.first.Add(time.Duration(j) * day))
		if !ok {
			continue
		}
		t.days[i].merge(&o.days[j].Total)
		for id, oc := range o.dayCosts[j] {
			c := t.dayCosts[i][id]
			c.AddTotal(oc)
			t.dayCosts[i][id] = c
		}
	}
}

func (t *tally) scan(ctx context.Context, st store.Store, q store.LogQuery, from, to time.Time) error {
	if !to.After(from) {
		return nil
	}
	q.From, q.To = from, to
	return store.ScanTotals(ctx, st, q, func(row store.LogTotal) bool {
		t.add(&row)
		return true
	})
}

// summarize adds up the window's rows. The whole UTC days of the window
// that ended dayGrace or more ago come from the day cache (each computed
// once per scope and kept for dayTTL: a day's rows no longer change once
// it is over); the rest of the window is read from the store.
func (h *Handler) summarize(ctx context.Context, q store.LogQuery, s scope, win window) (*Summary, error) {
	t := newTally(win.from, win.to)
	// Closed days: [a, b).
	a := win.from.Add(day - 1).Truncate(day)
	b := win.to.Truncate(day)
	if closed := h.now().Add(-dayGrace).Truncate(day); b.After(closed) {
		b = closed
	}
	if !b.After(a) {
		a, b = win.to, win.to
	}
	if err := t.scan(ctx, h.st, q, win.from, a); err != nil {
		return nil, err
	}
	for d := a; d.Before(b); d = d.Add(day) {
		dt, err := h.dayTally(ctx, q, d)
		if err != nil {
			return nil, err
		}
		t.merge(dt)
	}
	if b.Before(win.from) {
		b = win.from
	}
	if err := t.scan(ctx, h.st, q, b, win.to); err != nil {
		return nil, err
	}
	out := &Summary{
		Object:       "logs.summary",
		Currency:     "points",
		Scope:        s.name(),
		PeriodFrom:   formatTime(win.from),
		PeriodTo:     formatTime(win.to),
		Total:        t.total,
		StatusCounts: t.status,
		ByDay:        t.days,
		ByModel:      make([]ModelTotal, 0, len(t.models)),
		DayCosts:     t.dayCosts,
	}
	for _, m := range t.models {
		out.ByModel = append(out.ByModel, *m)
	}
	sortModels(out.ByModel)
	return out, nil
}

// sortModels puts the most expensive first; requests, then the id, break
// ties.
func sortModels(ms []ModelTotal) {
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if c := a.Cost.Cmp(b.Cost); c != 0 {
			return c > 0
		}
		if a.Requests != b.Requests {
			return a.Requests > b.Requests
		}
		return a.Model < b.Model
	})
}

// dayTally is the tally of one closed UTC day of q's scope.
func (h *Handler) dayTally(ctx context.Context, q store.LogQuery, d time.Time) (*tally, error) {
	k := dayKey{account: q.AccountID, key: q.KeyID, day: d.Unix()}
	now := h.now()
	if t, ok := h.days.get(k, now); ok {
		return t, nil
	}
	t := newTally(d, d.Add(day))
	if err := t.scan(ctx, h.st, q, d, d.Add(day)); err != nil {
		return nil, err
	}
	h.days.put(k, t, now)
	return t, nil
}

// A day's rows are written at the instant their call ends, by this
// instance or another whose clock may differ a little, and Badger makes
// them visible a moment after the call returns: a day is taken as closed
// dayGrace after its end. A closed day's totals are kept dayTTL, so a row
// written later than that (a clock far off) is counted within the hour.
const (
	dayGrace = 10 * time.Minute
	dayTTL   = time.Hour
)

type dayKey struct {
	account, key string
	day          int64
}

// ttlCache keeps values for a time, at most max of them; past max it
// drops expired entries, then arbitrary ones.
type ttlCache[K comparable, V any] struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	entries map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[K comparable, V any](ttl time.Duration, n int) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, max: max(n, 1), entries: map[K]ttlEntry[V]{}}
}

func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[K, V]) put(k K, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		for key, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, key)
			}
		}
		for key := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = ttlEntry[V]{v: v, expires: now.Add(c.ttl)}
}

func (c *ttlCache[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// cacheEntry is a summary the cache keeps, with its JSON.
type cacheEntry struct {
	sum  *Summary
	body []byte
}

type summaryCache = ttlCache[string, cacheEntry]

func newSummaryCache(n int) *summaryCache { return newTTLCache[string, cacheEntry](summaryTTL, n) }

// Clone is a copy of s that Add may change (summaries the cache serves
// are shared).
func (s *Summary) Clone() *Summary {
	c := *s
	c.ByDay = slices.Clone(s.ByDay)
	c.ByModel = slices.Clone(s.ByModel)
	c.DayCosts = make([]map[string]money.Total, len(s.DayCosts))
	for i, m := range s.DayCosts {
		c.DayCosts[i] = maps.Clone(m)
	}
	return &c
}

// Add adds o, a summary of the same window (another key's), to s, a
// Clone: what a person whose view is several keys sees.
func (s *Summary) Add(o *Summary) {
	s.Total.merge(&o.Total)
	s.StatusCounts.merge(&o.StatusCounts)
	for i := range s.ByDay {
		if i >= len(o.ByDay) || o.ByDay[i].Date != s.ByDay[i].Date {
			break
		}
		s.ByDay[i].merge(&o.ByDay[i].Total)
		if i < len(s.DayCosts) && i < len(o.DayCosts) {
			for id, oc := range o.DayCosts[i] {
				c := s.DayCosts[i][id]
				c.AddTotal(oc)
				s.DayCosts[i][id] = c
			}
		}
	}
	for _, om := range o.ByModel {
		j := slices.IndexFunc(s.ByModel, func(m ModelTotal) bool { return m.Model == om.Model })
		if j < 0 {
			s.ByModel = append(s.ByModel, om)
			continue
		}
		s.ByModel[j].Requests += om.Requests
		s.ByModel[j].Cost.AddTotal(om.Cost)
		s.ByModel[j].TotalTokens += om.TotalTokens
	}
	sortModels(s.ByModel)
}
