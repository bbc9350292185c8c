// Package tasksapi answers the poll, list and delete routes of every
// family's tasks (GET /v1/images/generations/{id}, GET
// /v1/images/generations, the video, music, speech and voices ones) from
// the store's Tasks role. A route serves the tasks of its collection (its
// task prefix) whatever their family (the video route serves video,
// avatar, lipsync, motion and clip tasks); each task shows as its own
// family renders it: status words, the in-flight status, a record or a
// final answer, the list item's form.
package tasksapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/tasks"
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

// Route is one poll, list or delete route as the API serves it.
type Route struct {
	// Families are the families that declared it, by name.
	Families map[string]*vendor.FamilySpec
	// Prefix is the collection it serves: its tasks' id prefix.
	Prefix string
	// List is a list route's vocabulary.
	List vendor.ListSpec
	// Merge, when set, gives the fields a list merges into its page (the
	// voices list's presets), as a JSON object.
	Merge func(r *http.Request) ([]byte, error)
}

// task reads the task id of the account on route rt, or 404.
func (a *API) task(r *http.Request, rt *Route, key *store.Key) (store.Task, *vendor.FamilySpec, error) {
	id := r.PathValue("id")
	t, err := a.st.GetTask(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return t, nil, notFound(id)
	case err != nil:
		return t, nil, apierr.Internal(err)
	case t.AccountID != key.AccountID || t.Hidden || store.TaskCollection(t.ID) != rt.Prefix:
		return t, nil, notFound(id)
	}
	spec := rt.Families[t.Family]
	if spec == nil {
		return t, nil, notFound(id)
	}
	return t, spec, nil
}

func notFound(id string) *apierr.Error {
	return apierr.Newf(apierr.NotFound, "no task '%s' (a task is visible only to the account that submitted it)", id)
}

