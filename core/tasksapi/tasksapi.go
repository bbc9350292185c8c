// Package tasksapi answers the poll and list routes of every family's
// async tasks (GET /v1/images/generations/{id}, GET /v1/images/generations,
// and the video, music and speech ones) from the store's Tasks role. What
// differs between families comes from their FamilySpec: status words, the
// in-flight status, the list item's form and limits.
package tasksapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// API serves the task routes. It is safe for concurrent use.
type API struct {
	st  store.Tasks
	now func() time.Time
	log hclog.Logger
}

// New returns the API over st.
func New(st store.Tasks, now func() time.Time, log hclog.Logger) *API {
	return &API{st: st, now: now, log: log.Named("tasks-api")}
}

// Handler answers one route for an authenticated key; it returns the
// error to show, rendered by the caller.
type Handler func(w http.ResponseWriter, r *http.Request, key *store.Key) error

func notFound(id string) *apierr.Error {
	return apierr.Newf(apierr.NotFound, "no task '%s' (a task is visible only to the account that submitted it)", id)
}

// Poll answers GET .../{id}: while the task runs, its head with the
// family's in-flight status; once it ended, exactly the answer a
// synchronous call would have given.
func (a *API) Poll(spec *vendor.FamilySpec) Handler {
	return func(w http.ResponseWriter, r *http.Request, key *store.Key) error {
		id := r.PathValue("id")
		t, err := a.st.GetTask(r.Context(), id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return notFound(id)
		case err != nil:
			return apierr.Internal(err)
		case t.AccountID != key.AccountID || t.Family != spec.Name || t.Hidden:
			return notFound(id)
		}
		if !store.TaskTerminal(t.Status) || t.Result == nil {
			return writeJSON(w, inFlightStatus(spec), head(spec, &t))
		}
		res := t.Result
		if res.BodyGone || res.DropOnRead && len(res.Body) == 0 {
			e := apierr.Newf(apierr.NotFound, "the result of task '%s' was delivered once and is no longer kept (a base64 result is kept until its first successful poll or %s); find it with GET /v1/logs?ref=%s", t.ID, "24 hours", t.ID)
			e.Status, e.Code = http.StatusGone, "result_gone"
			return e
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		for k, v := range res.Header {
			h.Set(k, v)
		}
		w.WriteHeader(res.HTTPStatus)
		_, werr := w.Write(res.Body)
		if res.DropOnRead && werr == nil && res.HTTPStatus >= 200 && res.HTTPStatus < 300 {
			if err := a.st.DropTaskResult(r.Context(), t.ID); err != nil {
				a.log.Error("could not drop a delivered result", "task_id", t.ID, "error", err)
			}
		}
		return nil
	}
}

func inFlightStatus(spec *vendor.FamilySpec) int {
	if spec.InFlightStatus != 0 {
		return spec.InFlightStatus
	}
	return http.StatusOK
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // links carry & in their query
	if err := enc.Encode(v); err != nil {
		return apierr.Internal(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
	return nil
}

// taskHead is a task's answer while it runs.
type taskHead struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Model     string `json:"model"`
	CreatedAt int64  `json:"created_at"`
}

func word(spec *vendor.FamilySpec, state string) string {
	if w, ok := spec.StatusWords[state]; ok {
		return w
	}
	return state
}

func head(spec *vendor.FamilySpec, t *store.Task) taskHead {
	return taskHead{ID: t.ID, Status: word(spec, t.Status), Model: t.Model, CreatedAt: t.SubmittedAt.Unix()}
}

// item is a task summary: the image list's item.
type item struct {
	ID          string      `json:"id"`
	Status      string      `json:"status"`
	Model       string      `json:"model"`
	Endpoint    string      `json:"endpoint"`
	CreatedAt   int64       `json:"created_at"`
	StartedAt   *int64      `json:"started_at"`
	CompletedAt *int64      `json:"completed_at"`
	UnitCount   int64       `json:"unit_count"`
	Cost        money.Nano  `json:"cost"`
	ErrorCode   *string     `json:"error_code"`
	RequestID   string      `json:"request_id"`
	Result      *itemResult `json:"result,omitempty"`
}

type itemResult struct {
	URLs      []string `json:"urls"`
	ExpiresAt *int64   `json:"expires_at"`
}

func unix(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.Unix()
	return &n
}

func summary(spec *vendor.FamilySpec, t *store.Task) item {
	it := item{
		ID: t.ID, Status: word(spec, t.Status), Model: t.Model, Endpoint: t.Operation,
		CreatedAt: t.SubmittedAt.Unix(), StartedAt: unix(t.StartedAt), CompletedAt: unix(t.CompletedAt),
		RequestID: t.RequestID,
	}
	if r := t.Result; r != nil {
		it.UnitCount, it.Cost = r.Units, r.Cost
		if r.ErrorCode != "" {
			code := r.ErrorCode
			it.ErrorCode = &code
		}
		if t.Status == store.TaskSucceeded {
			urls := r.URLs
			if urls == nil {
				urls = []string{}
			}
			it.Result = &itemResult{URLs: urls}
			if r.ExpiresAt != nil {
				it.Result.ExpiresAt = unix(*r.ExpiresAt)
			}
		}
	}
	return it
}

// pollBody is a task as its poll shows it (the other families' list item).
func pollBody(spec *vendor.FamilySpec, t *store.Task) any {
	if r := t.Result; store.TaskTerminal(t.Status) && r != nil && len(r.Body) > 0 && json.Valid(r.Body) {
		return json.RawMessage(r.Body)
	}
	return head(spec, t)
}

type listPage struct {
	Object     string  `json:"object"`
	Data       []any   `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// List answers GET on a family's collection: the account's tasks newest
// first, filtered by status and submit time, a page at a time.
func (a *API) List(spec *vendor.FamilySpec) Handler {
	return func(w http.ResponseWriter, r *http.Request, key *store.Key) error {
		q, err := a.query(spec, r)
		if err != nil {
			return err
		}
		q.AccountID = key.AccountID
		limit := q.Limit
		q.Limit = limit + 1
		ts, serr := a.st.ListTasks(r.Context(), q)
		if serr != nil {
			return apierr.Internal(serr)
		}
		page := listPage{Object: "list", Data: []any{}}
		if len(ts) > limit {
			ts, page.HasMore = ts[:limit], true
			last := ts[len(ts)-1]
			c := encodeCursor(last.SubmittedAt, last.ID)
			page.NextCursor = &c
		}
		for i := range ts {
			if spec.ListItem == "task" {
				page.Data = append(page.Data, summary(spec, &ts[i]))
			} else {
				page.Data = append(page.Data, pollBody(spec, &ts[i]))
			}
		}
		return writeJSON(w, http.StatusOK, page)
	}
}

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.Newf(apierr.InvalidRequest, format, args...)
}

// query reads a list's parameters: status, from, to, limit, cursor.
func (a *API) query(spec *vendor.FamilySpec, r *http.Request) (store.TaskQuery, *apierr.Error) {
	v := r.URL.Query()
	q := store.TaskQuery{Family: spec.Name}
	lo, hi := spec.ListLimitDefault, spec.ListLimitMax
	if lo <= 0 {
		lo = 30
	}
	if hi <= 0 {
		hi = 100
	}
	q.Limit = lo
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > hi {
			return q, badRequest("limit: want an integer from 1 to %d, got %q", hi, s)
		}
		q.Limit = n
	}
	if s := v.Get("status"); s != "" && s != "all" {
		for _, w := range strings.Split(s, ",") {
			w = strings.TrimSpace(w)
			switch {
			case w == "" || w == "all":
			case w == "in_flight" && slices.Contains(spec.ListStatuses, "in_flight"):
				q.Statuses = append(q.Statuses, store.TaskQueued, store.TaskRunning)
			case slices.Contains(spec.ListStatuses, w):
				q.Statuses = append(q.Statuses, states(spec, w)...)
			default:
				return q, badRequest("status: unknown value %q (want one of %s, all)", w, strings.Join(spec.ListStatuses, ", "))
			}
		}
	}
	var err *apierr.Error
	if q.From, err = bound(v.Get("from"), "from", false, spec.ListToExcludesDay); err != nil {
		return q, err
	}
	if q.To, err = bound(v.Get("to"), "to", true, spec.ListToExcludesDay); err != nil {
		return q, err
	}
	if s := v.Get("cursor"); s != "" {
		at, id, ok := decodeCursor(s)
		if !ok {
			return q, badRequest("cursor: not a cursor this endpoint gave (pass next_cursor back verbatim)")
		}
		q.Before = &store.TaskPosition{SubmittedAt: at, ID: id}
	}
	return q, nil
}

// states are the task states a family's status word stands for.
func states(spec *vendor.FamilySpec, w string) []string {
	var out []string
	for _, st := range []string{store.TaskQueued, store.TaskRunning, store.TaskSucceeded, store.TaskFailed, store.TaskCancelled, store.TaskExpired} {
		if word(spec, st) == w {
			out = append(out, st)
		}
	}
	return out
}

// bound reads a from or to: Unix seconds, RFC 3339, or YYYY-MM-DD (a UTC
// day). A date-form to excludes that day where the family says so (the
// images list), else it includes it.
func bound(s, name string, isTo, toExcludesDay bool) (time.Time, *apierr.Error) {
	if s == "" {
		return time.Time{}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, badRequest("%s: want Unix seconds, RFC 3339 or YYYY-MM-DD, got %q", name, s)
	}
	if isTo && !toExcludesDay {
		d = d.AddDate(0, 0, 1)
	}
	return d, nil
}

func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixNano(), 10) + ":" + id))
}

func decodeCursor(s string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", false
	}
	ns, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.Unix(0, n).UTC(), id, true
}

// Protocol is the error shape of every task route.
const Protocol = protocol.OpenAIChat
