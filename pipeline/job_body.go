package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
)

// Maximum sizes of a job's parts that the gateway reads itself.
const (
	maxFormField  = 1 << 20
	maxFormFields = 256
	// MaxFormFiles bounds a multipart request's files (OpenAI's image
	// edits take at most 16).
	MaxFormFiles = 16
	// uploadGrace is how long an upload outlives its family's longest
	// task run.
	uploadGrace = time.Hour
)

// Upload is a client's file as the gateway keeps it.
type Upload struct {
	Field, Filename, ContentType string
	Body                         io.Reader
	Retention                    time.Duration
}

// readJobBody puts the client's body into j.Body (and j.Files): a JSON
// object, or a multipart form where the route takes one. A multipart body
// streams: its files go to the file store as they arrive and travel as
// links, never whole in memory (the server leaves such a body unread).
func (s *allowlistStage) readJobBody(ctx context.Context, c *Call) error {
	if c.BodyErr != nil {
		return c.BodyErr
	}
	j := c.Job
	mt, params, _ := mime.ParseMediaType(c.Request.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		if !j.Routes[0].Route.Multipart {
			return apierr.New(apierr.InvalidRequest, "this endpoint takes a JSON body, not multipart/form-data")
		}
		if c.Body != nil {
			return s.readForm(ctx, c, strings.NewReader(string(c.Body)), params["boundary"])
		}
		return s.readForm(ctx, c, c.Request.Body, params["boundary"])
	}
	if c.Body == nil && c.Request.Body != nil {
		// A streamed route's JSON body: read it whole (bounded by the route).
		b, err := io.ReadAll(c.Request.Body)
		if err != nil {
			return bodyError(err)
		}
		c.Body = b
	}
	if !gjson.ValidBytes(c.Body) || !gjson.ParseBytes(c.Body).IsObject() {
		return apierr.New(apierr.InvalidRequest, "the body must be a JSON object")
	}
	j.Body = c.Body
	return nil
}

// bodyError is a body that could not be read: too large, or cut off.
func bodyError(err error) *apierr.Error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		e := apierr.Newf(apierr.InvalidRequest, "request body is larger than %d MB", tooBig.Limit>>20)
		e.Status = http.StatusRequestEntityTooLarge
		return e
	}
	return apierr.New(apierr.InvalidRequest, "could not read the request body")
}

// readForm turns a multipart body into its text fields (a JSON object;
// repeated fields become arrays) and its files, each streamed to the file
// store.
func (s *allowlistStage) readForm(ctx context.Context, c *Call, body io.Reader, boundary string) error {
	if boundary == "" {
		return apierr.New(apierr.InvalidRequest, "multipart/form-data without a boundary")
	}
	j := c.Job
	if s.files == nil {
		return apierr.Internal(errors.New("no file store to keep uploads in"))
	}
	retention := effective(j.Routes[0].Spec.MaxRuntime, 0, defaultJobCall) + uploadGrace
	r := multipart.NewReader(body, boundary)
	fields := map[string][]string{}
	var order []string
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if e := bodyError(err); e.Status == http.StatusRequestEntityTooLarge {
				return e
			}
			return apierr.Newf(apierr.InvalidRequest, "the multipart body could not be read: %v", err)
		}
		name := p.FormName()
		if name == "" {
			continue
		}
		if p.FileName() != "" {
			if len(j.Files) >= MaxFormFiles {
				return apierr.Newf(apierr.InvalidRequest, "at most %d files per request", MaxFormFiles)
			}
			f, err := s.files.Upload(ctx, c.Account.ID, Upload{Field: name, Filename: p.FileName(),
				ContentType: p.Header.Get("Content-Type"), Body: p, Retention: retention})
			if err != nil {
				if e := bodyError(err); e.Status == http.StatusRequestEntityTooLarge {
					return e
				}
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return apierr.Newf(apierr.InvalidRequest, "file %q could not be read: %v", p.FileName(), err)
				}
				return apierr.Internal(err)
			}
			j.Files = append(j.Files, f)
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxFormField+1))
		if err != nil || len(v) > maxFormField {
			if e := bodyError(err); err != nil && e.Status == http.StatusRequestEntityTooLarge {
				return e
			}
			return apierr.Newf(apierr.InvalidRequest, "form field %q is too long or unreadable", name)
		}
		if _, seen := fields[name]; !seen {
			if len(order) >= maxFormFields {
				return apierr.Newf(apierr.InvalidRequest, "at most %d form fields per request", maxFormFields)
			}
			order = append(order, name)
		}
		fields[name] = append(fields[name], string(v))
	}
	obj := make(map[string]any, len(fields))
	for _, k := range order {
		if vs := fields[k]; len(vs) == 1 && !strings.HasSuffix(k, "[]") {
			obj[k] = vs[0]
		} else {
			obj[strings.TrimSuffix(k, "[]")] = vs
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return apierr.Internal(err)
	}
	j.Body = b
	return nil
}
