package logsapi

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/store"
)

const (
	defaultLimit = 50
	maxLimit     = 200
	// maxSummaryWindow is the spec's 365 days, checked before the window
	// is widened to whole minutes.
	maxSummaryWindow = 365 * 24 * time.Hour
)

// Bounds of any window, inside what unix nanoseconds can hold.
var (
	minTime = time.Unix(0, 0).UTC()
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

var validStatuses = map[string]bool{
	store.StatusSuccess: true, store.StatusError: true,
	store.StatusInterrupted: true, store.StatusRejected: true,
}

var validUnitTypes = map[string]bool{
	"image": true, "video": true, "music": true, "audio": true, "avatar": true,
	"voice": true, "search": true, "transcript": true, "chat": true,
}

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.Newf(apierr.InvalidRequest, format, args...)
}

// scope is whose rows a request reads.
type scope struct {
	account bool   // the whole account (else: the calling key only)
	keyID   string // with account scope: only this key's rows ("" = all)
}

func (s scope) name() string {
	if s.account {
		return "account"
	}
	return "key"
}

// Viewer is who reads the logs and what it may read: an API key
// (ViewerOf) or a person signed into the console.
type Viewer struct {
	AccountID string
	// KeyID is the key whose own rows scope=key reads; "" refuses
	// scope=key (a console owner reads with scope=account).
	KeyID string
	// AccountScope lets scope=account read the whole account;
	// NoAccountScope says why it may not, when it may not.
	AccountScope   bool
	NoAccountScope string
}

// ViewerOf is what an API key may read (call logs rule 8): its own rows,
// and the whole account with the console's toggle unless it is an
// employee or desktop key. Agent keys are refused before this point.
func ViewerOf(k store.Key) Viewer {
	v := Viewer{AccountID: k.AccountID, KeyID: k.ID, AccountScope: k.LogsAccountScope}
	switch {
	case k.Kind == store.KindEmployee || k.Kind == store.KindDesktop:
		v.AccountScope, v.NoAccountScope = false, "scope=account is not available to employee and desktop keys"
	case !k.LogsAccountScope:
		v.NoAccountScope = "scope=account needs the key's account-wide logs toggle; enable it in the console"
	}
	return v
}

// parseScope applies the viewer's visibility to scope and key_id.
func parseScope(q url.Values, v Viewer) (scope, *apierr.Error) {
	var s scope
	switch sc := q.Get("scope"); sc {
	case "", "key":
		if v.KeyID == "" {
			return s, badRequest("scope=key reads one key's rows; pass scope=account, with key_id for one key")
		}
	case "account":
		if !v.AccountScope {
			return s, apierr.New(apierr.PermissionDenied, v.NoAccountScope)
		}
		s.account = true
	default:
		return s, badRequest("scope must be key or account, got %q", sc)
	}
	if k := q.Get("key_id"); k != "" {
		if !s.account {
			return s, badRequest("key_id is only accepted with scope=account")
		}
		s.keyID = k
	}
	return s, nil
}

// window is a resolved [from, to) range.
type window struct {
	from, to time.Time
	// relative: resolved from period against now (not from and to).
	relative bool
}

// parseWindow resolves period or from/to against now. allowAll tells
// whether period=all is accepted (it is not on the summary).
func parseWindow(q url.Values, now time.Time, allowAll bool) (window, *apierr.Error) {
	now = now.UTC()
	fromS, toS := q.Get("from"), q.Get("to")
	if fromS != "" || toS != "" {
		if fromS == "" || toS == "" {
			return window{}, badRequest("from and to must be given together")
		}
		from, err := parseBound(fromS, false)
		if err != nil {
			return window{}, badRequest("from: %s", err.Error())
		}
		to, err := parseBound(toS, true)
		if err != nil {
			return window{}, badRequest("to: %s", err.Error())
		}
		if from.After(to) {
			return window{}, badRequest("from (%s) is after to (%s)", fromS, toS)
		}
		return window{from: from, to: to}, nil
	}
	w := window{to: now, relative: true}
	switch p := q.Get("period"); p {
	case "", "30d":
		w.from = now.Add(-30 * 24 * time.Hour)
	case "7d":
		w.from = now.Add(-7 * 24 * time.Hour)
	case "today":
		w.from = now.Truncate(24 * time.Hour)
	case "this_month":
		w.from = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	case "all":
		if !allowAll {
			return window{}, badRequest("period=all is not accepted on the summary; the window is at most 365 days")
		}
		w.from = minTime
	default:
		return window{}, badRequest("period must be one of today, 7d, 30d, this_month, all; got %q", p)
	}
	return w, nil
}

