// Package rules holds what every family's rules package needs: refusals
// in the gateway's shape, an upstream's refusal, the readers of JSON (and
// multipart text) fields, a task record's builder, the upstream-reported
// seconds that settle, and a model's settings. It speaks no vendor's wire
// and no family's vocabulary.
package rules

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/netguard"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Invalid is the gateway's 400 invalid_request with msg.
func Invalid(msg string) *vendor.JobError {
	return &vendor.JobError{Status: http.StatusBadRequest, Code: "invalid_request", Message: msg}
}

// Rule9 are the refusal statuses of the digital-human and editing
// families (errors rule 9): 403 model_not_allowed, and 404
// model_not_found for a route's implied model this gateway does not
// configure.
var Rule9 = vendor.Refusals{NotAllowed: http.StatusForbidden, NotFound: http.StatusNotFound}

// ISOTime is t as the digital-human records write it: ISO 8601 with its
// offset (2026-01-02T15:04:05+00:00), in UTC.
func ISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-07:00") }

// Operator is the operator's error (a model setting the rules cannot
// read): 500 internal_error naming it.
func Operator(msg string) *vendor.JobError {
	return &vendor.JobError{Status: http.StatusInternalServerError, Code: "internal_error", Message: msg}
}

// Refused is the outcome of a request that Run, Submit or Poll finds
// invalid (a plugin re-reads the request there): the plan's refusal as a
// failed job.
func Refused(e *vendor.JobError) *vendor.JobOutcome {
	return &vendor.JobOutcome{State: vendor.JobFailed, Status: e.Status, Error: e}
}

// Failed is the outcome of an upstream's refusal: its status and message
// (errors rule 4: the gateway maps the status and renders the error in the
// client's shape).
func Failed(status int, body []byte) *vendor.JobOutcome {
	return &vendor.JobOutcome{State: vendor.JobFailed, Status: status,
		Error: &vendor.JobError{Status: status, Message: UpstreamMessage(status, body)}}
}

// UpstreamMessage is the message of an upstream error body: OpenAI's
// error.message, or the other common places (FastAPI's detail, as a
// string, an object with a message or an error, or a list of
// validation errors), else the body's text, else the status text.
func UpstreamMessage(status int, body []byte) string {
	if gjson.ValidBytes(body) {
		for _, p := range [...]string{"error.message", "error", "message", "detail", "detail.message", "detail.error",
			"detail.0.msg", "errors.0.message", "msg"} {
			v := gjson.GetBytes(body, p)
			if p == "error" && v.Str == http.StatusText(status) && gjson.GetBytes(body, "message").Exists() {
				continue // a NestJS body: error is the status text, message says why
			}
			if v.Type == gjson.String && strings.TrimSpace(v.Str) != "" {
				return v.Str
			}
		}
	}
	text := strings.TrimSpace(string(body))
	if text != "" && utf8.ValidString(text) && !bytes.ContainsRune(body, 0) {
		if len(text) > 1000 {
			text = text[:1000]
			for !utf8.ValidString(text) {
				text = text[:len(text)-1]
			}
		}
		return text
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "upstream status " + strconv.Itoa(status)
}

// Object reads a request body as a JSON object (a multipart request's text
// fields arrive as one).
func Object(body []byte) (gjson.Result, *vendor.JobError) {
	if len(body) == 0 || !gjson.ValidBytes(body) {
		return gjson.Result{}, Invalid("The request body must be a JSON object.")
	}
	r := gjson.ParseBytes(body)
	if !r.IsObject() {
		return gjson.Result{}, Invalid("The request body must be a JSON object.")
	}
	return r, nil
}

// Plan is a family's Validate: a request of another family, or one parse
// refuses, is a refusal (nothing held); else hold says what it holds.
func Plan[R any](req *vendor.JobRequest, family string, parse func(*vendor.JobRequest) (R, *vendor.JobError),
	hold func(R) *vendor.JobPlan) (R, *vendor.JobPlan) {
	var zero R
	if req.Family != "" && req.Family != family {
		return zero, &vendor.JobPlan{Error: Invalid("not a " + family + " request (family " + req.Family + ").")}
	}
	r, err := parse(req)
	if err != nil {
		return zero, &vendor.JobPlan{Error: err}
	}
	return r, hold(r)
}

// WithPolicy binds a parser that checks the links a client hands over to
// the private-address policy's switch (Config.AllowPrivateURLs), for Plan.
func WithPolicy[R any](parse func(*vendor.JobRequest, bool) (R, *vendor.JobError), allowPrivate bool) func(*vendor.JobRequest) (R, *vendor.JobError) {
	return func(req *vendor.JobRequest) (R, *vendor.JobError) { return parse(req, allowPrivate) }
}

// HoldRecord is a plan holding count units at tier ("" the base price)
// whose task record is the start every task shows (TaskRecord).
func HoldRecord(req *vendor.JobRequest, tier string, count int64) *vendor.JobPlan {
	return &vendor.JobPlan{Hold: []vendor.Units{{Tier: tier, Count: count}}, Record: TaskRecord(req).Bytes()}
}

// LinkField reads a body member that is a link a client hands over for
// an upstream to fetch: a string passing PublicURL.
func LinkField(name string, v gjson.Result, allowPrivate bool) (string, *vendor.JobError) {
	if v.Type != gjson.String {
		return "", Invalid(name + " must be a public http(s) link; got " + v.Raw + ".")
	}
	return v.Str, PublicURL(name, v.Str, allowPrivate)
}

// Fields walks a request body's members in body order: a null is an
// omitted field and skipped, model must be a string, and fn reads every
// other member; its first refusal stops the walk and is returned.
func Fields(body []byte, fn func(name string, v gjson.Result) *vendor.JobError) *vendor.JobError {
	obj, bad := Object(body)
	if bad != nil {
		return bad
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		switch name := k.String(); {
		case v.Type == gjson.Null:
		case name == "model":
			if v.Type != gjson.String {
				bad = Invalid("model must be a string.")
			}
		default:
			bad = fn(name, v)
		}
		return bad == nil
	})
	return bad
}

