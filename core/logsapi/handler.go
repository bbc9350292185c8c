// Package logsapi serves the call-log API of an authenticated key:
// GET /v1/logs, /v1/logs/{id}, /v1/logs/summary and /v1/logs/export.csv.
// It reads through store.Store only and writes completions-style errors.
package logsapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/store"
)

// Logs API limits of the spec.
const (
	// RateLimit is the requests per minute per key shared by the logs endpoints.
	RateLimit = 60
	// ExportMaxRows caps one CSV export.
	ExportMaxRows = 10_000
)

// Handler serves the logs endpoints. It is safe for concurrent use.
type Handler struct {
	st     store.Store
	lim    *ratelimit.PerKey
	now    func() time.Time
	log    hclog.Logger
	red    *redact.Redactor
	cache  *summaryCache
	days   *ttlCache[dayKey, *tally]
	prefix string
}

// Option configures a Handler.
type Option func(*Handler)

// WithChannelNames sets the upstream channel names (the config's channel
// blocks) masked as "[channel]" in error fields and technical views.
func WithChannelNames(names []string) Option {
	return func(h *Handler) { h.red = redact.Channels(names) }
}

// WithRedactor sets the Redactor of error fields and technical views: the
// gateway's one, which masks the operator's configured keys and hosts too.
func WithRedactor(r *redact.Redactor) Option {
	return func(h *Handler) { h.red = r }
}

// WithSummaryCacheSize bounds the number of cached summaries (default 4096).
func WithSummaryCacheSize(n int) Option {
	return func(h *Handler) { h.cache = newSummaryCache(n) }
}

