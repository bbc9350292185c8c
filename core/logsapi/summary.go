package logsapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// summaryTTL is how long a computed summary is served from the cache.
const summaryTTL = 60 * time.Second

// Costs are money.Total: a period's sum is exact even past money.Max.
type summaryTotal struct {
	Requests     int64       `json:"requests"`
	Cost         money.Total `json:"cost"`
	InputTokens  int64       `json:"input_tokens"`
	OutputTokens int64       `json:"output_tokens"`
	CachedTokens int64       `json:"cached_tokens"`
}

type statusCounts struct {
	Success     int64 `json:"success"`
	Error       int64 `json:"error"`
	Interrupted int64 `json:"interrupted"`
	Rejected    int64 `json:"rejected"`
}

type dayJSON struct {
	Date string `json:"date"`
	summaryTotal
}

type modelJSON struct {
	Model       string      `json:"model"`
	Requests    int64       `json:"requests"`
	Cost        money.Total `json:"cost"`
	TotalTokens int64       `json:"total_tokens"`
}

type summaryJSON struct {
	Object       string       `json:"object"`
	Currency     string       `json:"currency"`
	Scope        string       `json:"scope"`
	PeriodFrom   string       `json:"period_from"`
	PeriodTo     string       `json:"period_to"`
	Total        summaryTotal `json:"total"`
	StatusCounts statusCounts `json:"status_counts"`
	ByDay        []dayJSON    `json:"by_day"`
	ByModel      []modelJSON  `json:"by_model"`
}

// rowsOf is how many rows a total stands for.
func rowsOf(row *store.LogTotal) int64 { return max(row.Rows, 1) }

func (t *summaryTotal) add(row *store.LogTotal) {
	t.Requests += rowsOf(row)
	t.Cost.Add(row.Cost)
	t.InputTokens += row.InputTokens
	t.OutputTokens += row.OutputTokens
	t.CachedTokens += row.CachedTokens
}

func (h *Handler) serveSummary(w http.ResponseWriter, r *http.Request, key store.Key) {
	s, win, aerr := parseSummary(r.URL.Query(), key, h.now())
	if aerr != nil {
		h.fail(w, aerr)
		return
	}
	q := store.LogQuery{AccountID: key.AccountID, KeyID: s.keyID, From: win.from, To: win.to, Asc: true}
	if !s.account {
		q.KeyID = key.ID
	}
	ck := summaryKey(q, s.name())
	now := h.now()
	body, ok := h.cache.get(ck, now)
	if !ok {
		sum, err := h.summarize(r, q, s, win)
		if err != nil {
			h.fail(w, apierr.Internal(err))
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(sum); err != nil {
			h.fail(w, apierr.Internal(err))
			return
		}
		body = buf.Bytes()
		h.cache.put(ck, body, now)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// summaryKey is the cache key: who is summarised and the window, which
// parseSummary has already aligned on whole minutes.
func summaryKey(q store.LogQuery, scopeName string) string {
	b := make([]byte, 0, 96)
	b = append(b, q.AccountID...)
	b = append(b, 0)
	b = append(b, scopeName...)
	b = append(b, 0)
	b = append(b, q.KeyID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, q.From.Unix(), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, q.To.Unix(), 10)
	return string(b)
}

const day = 24 * time.Hour

func (h *Handler) summarize(r *http.Request, q store.LogQuery, s scope, win window) (summaryJSON, error) {
	out := summaryJSON{
		Object:     "logs.summary",
		Currency:   "points",
		Scope:      s.name(),
		PeriodFrom: formatTime(win.from),
		PeriodTo:   formatTime(win.to),
		ByModel:    []modelJSON{},
	}
	first := win.from.Truncate(day)
	days := 0
	if win.to.After(win.from) {
		days = int(win.to.Add(-1).Truncate(day).Sub(first)/day) + 1
	}
	out.ByDay = make([]dayJSON, days)
	for i := range out.ByDay {
		out.ByDay[i].Date = first.Add(time.Duration(i) * day).Format("2006-01-02")
	}
	models := map[string]*modelJSON{}
	err := store.ScanTotals(r.Context(), h.st, q, func(row store.LogTotal) bool {
		out.Total.add(&row)
		n := rowsOf(&row)
		switch row.Status {
		case store.StatusSuccess:
			out.StatusCounts.Success += n
		case store.StatusError:
			out.StatusCounts.Error += n
		case store.StatusInterrupted:
			out.StatusCounts.Interrupted += n
		case store.StatusRejected:
			out.StatusCounts.Rejected += n
		}
		if i := int(row.CreatedAt.UTC().Truncate(day).Sub(first) / day); i >= 0 && i < days {
			out.ByDay[i].add(&row)
		}
		m := models[row.Model]
		if m == nil {
			m = &modelJSON{Model: row.Model}
			models[row.Model] = m
		}
		m.Requests += n
		m.Cost.Add(row.Cost)
		m.TotalTokens += row.InputTokens + row.OutputTokens
		return true
	})
	if err != nil {
		return out, err
	}
	for _, m := range models {
		out.ByModel = append(out.ByModel, *m)
	}
	// Most expensive first; requests, then the id, break ties.
	sort.Slice(out.ByModel, func(i, j int) bool {
		a, b := out.ByModel[i], out.ByModel[j]
		if c := a.Cost.Cmp(b.Cost); c != 0 {
			return c > 0
		}
		if a.Requests != b.Requests {
			return a.Requests > b.Requests
		}
		return a.Model < b.Model
	})
	return out, nil
}

// summaryCache keeps rendered summaries for summaryTTL, at most max of them.
type summaryCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]cacheEntry
}

type cacheEntry struct {
	body    []byte
	expires time.Time
}

func newSummaryCache(max int) *summaryCache {
	if max < 1 {
		max = 1
	}
	return &summaryCache{max: max, entries: make(map[string]cacheEntry)}
}

func (c *summaryCache) get(k string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.body, true
}

func (c *summaryCache) put(k string, body []byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		for key, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, key)
			}
		}
		// Still full: drop arbitrary entries (map order) to make room.
		for key := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = cacheEntry{body: body, expires: now.Add(summaryTTL)}
}

func (c *summaryCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
