package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Request is one benchmark call, sent again and again.
type Request struct {
	URL    string
	Header http.Header
	Body   []byte
	// Stream marks an SSE answer: time to first byte is recorded.
	Stream bool
	// Expect must occur in a good answer's body (e.g. "[DONE]" for a
	// completed stream); a 200 without it counts as an error.
	Expect []byte
}

// Window is what one closed-loop window measured.
type Window struct {
	Requests   int
	Errors     int
	FirstError string
	Elapsed    time.Duration
	Latency    []time.Duration // one per good request
	TTFB       []time.Duration // streams only
}

// NewClient is a keep-alive client able to hold conc idle connections to
// one host, so a closed loop never pays for new connections.
func NewClient(conc int) *http.Client {
	// The timeout only bounds a hung run; answers here take milliseconds.
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns:        conc * 2,
		MaxIdleConnsPerHost: conc * 2,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// Load drives r with conc workers, each sending its next request when the
// previous one completes, until d has passed; requests already in flight
// at the deadline finish and count.
func Load(ctx context.Context, c *http.Client, r Request, conc int, d time.Duration) Window {
	start := time.Now()
	deadline := start.Add(d)
	results := make([]Window, conc)
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func(w *Window) {
			defer wg.Done()
			worker(ctx, c, r, deadline, w)
		}(&results[i])
	}
	wg.Wait()
	out := Window{Elapsed: time.Since(start)}
	for i := range results {
		w := &results[i]
		out.Requests += w.Requests
		out.Errors += w.Errors
		if out.FirstError == "" {
			out.FirstError = w.FirstError
		}
		out.Latency = append(out.Latency, w.Latency...)
		out.TTFB = append(out.TTFB, w.TTFB...)
	}
	return out
}

func worker(ctx context.Context, c *http.Client, r Request, deadline time.Time, w *Window) {
	w.Latency = make([]time.Duration, 0, 1024)
	if r.Stream {
		w.TTFB = make([]time.Duration, 0, 1024)
	}
	var body bytes.Buffer
	scratch := make([]byte, 16<<10)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		w.Requests++
		lat, ttfb, err := once(ctx, c, r, &body, scratch)
		if err != nil {
			w.Errors++
			if w.FirstError == "" {
				w.FirstError = err.Error()
			}
			// A refused connection fails at once; do not spin on it.
			time.Sleep(time.Millisecond)
			continue
		}
		w.Latency = append(w.Latency, lat)
		if r.Stream {
			w.TTFB = append(w.TTFB, ttfb)
		}
	}
}

// once sends r and reads the whole answer, timing it from the send to the
// last byte and, for streams, to the first body byte.
func once(ctx context.Context, c *http.Client, r Request, body *bytes.Buffer, scratch []byte) (lat, ttfb time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return 0, 0, err
	}
	req.Header = r.Header
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body.Reset()
	for {
		n, rerr := resp.Body.Read(scratch)
		if n > 0 {
			if body.Len() == 0 {
				ttfb = time.Since(t0)
			}
			body.Write(scratch[:n])
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, rerr
		}
	}
	lat = time.Since(t0)
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, truncate(body.Bytes()))
	}
	if len(r.Expect) > 0 && !bytes.Contains(body.Bytes(), r.Expect) {
		return 0, 0, fmt.Errorf("answer lacks %q: %s", r.Expect, truncate(body.Bytes()))
	}
	return lat, ttfb, nil
}

// Probe sends r once and returns the answer's headers and body, for a
// readable failure before a run starts.
func Probe(ctx context.Context, c *http.Client, r Request) (http.Header, []byte, error) {
	var body bytes.Buffer
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return resp.Header, body.Bytes(), err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.Header, body.Bytes(), fmt.Errorf("status %d: %s", resp.StatusCode, truncate(body.Bytes()))
	}
	if len(r.Expect) > 0 && !bytes.Contains(body.Bytes(), r.Expect) {
		return resp.Header, body.Bytes(), fmt.Errorf("answer lacks %q: %s", r.Expect, truncate(body.Bytes()))
	}
	return resp.Header, body.Bytes(), nil
}
