package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"chat.completion"}`)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(2 * time.Millisecond)
		fmt.Fprint(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(3 * time.Millisecond)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusBadGateway)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	tests := []struct {
		desc      string
		req       Request
		conc      int
		wantErrs  bool
		wantOK    bool
		firstErr  string
		wantTTFB  bool
		minLatSep time.Duration // latency exceeds TTFB by at least this
	}{
		{desc: "non-streaming", req: Request{URL: srv.URL + "/ok", Expect: []byte(`"chat.completion"`)}, conc: 4, wantOK: true},
		{desc: "stream with first-byte time", req: Request{URL: srv.URL + "/stream", Stream: true, Expect: []byte("[DONE]")}, conc: 2, wantOK: true, wantTTFB: true, minLatSep: 2 * time.Millisecond},
		{desc: "error status counts", req: Request{URL: srv.URL + "/fail"}, conc: 2, wantErrs: true, firstErr: "status 502"},
		{desc: "missing expectation counts", req: Request{URL: srv.URL + "/ok", Expect: []byte("[DONE]")}, conc: 1, wantErrs: true, firstErr: "lacks"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c := NewClient(tc.conc)
			w := Load(context.Background(), c, tc.req, tc.conc, 150*time.Millisecond)
			if w.Requests == 0 || w.Elapsed < 150*time.Millisecond {
				t.Fatalf("requests %d in %s", w.Requests, w.Elapsed)
			}
			if tc.wantOK && (w.Errors != 0 || len(w.Latency) != w.Requests) {
				t.Fatalf("errors %d (%s), latencies %d of %d", w.Errors, w.FirstError, len(w.Latency), w.Requests)
			}
			if tc.wantErrs && (w.Errors != w.Requests || len(w.Latency) != 0 || !strings.Contains(w.FirstError, tc.firstErr)) {
				t.Fatalf("errors %d of %d, first %q, want all failing with %q", w.Errors, w.Requests, w.FirstError, tc.firstErr)
			}
			if tc.wantTTFB != (len(w.TTFB) > 0) {
				t.Fatalf("TTFB samples %d, want some: %v", len(w.TTFB), tc.wantTTFB)
			}
			// Scheduling on a busy machine can merge the two reads of a
			// sample, so most samples, not all, must show the server's gap.
			apart := 0
			for i := range w.TTFB {
				if w.TTFB[i] > w.Latency[i] {
					t.Fatalf("sample %d: first byte %s after the end %s", i, w.TTFB[i], w.Latency[i])
				}
				if w.Latency[i]-w.TTFB[i] >= tc.minLatSep {
					apart++
				}
			}
			if len(w.TTFB) > 0 && apart*2 < len(w.TTFB) {
				t.Fatalf("only %d of %d samples time the first byte apart from the end", apart, len(w.TTFB))
			}
		})
	}
	// Keep-alive: a closed loop reuses its connections instead of dialling
	// per request (the error cases may close theirs).
	if n := conns.Load(); n > 40 {
		t.Fatalf("%d connections opened: keep-alive not working", n)
	}
}

func TestLoadStopsOnCancel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	t0 := time.Now()
	Load(ctx, NewClient(2), Request{URL: srv.URL}, 2, time.Minute)
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("Load ran %s after cancel", d)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Protocol-Translation", "anthropic_messages_to_openai_chat")
		fmt.Fprint(w, `{"type":"message"}`)
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		desc    string
		header  http.Header
		wantErr string
	}{
		{desc: "good answer", header: http.Header{"Authorization": {"Bearer k"}}},
		{desc: "error status with body", header: http.Header{}, wantErr: "status 401: no key"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			h, body, err := Probe(context.Background(), NewClient(1), Request{URL: srv.URL, Header: tc.header, Expect: []byte(`"message"`)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || h.Get("X-Protocol-Translation") == "" || string(body) != `{"type":"message"}` {
				t.Fatalf("Probe = %v, %q, %v", h, body, err)
			}
		})
	}
}
