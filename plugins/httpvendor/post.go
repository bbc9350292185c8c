package httpvendor

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// PathRoute is a Route that also serves calls beyond chat (an endpoint
// family's): the URL of path on the channel, with the vendor's auth
// headers added to h. A Route without it serves chat only.
type PathRoute interface {
	Route
	BuildPath(path string, h http.Header) (string, error)
}

// PostRequest is one call beyond chat: a body of ContentType posted to
// Path on a channel (or, with Method, a GET or DELETE of Path).
type PostRequest struct {
	Channel string
	// Method is POST when empty; a GET or DELETE sends no body.
	Method      string
	Path        string // /v1/images/generations; it may carry a query
	ContentType string // application/json, multipart/form-data; boundary=...
	// Accept is what the answer may be: application/json when empty
	// (audio/* for a speech call).
	Accept string
	Body   []byte
	// BodyReader, when set, streams the body instead (a multipart upload
	// read from the gateway as it goes out).
	BodyReader io.Reader
	Timeout    time.Duration // the whole call; 0 = only the context
	// MaxBody bounds a 2xx answer (0: MaxBody); an error body is cut at
	// MaxErrorBody.
	MaxBody int64
	// Headers are the client headers the gateway forwards (the trace
	// context); see forwardTrace.
	Headers map[string]string
}

// Post makes one call beyond chat with the same client, timeouts and
// failure classification as Chat. A non-2xx answer is a response, not an
// error; *vendor.Failure reports a call without an answer.
func (v *Vendor) Post(ctx context.Context, req *PostRequest) (*vendor.ChatResponse, error) {
	ctx, cancel := withTimeout(ctx, req.Timeout)
	defer cancel()
	r, ok := (*v.routes.Load())[req.Channel]
	if !ok {
		return nil, configFailure("unknown channel %q", req.Channel)
	}
	pr, ok := r.(PathRoute)
	if !ok {
		return nil, configFailure("channel %q serves chat only", req.Channel)
	}
	h := make(http.Header, 8)
	if req.ContentType != "" {
		h["Content-Type"] = []string{req.ContentType}
	}
	h["Accept"] = acceptJSON
	if req.Accept != "" {
		h["Accept"] = []string{req.Accept}
	}
	h["User-Agent"] = v.ua
	h["Accept-Encoding"] = identity
	forwardTrace(h, req.Headers)
	target, err := pr.BuildPath(req.Path, h)
	if err != nil {
		return nil, configFailure("channel %q: %v", req.Channel, err)
	}
	var body io.Reader = bytes.NewReader(req.Body)
	if req.BodyReader != nil {
		body = req.BodyReader
	}
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	if method == http.MethodGet || method == http.MethodDelete {
		body = nil
	}
	hr, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, configFailure("channel %q: %v", req.Channel, err)
	}
	hr.Header = h
	timing := &vendor.ChatRequest{Timeout: req.Timeout} // what classify names in its messages
	resp, err := v.hc.Do(hr)
	if err != nil {
		return nil, classify(ctx, err, timing)
	}
	defer resp.Body.Close()
	if redirect(resp.StatusCode) {
		return nil, RedirectFailure(resp.StatusCode)
	}
	limit := req.MaxBody
	if limit <= 0 {
		limit = MaxBody
	}
	return answer(ctx, resp, limit, timing)
}