// WholeNumber reads an integer: a JSON number with no fraction, or (a
// multipart field) a string of digits.
func WholeNumber(v gjson.Result) (int, bool) {
	switch v.Type {
	case gjson.Number:
		f := v.Num
		if f != math.Trunc(f) || f < -1e9 || f > 1e9 {
			return 0, false
		}
		return int(f), true
	case gjson.String:
		n, err := strconv.Atoi(strings.TrimSpace(v.Str))
		return n, err == nil
	}
	return 0, false
}

// Number reads a number: a JSON number, or (a multipart field) a string
// of one.
func Number(v gjson.Result) (float64, bool) {
	switch v.Type {
	case gjson.Number:
		return v.Num, !math.IsInf(v.Num, 0) && !math.IsNaN(v.Num)
	case gjson.String:
		f, err := strconv.ParseFloat(strings.TrimSpace(v.Str), 64)
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	return 0, false
}

// Boolean reads a JSON bool, or (a multipart field) "true" / "false".
func Boolean(v gjson.Result) (bool, bool) {
	switch v.Type {
	case gjson.True:
		return true, true
	case gjson.False:
		return false, true
	case gjson.String:
		switch strings.ToLower(strings.TrimSpace(v.Str)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// Chars is the number of characters of s, Unicode code points (the unit
// of per-character prices).
func Chars(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// HTTPURL reports whether s is an http(s) URL with a host.
func HTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Hostname() != ""
}

// PublicURL checks a link a client hands over for an upstream to fetch
// (an avatar's source, a lip sync's audio): an http(s) URL with a host
// and, unless allowPrivate, not an address the private-address policy
// refuses written as such (a private, loopback or link-local IP literal,
// localhost). A name is resolved by whoever fetches it, through the same
// policy (httpvendor.Fetch). field names the body field in the refusal.
func PublicURL(field, raw string, allowPrivate bool) *vendor.JobError {
	if !HTTPURL(raw) {
		return Invalid(field + " must be a public http(s) link; got " + Quote(raw) + ".")
	}
	if allowPrivate {
		return nil
	}
	u, _ := url.Parse(raw)
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	ip, err := netip.ParseAddr(host)
	if err == nil && netguard.PrivateAddr(ip) || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return Invalid(field + " must be a public link: " + Quote(raw) + " points to a private, loopback or link-local address.")
	}
	return nil
}

var reLink = regexp.MustCompile(`https?://[^\s"'<>]+`)

// FindURL is the first http(s) link in text (a share text with a link
// inside), trailing punctuation trimmed; "" when there is none.
func FindURL(text string) string {
	for _, m := range reLink.FindAllString(text, -1) {
		m = strings.TrimRight(m, ".,;:!?)]}，。；！？」』")
		if HTTPURL(m) {
			return m
		}
	}
	return ""
}

// SettledSeconds are the seconds an upstream reported, rounded up to whole
// seconds and never above held (the excess of the hold is refunded).
func SettledSeconds(reported float64, held int64) int64 {
	if reported <= 0 || math.IsNaN(reported) {
		return 0
	}
	n := int64(math.Ceil(reported - 1e-9))
	return min(n, held)
}

// IntSetting reads a whole-number model setting; ok is false when it is
// absent, and err set when it is no whole number.
func IntSetting(m vendor.JobModel, name string) (n int, ok bool, err *vendor.JobError) {
	s, ok := m.Settings[name]
	if !ok || strings.TrimSpace(s) == "" {
		return 0, false, nil
	}
	n, e := strconv.Atoi(strings.TrimSpace(s))
	if e != nil || n < 0 {
		return 0, false, Operator("model " + m.ID + ": setting " + name + " = " + strconv.Quote(s) + " is not a whole number")
	}
	return n, true, nil
}

// ListSetting reads a comma-separated model setting ("480p,720p").
func ListSetting(m vendor.JobModel, name string) []string {
	var out []string
	for _, it := range strings.Split(m.Settings[name], ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// Ref is the resolved reference of field, if the gateway resolved one.
func Ref(req *vendor.JobRequest, field string) *vendor.JobRef {
	for i := range req.Refs {
		if req.Refs[i].Field == field {
			return &req.Refs[i]
		}
	}
	return nil
}

// Record builds a JSON object member by member, in order: a task's record
// or an answer.
type Record struct{ b []byte }

// NewRecord starts a record.
func NewRecord() *Record { return &Record{b: append(make([]byte, 0, 256), '{')} }

// TaskRecord starts the record every task shows: {id, status, model,
// created_at (Unix seconds)}; the gateway writes the status word.
func TaskRecord(req *vendor.JobRequest) *Record {
	created := req.Submitted
	if created.IsZero() {
		created = time.Now()
	}
	return NewRecord().Str("id", req.TaskID).Str("status", "queued").Str("model", req.Model.ID).Int("created_at", created.Unix())
}

func (r *Record) name(k string) {
	if len(r.b) > 1 {
		r.b = append(r.b, ',')
	}
	r.b = appendString(r.b, k)
	r.b = append(r.b, ':')
}

// Str adds a string member.
func (r *Record) Str(k, v string) *Record {
	r.name(k)
	r.b = appendString(r.b, v)
	return r
}

// Int adds a number member.
func (r *Record) Int(k string, v int64) *Record {
	r.name(k)
	r.b = strconv.AppendInt(r.b, v, 10)
	return r
}

// Float adds a number member.
func (r *Record) Float(k string, v float64) *Record {
	r.name(k)
	r.b = strconv.AppendFloat(r.b, v, 'f', -1, 64)
	return r
}

// Raw adds a member of raw JSON (null, an object...).
func (r *Record) Raw(k, raw string) *Record {
	r.name(k)
	r.b = append(r.b, raw...)
	return r
}

// Bytes ends the record.
func (r *Record) Bytes() []byte { return append(r.b, '}') }

// appendString appends s as a JSON string, without escaping <, > and &
// (links carry & in their query).
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// List is a JSON array of n records, item(i) the i-th.
func List(n int, item func(i int) *Record) string {
	b := []byte{'['}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item(i).Bytes()...)
	}
	return string(append(b, ']'))
}

// Answer is a succeeded outcome whose answer is the JSON body, settling
// units.
func Answer(body []byte, units ...vendor.Units) *vendor.JobOutcome {
	return &vendor.JobOutcome{State: vendor.JobSucceeded, Status: http.StatusOK,
		Headers: map[string]string{"content-type": "application/json"}, Body: body, Units: units}
}

// Kept is the succeeded outcome of a result the upstream keeps (a cloned
// voice, an avatar): its answer and units, and the upstream's own id of it
// as the task's reference, what later calls naming the task receive
// (JobRef.UpstreamRef).
func Kept(body []byte, upstreamID string, units ...vendor.Units) *vendor.JobOutcome {
	out := Answer(body, units...)
	out.UpstreamRef = upstreamID
	return out
}

// Preset is a platform's ready-made item: a voice, an avatar.
type Preset struct{ ID, Name string }

// Presets is a presets read's answer, {member: [{id, name}]}.
func Presets(member string, ps []Preset) *vendor.JobOutcome {
	return Answer(NewRecord().Raw(member, List(len(ps), func(i int) *Record {
		return NewRecord().Str("id", ps[i].ID).Str("name", ps[i].Name)
	})).Bytes())
}

// Quote is s as a JSON string.
func Quote(s string) string { return string(appendString(nil, s)) }
