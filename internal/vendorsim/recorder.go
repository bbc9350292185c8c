package vendorsim

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Recorder keeps the requests a server got: set Options.Record to its
// Record.
type Recorder struct {
	mu   sync.Mutex
	reqs []Request
}

// Record keeps r.
func (c *Recorder) Record(r Request) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.mu.Unlock()
}

// Requests are the requests so far.
func (c *Recorder) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.reqs...)
}

// Last is the latest request whose path starts with prefix.
func (c *Recorder) Last(prefix string) (Request, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.reqs) - 1; i >= 0; i-- {
		if strings.HasPrefix(c.reqs[i].Path, prefix) {
			return c.reqs[i], true
		}
	}
	return Request{}, false
}

// Form reads a multipart request's body: its text fields, and its files
// by field as {filename, content}.
func (r Request) Form() (fields map[string]string, files map[string][2]string, err error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, nil, err
	}
	fields, files = map[string]string{}, map[string][2]string{}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return fields, files, nil
		}
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, nil, err
		}
		if p.FileName() != "" {
			files[p.FormName()] = [2]string{p.FileName(), string(b)}
		} else {
			fields[p.FormName()] = string(b)
		}
	}
}

// Serve starts a server with opts for a test, closed when it ends, and
// returns its base URL.
func Serve(t testing.TB, opts Options) string {
	srv := httptest.NewServer(New(opts).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
