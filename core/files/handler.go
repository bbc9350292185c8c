package files

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// FileExpired is the code of the 410 answered for an expired link or file.
// The spec has no code for it; docs/decisions.md records the choice.
const FileExpired = "file_expired"

// Handler serves GET and HEAD /files/{id}?expires=&sig=. Mount it on that
// route (a ServeMux pattern "/files/{id}" sets the id; otherwise the last
// path element is taken). The link is the only credential: no API key.
//
//   - A malformed id, a missing or wrong signature, and a file deleted
//     before its expiry all answer the same 404 not_found, so that nobody
//     without a valid link learns whether a file exists.
//   - A valid link past its expiry, or to a file past its retention (swept
//     or not yet), answers 410 file_expired.
//
// Errors have the completions-style shape. Single byte ranges are served
// (206); a multi-range request gets the whole file, which HTTP allows.
func (s *Store) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Store) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		e := &apierr.Error{Status: http.StatusMethodNotAllowed, Code: apierr.InvalidRequest,
			Type: "invalid_request_error", Message: "only GET and HEAD are allowed on files"}
		writeErr(w, e.WithHeader("Allow", "GET, HEAD"))
		return
	}
	id := r.PathValue("id")
	if id == "" {
		id = path.Base(r.URL.Path)
	}
	q := r.URL.Query()
	linkExp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || !s.verify(id, linkExp, q.Get("sig")) {
		writeErr(w, notFound())
		return
	}
	// A verified signature implies a well-formed id: only Link signs.
	fileExp, ok := parseID(id)
	if !ok {
		writeErr(w, notFound())
		return
	}
	now := s.now()
	if !now.Before(time.Unix(linkExp, 0)) {
		writeErr(w, gone("this link has expired"))
		return
	}
	if expired(fileExp, now) {
		writeErr(w, gone("this file has expired"))
		return
	}

	// Single ranges only: http.ServeContent serves several ranges from a
	// goroutine that may still read the blob after it returns.
	if strings.Contains(r.Header.Get("Range"), ",") {
		r.Header.Del("Range")
	}

	var content io.ReadSeeker
	var info Info
	if r.Method == http.MethodHead {
		// Attributes only: no body read (on S3 a HEAD, not a GET).
		info, err = s.Stat(r.Context(), id)
		content = &sizeOnly{size: info.Size}
	} else {
		var rc io.ReadSeekCloser
		rc, info, err = s.Open(r.Context(), id)
		if err == nil {
			defer rc.Close()
			content = rc
		}
	}
	switch {
	case errors.Is(err, ErrNotFound):
		writeErr(w, notFound())
		return
	case errors.Is(err, ErrExpired):
		writeErr(w, gone("this file has expired"))
		return
	case err != nil:
		if !errors.Is(err, context.Canceled) {
			s.log.Error("serve file", "id", id, "error", err)
		}
		writeErr(w, apierr.Internal(err))
		return
	}

	h := w.Header()
	h.Set("Content-Type", info.ContentType)
	if info.Name != "" {
		if cd := mime.FormatMediaType("inline", map[string]string{"filename": info.Name}); cd != "" {
			h.Set("Content-Disposition", cd)
		}
	}
	// The content of an id never changes; caches may keep it as long as
	// the link lives, and no longer. private: the link is a credential.
	maxAge := int64(time.Unix(linkExp, 0).Sub(now) / time.Second)
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(maxAge, 10)+", immutable")
	h.Set("Expires", time.Unix(linkExp, 0).UTC().Format(http.TimeFormat))
	h.Set("ETag", `"`+id+`"`)
	// Hosted content may come from an upstream: never let a browser run it
	// as a page of the gateway's origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	http.ServeContent(w, r, "", info.CreatedAt, content)
}

func notFound() *apierr.Error { return apierr.New(apierr.NotFound, "file not found") }

func gone(msg string) *apierr.Error {
	return &apierr.Error{Status: http.StatusGone, Code: FileExpired, Type: "invalid_request_error", Message: msg}
}

func writeErr(w http.ResponseWriter, e *apierr.Error) {
	w.Header().Set("Cache-Control", "no-store")
	apierr.Write(w, protocol.OpenAIChat, e)
}

// sizeOnly is the content of a HEAD: http.ServeContent seeks it to learn
// the size and the range, and never reads it for HEAD.
type sizeOnly struct{ size, off int64 }

func (z *sizeOnly) Read([]byte) (int, error) { return 0, errors.New("files: HEAD content read") }

func (z *sizeOnly) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		z.off = off
	case io.SeekCurrent:
		z.off += off
	case io.SeekEnd:
		z.off = z.size + off
	}
	if z.off < 0 {
		return 0, errors.New("files: negative seek")
	}
	return z.off, nil
}
