package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/core/netguard"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// fileHost keeps the files of jobs in the files store: results behind the
// public links, uploads behind links on a loopback listener of their own
// that only plugin processes on this machine read (uploads travel to
// plugins as links, never as bytes in a message or a task record).
type fileHost struct {
	fs *files.Store
	// uploads is the base of the upload links ("http://127.0.0.1:PORT").
	uploads string
	// fetch reads result links upstreams hand over, under the configured
	// private-address policy.
	fetch atomic.Pointer[http.Client]
}

// serveUploads starts the loopback listener plugins read uploads from.
func (h *fileHost) serveUploads(log hclog.Logger) (func() error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("uploads listener: %w", err)
	}
	h.uploads = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("GET /files/{id}", h.fs.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	go func() { _ = srv.Serve(ln) }()
	return srv.Close, nil
}

// setPolicy sets the private-address policy of result fetches.
func (h *fileHost) setPolicy(allowPrivate bool) {
	h.fetch.Store(netguard.Client(allowPrivate))
}

// maxFetched bounds a result the gateway fetches (a video can be large).
const maxFetched = 4 << 30

// Host implements pipeline.FileHost.
func (h *fileHost) Host(ctx context.Context, owner string, f vendor.ResultFile, retention time.Duration, base string) (string, time.Time, error) {
	file := files.File{Data: f.Data, ContentType: f.ContentType, Name: f.Name, Owner: owner, Retention: retention}
	if f.URL != "" {
		body, ct, err := h.open(ctx, f)
		if err != nil {
			return "", time.Time{}, err
		}
		defer body.Close()
		file.Data, file.Reader = nil, io.LimitReader(body, maxFetched)
		if file.ContentType == "" {
			file.ContentType = ct
		}
		if file.Name == "" {
			file.Name = path.Base(f.URL)
		}
	}
	info, err := h.fs.Put(ctx, file)
	if err != nil {
		return "", time.Time{}, err
	}
	return h.fs.Link(base, info.ID, 0)
}

// open fetches a result link: a 2xx answer's body and content type.
func (h *fileHost) open(ctx context.Context, f vendor.ResultFile) (io.ReadCloser, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil || req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, "", errors.New("a result link that is not an http(s) URL")
	}
	for k, v := range f.Header {
		req.Header.Set(k, v)
	}
	resp, err := h.fetch.Load().Do(req)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, "", fmt.Errorf("the result link answered HTTP %d", resp.StatusCode)
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "application/octet-stream" {
		ct = ""
	}
	return resp.Body, ct, nil
}

// Fetch implements pipeline.FileHost.
func (h *fileHost) Fetch(ctx context.Context, f vendor.ResultFile, limit int64) ([]byte, string, error) {
	if f.URL == "" {
		return f.Data, f.ContentType, nil
	}
	body, ct, err := h.open(ctx, f)
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("the result is larger than %d bytes", limit)
	}
	return b, ct, nil
}

// Upload implements pipeline.FileHost: the file streams to the store,
// sniffed and digested on the way.
func (h *fileHost) Upload(ctx context.Context, owner string, u pipeline.Upload) (vendor.JobFile, error) {
	d := &digest{h: sha256.New()}
	ct := u.ContentType
	if ct == "application/octet-stream" {
		ct = "" // the store sniffs the first bytes
	}
	info, err := h.fs.Put(ctx, files.File{Reader: io.TeeReader(u.Body, d), ContentType: ct, Name: u.Filename,
		Owner: owner, Retention: u.Retention})
	if err != nil {
		if errors.Is(err, files.ErrTooLarge) {
			return vendor.JobFile{}, &http.MaxBytesError{Limit: d.n}
		}
		return vendor.JobFile{}, unwrapRead(err)
	}
	link, _, err := h.fs.Link(h.uploads, info.ID, 0)
	if err != nil {
		return vendor.JobFile{}, err
	}
	return vendor.JobFile{Field: u.Field, Filename: u.Filename, ContentType: info.ContentType, URL: link,
		Size: info.Size, SHA256: hex.EncodeToString(d.h.Sum(nil))}, nil
}

// unwrapRead lets a body that broke off or ran past its limit show as
// such (the store wraps its reader's error).
func unwrapRead(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return mb
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Discard implements pipeline.FileHost.
func (h *fileHost) Discard(ctx context.Context, fs []vendor.JobFile) {
	for _, f := range fs {
		if i := strings.Index(f.URL, "/files/"); i >= 0 {
			id, _, _ := strings.Cut(f.URL[i+len("/files/"):], "?")
			_ = h.fs.Delete(ctx, id)
		}
	}
}

// digest counts and hashes what passes through it.
type digest struct {
	h hash.Hash
	n int64
}

func (d *digest) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return d.h.Write(p)
}

var _ pipeline.FileHost = (*fileHost)(nil)