// New returns the logs handler. lim is the shared 60-per-minute-per-key
// limiter of the logs endpoints (a fresh one when nil); now is the clock
// (time.Now when nil); logger receives the causes of 500s.
func New(st store.Store, lim *ratelimit.PerKey, now func() time.Time, logger hclog.Logger, opts ...Option) *Handler {
	if now == nil {
		now = time.Now
	}
	if lim == nil {
		lim = ratelimit.NewPerKey(RateLimit, time.Minute, now)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	h := &Handler{
		st:     st,
		lim:    lim,
		now:    now,
		log:    logger,
		red:    redact.New(redact.Options{}),
		cache:  newSummaryCache(4096),
		days:   newTTLCache[dayKey, *tally](dayTTL, 100_000),
		prefix: "/v1/logs",
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Serve handles GET /v1/logs, /v1/logs/summary, /v1/logs/export.csv and
// /v1/logs/{id} for an authenticated key. Every response carries the
// x-ratelimit-* headers of the logs limiter.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, key store.Key) {
	d := h.lim.Allow(key.ID)
	d.SetHeaders(w.Header())
	if !d.Allowed {
		retry, _ := strconv.Atoi(w.Header().Get("Retry-After"))
		h.fail(w, apierr.Newf(apierr.LogsRateLimited,
			"logs API rate limit reached: %s per minute per key; retry after %s",
			english.Count(d.Limit, "request"), english.Count(retry, "second")))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		e := apierr.Newf(apierr.InvalidRequest, "method %s is not allowed on the logs API; use GET", r.Method)
		e.Status = http.StatusMethodNotAllowed
		w.Header().Set("Allow", "GET, HEAD")
		h.fail(w, e)
		return
	}
	if key.Kind == store.KindAgent {
		h.fail(w, apierr.New(apierr.PermissionDenied, "agent keys cannot read call logs"))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, h.prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		h.fail(w, apierr.New(apierr.NotFound, "unknown logs endpoint "+r.URL.Path))
		return
	}
	v, q, ctx := ViewerOf(key), r.URL.Query(), r.Context()
	switch rest = strings.TrimSuffix(rest, "/"); rest {
	case "":
		h.answer(w)(h.List(ctx, v, q))
	case "/summary":
		h.serveSummary(w, r, v)
	case "/export.csv":
		h.Export(w, r, v)
	default:
		_, tech, err := h.Entry(ctx, v, q, strings.TrimPrefix(rest, "/"))
		h.answer(w)(tech, err)
	}
}

// answer writes v as JSON, or err.
func (h *Handler) answer(w http.ResponseWriter) func(v any, err *apierr.Error) {
	return func(v any, err *apierr.Error) {
		if err != nil {
			h.fail(w, err)
			return
		}
		writeJSON(w, v)
	}
}

func (h *Handler) fail(w http.ResponseWriter, e *apierr.Error) {
	if e.Status >= 500 {
		h.log.Error("logs request failed", "error", e)
	}
	apierr.Write(w, protocol.OpenAIChat, e)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// List is a page of rows (GET /v1/logs).
type List struct {
	Object     string      `json:"object"`
	Currency   string      `json:"currency"`
	Scope      string      `json:"scope"`
	PeriodFrom string      `json:"period_from"`
	PeriodTo   string      `json:"period_to"`
	Data       []Row       `json:"data"`
	HasMore    bool        `json:"has_more"`
	NextCursor *string     `json:"next_cursor"`
	InFlight   *[]InFlight `json:"in_flight,omitempty"`
}

// InFlight is an unfinished async job (spec rule 5): it becomes a row only
// when it ends.
type InFlight struct {
	Object      string `json:"object"`
	TaskID      string `json:"task_id"`
	RequestID   string `json:"request_id"`
	Status      string `json:"status"`
	Model       string `json:"model"`
	UnitType    string `json:"unit_type"`
	SubmittedAt string `json:"submitted_at"`
	KeyID       string `json:"key_id"`
	KeyName     string `json:"key_name"`
	KeyPrefix   string `json:"key_prefix"`
	Hold        string `json:"hold"`
}

// inFlightJobs lists the scope's unfinished tasks, newest first.
func (h *Handler) inFlightJobs(ctx context.Context, q store.LogQuery) ([]InFlight, error) {
	ts, err := h.st.ListTasks(ctx, store.TaskQuery{AccountID: q.AccountID, KeyID: q.KeyID, Unfinished: true})
	if err != nil {
		return nil, err
	}
	out := make([]InFlight, 0, len(ts))
	for _, t := range ts {
		out = append(out, InFlight{
			Object: "task", TaskID: t.ID, RequestID: t.RequestID, Status: t.Status, Model: t.Model,
			UnitType: t.UnitType, SubmittedAt: formatTime(t.SubmittedAt), KeyID: t.KeyID, KeyName: t.KeyName,
			KeyPrefix: t.KeyPrefix, Hold: t.Hold.String(),
		})
	}
	return out, nil
}

// List answers a page of rows for v with the parameters of GET /v1/logs.
func (h *Handler) List(ctx context.Context, v Viewer, params url.Values) (*List, *apierr.Error) {
	p, aerr := parseList(params, v, h.now())
	if aerr != nil {
		return nil, aerr
	}
	q := p.query(v)
	q.Limit = p.limit + 1
	rows, err := h.st.QueryLogs(ctx, q)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	out := &List{
		Object:     "list",
		Currency:   "points",
		Scope:      p.scope.name(),
		PeriodFrom: formatTime(p.window.from),
		PeriodTo:   formatTime(p.window.to),
		HasMore:    len(rows) > p.limit,
	}
	if out.HasMore {
		rows = rows[:p.limit]
		last := rows[len(rows)-1]
		c := cursor{
			V: cursorVersion, From: p.window.from.UnixNano(), To: p.window.to.UnixNano(),
			Asc: p.asc, At: last.CreatedAt.UnixNano(), ID: last.ID,
		}.encode()
		out.NextCursor = &c
	}
	out.Data = make([]Row, len(rows))
	for i := range rows {
		out.Data[i] = toRow(&rows[i], p.include.attempts, h.red)
	}
	if p.include.inFlight && p.after == nil {
		jobs, err := h.inFlightJobs(ctx, q)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		out.InFlight = &jobs
	}
	return out, nil
}

// Entry answers one row and its technical view (GET /v1/logs/{id}). A row
// of another account, or of another key without account scope, is 404.
func (h *Handler) Entry(ctx context.Context, v Viewer, params url.Values, idS string) (*Row, *Tech, *apierr.Error) {
	s, aerr := parseScope(params, v)
	if aerr != nil {
		return nil, nil, aerr
	}
	notFound := apierr.Newf(apierr.LogNotFound, "log %s not found", strconv.Quote(idS))
	id, err := strconv.ParseUint(idS, 10, 64)
	if err != nil {
		return nil, nil, notFound
	}
	row, err := h.st.GetLog(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, notFound
	case err != nil:
		return nil, nil, apierr.Internal(err)
	}
	if row.AccountID != v.AccountID || (!s.account && row.KeyID != v.KeyID) ||
		(s.keyID != "" && row.KeyID != s.keyID) {
		return nil, nil, notFound
	}
	r, t := toRow(&row, true, h.red), toTech(&row, h.red)
	return &r, &t, nil
}