// parseBound reads YYYY-MM-DD (a UTC day) or an RFC 3339 timestamp. A
// date-form upper bound is the start of the next day, so the day is included.
func parseBound(s string, upper bool) (time.Time, error) {
	var t time.Time
	if len(s) == len("2006-01-02") {
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return t, errBound(s)
		}
		t = d
		if upper {
			t = t.AddDate(0, 0, 1)
		}
	} else {
		ts, err := time.Parse(time.RFC3339Nano, rfc3339(s))
		if err != nil {
			return t, errBound(s)
		}
		t = ts.UTC()
	}
	if t.Before(minTime) {
		t = minTime
	}
	if t.After(maxTime) {
		t = maxTime
	}
	return t, nil
}

// rfc3339 undoes what a client's URL building does to a timestamp: an
// offset's '+' left unescaped in a query arrives as a space. It also takes
// the lower-case 't' and 'z', and the space between date and time, that
// RFC 3339 allows and Go's parser does not.
func rfc3339(s string) string {
	n := len(s)
	if n < len("2006-01-02T15:04:05Z") {
		return s
	}
	b := []byte(s)
	if b[10] == 't' || b[10] == ' ' {
		b[10] = 'T'
	}
	if b[n-1] == 'z' {
		b[n-1] = 'Z'
	}
	if n >= len("2006-01-02T15:04:05+07:00") && b[n-6] == ' ' && b[n-3] == ':' {
		b[n-6] = '+'
	}
	return string(b)
}

type boundError string

func (e boundError) Error() string { return string(e) }

func errBound(s string) error {
	return boundError("expected YYYY-MM-DD or an RFC 3339 timestamp, got " + strconv.Quote(s))
}

// filters are the row-level filters of the list and the export.
type filters struct {
	models, statuses, unitTypes, errorCodes []string
	ref                                     string
}

// rowFilterParams are refused on the summary.
var rowFilterParams = []string{"model", "status", "unit_type", "error_code", "ref"}

func parseFilters(q url.Values) (filters, *apierr.Error) {
	f := filters{
		models:     splitList(q.Get("model")),
		statuses:   splitList(q.Get("status")),
		unitTypes:  splitList(q.Get("unit_type")),
		errorCodes: splitList(q.Get("error_code")),
		ref:        strings.TrimSpace(q.Get("ref")),
	}
	for _, s := range f.statuses {
		if !validStatuses[s] {
			return f, badRequest("status %q is not one of success, error, interrupted, rejected", s)
		}
	}
	for _, u := range f.unitTypes {
		if !validUnitTypes[u] {
			return f, badRequest("unit_type %q is not one of image, video, music, audio, avatar, voice, search, transcript, chat", u)
		}
	}
	return f, nil
}

// splitList splits a comma-separated value, dropping empty items; an empty
// value is no filter (nil).
func splitList(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func parseOrder(q url.Values) (asc bool, err *apierr.Error) {
	switch v := q.Get("order"); v {
	case "", "desc":
		return false, nil
	case "asc":
		return true, nil
	default:
		return false, badRequest("order must be desc or asc, got %q", v)
	}
}

func parseLimit(q url.Values) (int, *apierr.Error) {
	v := q.Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badRequest("limit must be an integer from 1 to %d, got %q", maxLimit, v)
	}
	return n, nil
}

// include is the include parameter of the list.
type include struct {
	attempts, inFlight bool
}