// Poll answers GET .../{id}: a record family's record, in its words;
// else, while the task runs, its head with the family's in-flight status,
// and once it ended exactly the answer a synchronous call would have
// given.
func (a *API) Poll(rt Route) Handler {
	return func(w http.ResponseWriter, r *http.Request, key *store.Key) error {
		t, spec, err := a.task(r, &rt, key)
		if err != nil {
			return err
		}
		if spec.Record {
			status := http.StatusOK
			if !store.TaskTerminal(t.Status) {
				status = tasks.InFlightStatus(spec)
			}
			return writeRaw(w, status, tasks.Record(spec, &t, t.Status))
		}
		if !store.TaskTerminal(t.Status) || t.Result == nil {
			return writeJSON(w, tasks.InFlightStatus(spec), tasks.Head(spec, &t))
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

// Delete answers DELETE .../{id}: an ended task disappears from its
// account (its row stays in the ledger); a running one is a 400.
func (a *API) Delete(rt Route) Handler {
	return func(w http.ResponseWriter, r *http.Request, key *store.Key) error {
		t, spec, err := a.task(r, &rt, key)
		if err != nil {
			return err
		}
		if !store.TaskTerminal(t.Status) {
			return badRequest("'%s' is still %s and cannot be deleted yet; delete it once it has ended", t.ID, tasks.Word(spec, &t, t.Status))
		}
		switch err := a.st.HideTask(r.Context(), t.ID); {
		case errors.Is(err, store.ErrNotFound):
			return notFound(t.ID)
		case errors.Is(err, store.ErrTaskRunning):
			return badRequest("'%s' is still running and cannot be deleted yet", t.ID)
		case err != nil:
			return apierr.Internal(err)
		}
		return writeJSON(w, http.StatusOK, map[string]any{"id": t.ID, "deleted": true})
	}
}

func writeRaw(w http.ResponseWriter, status int, b []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return nil
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
		ID: t.ID, Status: tasks.Word(spec, t, t.Status), Model: t.Model, Endpoint: t.Operation,
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

// listItem is a task as a list shows it: a record family's record; else
// the family's summary (the image list), or its poll body.
func listItem(spec *vendor.FamilySpec, t *store.Task) any {
	switch {
	case spec.Record:
		return json.RawMessage(tasks.Record(spec, t, t.Status))
	case spec.ListItem == "task":
		return summary(spec, t)
	}
	if r := t.Result; store.TaskTerminal(t.Status) && r != nil && len(r.Body) > 0 && json.Valid(r.Body) {
		return json.RawMessage(r.Body)
	}
	return tasks.Head(spec, t)
}

type listPage struct {
	Object     string  `json:"object"`
	Data       []any   `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// barePage is a list without cursor fields (ListSpec.Bare).
type barePage struct {
	Object string `json:"object"`
	Data   []any  `json:"data"`
}

// List answers GET on a route's collection: the account's tasks newest
// first, filtered by status and submit time, a page at a time, each as its
// family shows it; a route that merges plugin fields adds them to the page.
func (a *API) List(rt Route) Handler {
	return func(w http.ResponseWriter, r *http.Request, key *store.Key) error {
		q, err := a.query(&rt, r)
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
		if rt.List.Bare {
			ts = ts[:min(len(ts), limit)]
			for i := range ts {
				if spec := rt.Families[ts[i].Family]; spec != nil {
					page.Data = append(page.Data, listItem(spec, &ts[i]))
				}
			}
			return writeJSON(w, http.StatusOK, barePage{Object: page.Object, Data: page.Data})
		}
		if len(ts) > limit {
			ts, page.HasMore = ts[:limit], true
			last := ts[len(ts)-1]
			c := encodeCursor(last.SubmittedAt, last.ID)
			page.NextCursor = &c
		}
		for i := range ts {
			if spec := rt.Families[ts[i].Family]; spec != nil {
				page.Data = append(page.Data, listItem(spec, &ts[i]))
			}
		}
		if rt.Merge == nil {
			return writeJSON(w, http.StatusOK, page)
		}
		extra, merr := rt.Merge(r)
		if merr != nil {
			return merr
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(page); err != nil {
			return apierr.Internal(err)
		}
		out := b.Bytes()
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(extra, &fields); err != nil {
			return apierr.Internal(fmt.Errorf("a list's merged fields are not a JSON object: %w", err))
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			switch k {
			case "object", "data", "has_more", "next_cursor":
				continue // the page's own
			}
			var serr error
			if out, serr = sjson.SetRawBytes(out, k, fields[k]); serr != nil {
				return apierr.Internal(serr)
			}
		}
		return writeRaw(w, http.StatusOK, out)
	}
}

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.Newf(apierr.InvalidRequest, format, args...)
}

// query reads a list's parameters: status, from, to, limit, cursor.
func (a *API) query(rt *Route, r *http.Request) (store.TaskQuery, *apierr.Error) {
	v := r.URL.Query()
	q := store.TaskQuery{Collection: rt.Prefix}
	ls := rt.List
	lo, hi := ls.LimitDefault, ls.LimitMax
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
			case w == "in_flight" && slices.Contains(ls.Statuses, "in_flight"):
				q.Statuses = append(q.Statuses, store.TaskQueued, store.TaskRunning)
			case slices.Contains(ls.Statuses, w):
				q.Statuses = append(q.Statuses, rt.states(w)...)
			default:
				return q, badRequest("status: unknown value %q (want one of %s, all)", w, strings.Join(ls.Statuses, ", "))
			}
		}
	}
	var err *apierr.Error
	if q.From, err = bound(v.Get("from"), "from", false, ls.ToExcludesDay); err != nil {
		return q, err
	}
	if q.To, err = bound(v.Get("to"), "to", true, ls.ToExcludesDay); err != nil {
		return q, err
	}
	if s := v.Get("cursor"); s != "" && ls.Bare {
		return q, badRequest("cursor: this list is not paged (it shows up to %d, newest first)", hi)
	} else if s != "" {
		at, id, ok := decodeCursor(s)
		if !ok {
			return q, badRequest("cursor: not a cursor this endpoint gave (pass next_cursor back verbatim)")
		}
		q.Before = &store.TaskPosition{SubmittedAt: at, ID: id}
	}
	return q, nil
}

// states are the task states a status word stands for, in the words of
// any family on the route.
func (rt *Route) states(w string) []string {
	var out []string
	for _, st := range []string{store.TaskQueued, store.TaskRunning, store.TaskSucceeded, store.TaskFailed, store.TaskCancelled, store.TaskExpired} {
		for _, spec := range rt.Families {
			if spec.Word(rt.Prefix, st) == w && !slices.Contains(out, st) {
				out = append(out, st)
			}
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
