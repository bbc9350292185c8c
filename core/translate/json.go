package translate

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/jsonw"
)

// Output JSON is built by appending to byte slices: values read from a
// validated input keep their raw bytes, so a string is never unescaped and
// escaped again on its way through.

// bstr views b as a string without copying; b must not change meanwhile.
func bstr(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// sep appends a comma unless b ends where a value or key starts.
func sep(b []byte) []byte {
	n := len(b)
	if n == 0 {
		return b
	}
	switch b[n-1] {
	case '{', '[', ',', ':':
		return b
	}
	return append(b, ',')
}

// key appends `"k":`, with a separating comma when needed; k is trusted.
func key(b []byte, k string) []byte {
	b = sep(b)
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func keyStr(b []byte, k, v string) []byte { return appendStr(key(b, k), v) }

func keyRaw(b []byte, k, raw string) []byte { return append(key(b, k), raw...) }

func keyInt(b []byte, k string, n int64) []byte { return strconv.AppendInt(key(b, k), n, 10) }

// appendStr appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

// appendEscaped appends the inside of a JSON string holding s.
func appendEscaped(b []byte, s string) []byte { return jsonw.AppendEscaped(b, s) }

// inner returns the raw inside of a JSON string value (escapes kept), ""
// for anything else.
func inner(r gjson.Result) string {
	if r.Type != gjson.String || len(r.Raw) < 2 {
		return ""
	}
	return r.Raw[1 : len(r.Raw)-1]
}

// rawOrEmpty returns r.Raw when r is a JSON string, else `""`.
func rawString(r gjson.Result) string {
	if r.Type != gjson.String {
		return `""`
	}
	return r.Raw
}

// isObject reports whether r is a JSON object.
func isObject(r gjson.Result) bool { return r.Type == gjson.JSON && strings.HasPrefix(r.Raw, "{") }

// isArray reports whether r is a JSON array.
func isArray(r gjson.Result) bool { return r.Type == gjson.JSON && strings.HasPrefix(r.Raw, "[") }

// present reports whether a field exists and is not null.
func present(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }

// eachElement calls fn for each element of an array, and for nothing else:
// gjson's ForEach visits a string once, as its own element.
func eachElement(r gjson.Result, fn func(gjson.Result) bool) {
	if r.IsArray() {
		r.ForEach(func(_, v gjson.Result) bool { return fn(v) })
	}
}

// parseBody validates a client body and returns it parsed.
func parseBody(body []byte) (gjson.Result, error) {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, invalid("the request body is not valid JSON")
	}
	root := gjson.Parse(bstr(body)) // a view: what outlives Request is copied (the output, warnings)
	if !isObject(root) {
		return gjson.Result{}, invalid("the request body must be a JSON object")
	}
	return root, nil
}

// requestRoot is parseBody's result for a body that, when checked, was
// found one valid JSON object already.
func requestRoot(body []byte, checked bool) (gjson.Result, error) {
	if checked {
		return gjson.Parse(bstr(body)), nil
	}
	return parseBody(body)
}

// parseAnswer validates an upstream's whole answer and returns it
// parsed. The result views body without a copy: what outlives the call
// (an error's message) is cloned where it is kept.
func parseAnswer(body []byte) (gjson.Result, error) {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, errBadUpstream
	}
	r := gjson.Parse(bstr(body))
	if !isObject(r) {
		return gjson.Result{}, errBadUpstream
	}
	return r, nil
}

// answerRoot is an upstream's whole answer parsed, validated by
// parseAnswer unless the caller checked it already.
func answerRoot(body []byte, checked bool) (gjson.Result, error) {
	if checked {
		return gjson.Parse(bstr(body)), nil
	}
	return parseAnswer(body)
}

// invalid builds the invalid_request error of an untranslatable request.
func invalid(msg string, args ...any) error {
	return apierr.Newf(apierr.InvalidRequest, msg, args...)
}

type upstreamError string

func (e upstreamError) Error() string { return string(e) }

// errBadUpstream is returned for an upstream body that is not a JSON object.
const errBadUpstream = upstreamError("translate: the upstream sent a body that is not a JSON object")

// warnings collects dropped field names once each, in order.
type warnings []string

func (w *warnings) add(name string) {
	for _, s := range *w {
		if s == name {
			return
		}
	}
	*w = append(*w, strings.Clone(name)) // name may view the client's body
}

// dataURL splits "data:<mime>;base64,<data>".
func dataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, found = strings.CutSuffix(head, ";base64")
	if !found || mime == "" || strings.ContainsAny(mime, `"\`) {
		return "", "", false
	}
	return mime, data, true
}

// isHTTPURL reports whether u is an http(s) URL.
func isHTTPURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// mimeFromURL guesses a media type from a URL's extension ("" if unknown).
func mimeFromURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	dot := strings.LastIndexByte(u, '.')
	if dot < 0 || strings.IndexByte(u[dot:], '/') >= 0 {
		return ""
	}
	switch strings.ToLower(u[dot+1:]) {
	case "jpg", "jpeg":
		return "image/jpeg"
	case "png":
		return "image/png"
	case "gif":
		return "image/gif"
	case "webp":
		return "image/webp"
	case "pdf":
		return "application/pdf"
	case "mp3":
		return "audio/mp3"
	case "wav":
		return "audio/wav"
	case "mp4":
		return "video/mp4"
	}
	return ""
}

// jsonObjectString turns a tool-arguments string into a JSON object text:
// "" becomes {}, ok is false when it is not an object.
func jsonObjectString(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return "{}", true
	}
	if !gjson.Valid(t) || !isObject(gjson.Parse(t)) {
		return "", false
	}
	return t, true
}

// unescape returns the value of a raw JSON string inside (escapes kept).
func unescape(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	return gjson.Parse(`"` + raw + `"`).Str
}

// eachField calls fn with each top-level field of a client body that is
// present and not null, in order, until fn fails.
func eachField(root gjson.Result, fn func(k, v gjson.Result) error) error {
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		if present(v) {
			err = fn(k, v)
		}
		return err == nil
	})
	return err
}