func parseInclude(q url.Values) (include, *apierr.Error) {
	if !q.Has("include") || q.Get("include") == "" {
		return include{attempts: true}, nil
	}
	var inc include
	for _, tok := range splitList(q.Get("include")) {
		switch tok {
		case "attempts":
			inc.attempts = true
		case "in_flight":
			inc.inFlight = true
		case "none":
		default:
			return inc, badRequest("include token %q is not one of attempts, in_flight, none", tok)
		}
	}
	return inc, nil
}

// listParams is a parsed GET /v1/logs (or export) request.
type listParams struct {
	scope   scope
	window  window
	filters filters
	asc     bool
	limit   int
	include include
	after   *store.LogPosition // nil on the first page
}

// parseList parses the list's parameters. A cursor overrides the window
// (frozen on page 1) and must match the order.
func parseList(q url.Values, v Viewer, now time.Time) (listParams, *apierr.Error) {
	var p listParams
	var err *apierr.Error
	if p.scope, err = parseScope(q, v); err != nil {
		return p, err
	}
	if p.filters, err = parseFilters(q); err != nil {
		return p, err
	}
	if p.asc, err = parseOrder(q); err != nil {
		return p, err
	}
	if p.limit, err = parseLimit(q); err != nil {
		return p, err
	}
	if p.include, err = parseInclude(q); err != nil {
		return p, err
	}
	if cs := q.Get("cursor"); cs != "" {
		c, derr := decodeCursor(cs)
		if derr != nil {
			return p, badRequest("%s", derr.Error())
		}
		if c.Asc != p.asc {
			return p, badRequest("cursor was issued for order=%s; pass the same order with it", orderName(c.Asc))
		}
		p.window.from, p.window.to = c.window()
		p.after = c.position()
		return p, nil
	}
	p.window, err = parseWindow(q, now, true)
	return p, err
}

// parseExport parses the export's parameters: the list's, without cursor;
// limit and include do not apply.
func parseExport(q url.Values, v Viewer, now time.Time) (listParams, *apierr.Error) {
	var p listParams
	var err *apierr.Error
	if q.Get("cursor") != "" {
		return p, badRequest("cursor is not accepted on the export; it always covers the whole window")
	}
	if p.scope, err = parseScope(q, v); err != nil {
		return p, err
	}
	if p.filters, err = parseFilters(q); err != nil {
		return p, err
	}
	if p.asc, err = parseOrder(q); err != nil {
		return p, err
	}
	p.window, err = parseWindow(q, now, true)
	return p, err
}

// parseSummary parses the summary's parameters: scope and window only,
// at most 365 days. A period's window, which ends now, is widened to whole
// minutes: the cache's bucket. A from and to window is answered exactly.
func parseSummary(q url.Values, v Viewer, now time.Time) (scope, window, *apierr.Error) {
	for _, name := range rowFilterParams {
		if q.Get(name) != "" {
			return scope{}, window{}, badRequest("%s is a row filter and is not accepted on the summary", name)
		}
	}
	s, err := parseScope(q, v)
	if err != nil {
		return s, window{}, err
	}
	w, err := parseWindow(q, now, false)
	if err != nil {
		return s, w, err
	}
	if w.to.Sub(w.from) > maxSummaryWindow {
		return s, w, badRequest("the summary window is at most 365 days")
	}
	if !w.relative {
		return s, w, nil
	}
	w.from = w.from.Truncate(time.Minute)
	if t := w.to.Truncate(time.Minute); !t.Equal(w.to) {
		w.to = t.Add(time.Minute)
	}
	return s, w, nil
}

func orderName(asc bool) string {
	if asc {
		return "asc"
	}
	return "desc"
}

// query builds the store query of a list or export.
func (p listParams) query(v Viewer) store.LogQuery {
	q := store.LogQuery{
		AccountID:  v.AccountID,
		KeyID:      p.scope.keyID,
		From:       p.window.from,
		To:         p.window.to,
		Models:     p.filters.models,
		Statuses:   p.filters.statuses,
		UnitTypes:  p.filters.unitTypes,
		ErrorCodes: p.filters.errorCodes,
		Ref:        p.filters.ref,
		Asc:        p.asc,
		After:      p.after,
	}
	if !p.scope.account {
		q.KeyID = v.KeyID
	}
	return q
}
