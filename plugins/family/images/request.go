package images

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Response formats (the request's response_format).
const (
	FormatURL = "url" // the default
	FormatB64 = "b64_json"
)

// Request is an image request as the rules read it. The fields the rules
// do not read are kept in Extra, in body order, to pass through upstream.
type Request struct {
	Operation string
	Prompt    string
	N         int    // 1..10; 1 when omitted
	Size      string // as sent, "" when omitted
	// Width and Height come from a WxH size; 0 when the size is omitted
	// or of another form ("auto").
	Width, Height  int
	ResponseFormat string // FormatURL or FormatB64
	Async          bool
	// Quality is the body's quality when it is a string (it also passes
	// through in Extra); fixed-grid models take their tier flag from it.
	Quality string
	// References are the body's image and image_urls, merged in wire
	// order (rule 7).
	References []Reference
	// Files are a multipart edit's image files (image, image[]), in order;
	// Mask its mask file, if any.
	Files []vendor.JobFile
	Mask  *vendor.JobFile
	// Extra are the other body fields, raw JSON, in body order.
	Extra []Field
}

// Field is one JSON member: its name and raw value.
type Field struct {
	Name string
	Raw  string
}

// Reference is one reference image: a public http(s) URL, or a data URI
// with its decoded bytes.
type Reference struct {
	URL         string // as sent (a data URI included)
	Data        []byte // a data URI's bytes; nil for an http(s) URL
	ContentType string // a data URI's media type
}

// IsData reports whether the reference is a data URI.
func (r Reference) IsData() bool { return r.Data != nil }

// HasReference reports whether the request carries a reference image.
func (r *Request) HasReference() bool { return len(r.References) > 0 || len(r.Files) > 0 }

// fields the rules read; any other passes through in Extra.
var ruled = map[string]bool{
	"model": true, "prompt": true, "n": true, "size": true, "response_format": true,
	"image": true, "image[]": true, "image_urls": true, "image_urls[]": true, "async": true, "stream": true,
}

// Parse reads and validates an image request by the spec's images rules.
// A multipart request's text fields arrive as strings (its body is the
// JSON object of its text fields), so n and async are also read from
// their string forms.
func Parse(req *vendor.JobRequest) (*Request, *vendor.JobError) {
	if req.Operation != OpGenerations && req.Operation != OpEdits {
		return nil, Invalid("unknown images operation " + strconv.Quote(req.Operation) + ".")
	}
	raw := req.Body
	if len(raw) == 0 && len(req.Files) > 0 {
		raw = []byte("{}") // a multipart edit of files only
	}
	if !gjson.ValidBytes(raw) {
		return nil, Invalid("The request body must be a JSON object.")
	}
	body := gjson.ParseBytes(raw)
	if !body.IsObject() {
		return nil, Invalid("The request body must be a JSON object.")
	}
	r := &Request{Operation: req.Operation, N: 1, ResponseFormat: FormatURL}
	var bad *vendor.JobError
	body.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if !ruled[name] {
			r.Extra = append(r.Extra, Field{Name: name, Raw: v.Raw})
			if name == "quality" && v.Type == gjson.String {
				r.Quality = v.Str
			}
			return true
		}
		bad = r.field(name, v)
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	if strings.TrimSpace(r.Prompt) == "" {
		return nil, Invalid("prompt is required: a non-empty string describing the image.")
	}
	var refBytes int64
	for _, ref := range r.References {
		refBytes += int64(len(ref.Data))
	}
	for _, f := range req.Files {
		switch f.Field {
		case "image", "image[]":
			if f.Len() == 0 {
				return nil, Invalid("the image file " + strconv.Quote(f.Filename) + " is empty.")
			}
			refBytes += f.Len()
			r.Files = append(r.Files, f)
		case "mask":
			m := f
			r.Mask = &m
		default:
			return nil, Invalid("unknown file field " + strconv.Quote(f.Field) + ": image files go in image or image[].")
		}
	}
	if r.Operation == OpEdits && !r.HasReference() {
		return nil, Invalid("edits needs a reference image: an image file, or image / image_urls with an http(s) URL or a data URI.")
	}
	if n := len(r.References) + len(r.Files); n > MaxReferences {
		return nil, Invalid("at most " + strconv.Itoa(MaxReferences) + " reference images per request; got " + strconv.Itoa(n) + ".")
	}
	if refBytes > MaxReferenceBytes {
		return nil, Invalid("the reference images total " + strconv.FormatInt(refBytes>>20, 10) + " MB; at most " +
			strconv.Itoa(MaxReferenceBytes>>20) + " MB per request.")
	}
	return r, nil
}

// Caps on a request's reference images (files, data URIs and URLs
// together): OpenAI's image edits take at most 16; their bytes are capped
// as the edits body is (95 MB).
const (
	MaxReferences     = 16
	MaxReferenceBytes = 95 << 20
)

// field reads one ruled field.
func (r *Request) field(name string, v gjson.Result) *vendor.JobError {
	if v.Type == gjson.Null {
		return nil // null is omitted
	}
	switch name {
	case "model":
		if v.Type != gjson.String {
			return Invalid("model must be a string.")
		}
	case "prompt":
		if v.Type != gjson.String {
			return Invalid("prompt must be a string.")
		}
		r.Prompt = v.Str
	case "n":
		n, ok := wholeNumber(v)
		if !ok || n < 1 || n > MaxN {
			return Invalid("n must be a whole number from 1 to 10; got " + v.Raw + ".")
		}
		r.N = n
	case "size":
		if v.Type != gjson.String {
			return Invalid("size must be a string like 1024x1024.")
		}
		r.Size = v.Str
		r.Width, r.Height = ParseSize(v.Str)
	case "response_format":
		if v.Type != gjson.String || v.Str != FormatURL && v.Str != FormatB64 {
			return Invalid("response_format must be url or b64_json; got " + v.Raw + ".")
		}
		r.ResponseFormat = v.Str
	case "async":
		b, ok := boolean(v)
		if !ok {
			return Invalid("async must be true or false; got " + v.Raw + ".")
		}
		r.Async = b
	case "stream":
		// A streamed image answer (partial images) is not offered: the
		// gateway answers JSON, or a task with async.
		if b, ok := boolean(v); !ok || b {
			return Invalid("stream is not supported on the images endpoints; use async: true for a task.")
		}
	case "image", "image[]", "image_urls", "image_urls[]":
		// A multipart form's text fields may name URLs as image[] too.
		return r.references(strings.TrimSuffix(name, "[]"), v)
	}
	return nil
}

// references appends the references of an image or image_urls field: a
// string or an array of strings.
func (r *Request) references(name string, v gjson.Result) *vendor.JobError {
	var items []gjson.Result
	switch {
	case v.Type == gjson.String:
		items = []gjson.Result{v}
	case v.IsArray():
		items = v.Array()
	default:
		return Invalid(name + " must be a URL or data URI, or an array of them.")
	}
	for i, it := range items {
		where := name
		if v.IsArray() {
			where += "[" + strconv.Itoa(i) + "]"
		}
		if it.Type != gjson.String {
			return Invalid(where + " must be a string: a public http(s) URL or a data:image/...;base64,... URI.")
		}
		ref, err := ParseReference(it.Str)
		if err != "" {
			return Invalid(where + ": " + err)
		}
		r.References = append(r.References, ref)
	}
	return nil
}

// ParseReference reads a reference image: an http(s) URL with a host, or
// data:image/...;base64,... (decoded). The reason is "" when it is valid.
func ParseReference(s string) (Reference, string) {
	if rest, ok := cutPrefixFold(s, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		if !ok {
			return Reference{}, "a data URI needs a comma before its data."
		}
		params := strings.Split(meta, ";")
		ct := strings.ToLower(strings.TrimSpace(params[0]))
		if !strings.HasPrefix(ct, "image/") || len(ct) == len("image/") {
			return Reference{}, "a data URI must be an image (data:image/png;base64,...)."
		}
		if !strings.EqualFold(params[len(params)-1], "base64") {
			return Reference{}, "a data URI must be base64 (data:image/png;base64,...)."
		}
		b, err := decodeBase64(data)
		if err != nil || len(b) == 0 {
			return Reference{}, "the data URI's base64 does not decode."
		}
		return Reference{URL: s, Data: b, ContentType: ct}, ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return Reference{}, "must be a public http(s) URL or a data:image/...;base64,... URI."
	}
	return Reference{URL: s}, ""
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// decodeBase64 takes standard base64, padded or not (URL-safe too).
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// ParseSize reads a WxH size ("1024x1024", X or x); 0, 0 for any other
// form.
func ParseSize(s string) (w, h int) {
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return 0, 0
	}
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if err1 != nil || err2 != nil || w <= 0 || h <= 0 || w > 1<<20 || h > 1<<20 ||
		strings.HasPrefix(ws, "+") || strings.HasPrefix(hs, "+") {
		return 0, 0
	}
	return w, h
}

// Invalid is the gateway's 400 invalid_request with msg.
func Invalid(msg string) *vendor.JobError { return rules.Invalid(msg) }

var (
	wholeNumber = rules.WholeNumber
	boolean     = rules.Boolean
)
