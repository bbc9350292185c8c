package vendor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// uploads reads the gateway's links to uploads: the gateway serves them
// on a loopback address of its own, never through a proxy.
var uploads = &http.Client{
	Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// OpenFile opens an uploaded file for reading: its bytes when the caller
// holds them, else a stream from the gateway's link. The caller closes it.
func OpenFile(ctx context.Context, f *JobFile) (io.ReadCloser, error) {
	if f.Data != nil || f.URL == "" {
		return io.NopCloser(bytes.NewReader(f.Data)), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("vendor: upload %q: %w", f.Filename, err)
	}
	resp, err := uploads.Do(req)
	if err != nil {
		return nil, &Failure{Kind: FailureConnect, Message: "reading the upload " + f.Filename + " from the gateway: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &Failure{Kind: FailureConnect, Message: fmt.Sprintf("reading the upload %s from the gateway: HTTP %d", f.Filename, resp.StatusCode)}
	}
	return resp.Body, nil
}

// ReadFile reads an uploaded file whole, at most limit bytes.
func ReadFile(ctx context.Context, f *JobFile, limit int64) ([]byte, error) {
	if f.Data != nil {
		return f.Data, nil
	}
	r, err := OpenFile(ctx, f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, &Failure{Kind: FailureBroken, Message: "reading the upload " + f.Filename + ": " + err.Error()}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("vendor: the upload %s is larger than %d bytes", f.Filename, limit)
	}
	return b, nil
}
