package httpvendor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

type testRoute struct{ base string }

func (r testRoute) Build(req *vendor.ChatRequest, h http.Header) (string, error) {
	if req.Protocol == "unspoken" {
		return "", errors.New("the channel does not speak it")
	}
	h["X-Key"] = []string{"k"}
	return r.base + "/chat", nil
}

func newVendor(t *testing.T, base string) *httpvendor.Vendor {
	t.Helper()
	v := httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "test", Version: "1"},
		Prepare: func(ch vendor.Channel) (httpvendor.Route, error) {
			b, err := httpvendor.BaseURL(ch, true)
			return testRoute{b}, err
		},
	})
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: base}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.CloseIdleConnections)
	return v
}

func chatReq() *vendor.ChatRequest {
	return &vendor.ChatRequest{Channel: "main", Protocol: "p", Model: "m", Body: []byte(`{"model":"m","x":[1, 2]}`)}
}

func TestChatPassesBodiesAndSelectedHeaders(t *testing.T) {
	cases := []struct {
		desc   string
		status int
		body   string
	}{
		{"success", 200, `{"id":"c1","choices":[]}`},
		{"upstream error is an answer, not an error", 429, `{"error":{"message":"slow down","request_id":"req_up"}}`},
		{"server error", 503, `{"error":{"type":"overloaded"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			up := vt.NewUpstream(t, vt.Reply(tc.status, tc.body,
				"Retry-After", "7", "X-Ratelimit-Remaining-Requests", "3", "X-Request-Id", "req_up",
				"Request-Id", "req_up2", "Openai-Organization", "org-up"))
			v := newVendor(t, up.URL)
			resp, err := v.Chat(context.Background(), chatReq())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tc.status || string(resp.Body) != tc.body {
				t.Fatalf("got %d %q", resp.Status, resp.Body)
			}
			want := map[string]string{"content-type": "application/json", "retry-after": "7"}
			if fmt.Sprint(resp.Headers) != fmt.Sprint(want) {
				t.Fatalf("headers %v, want %v", resp.Headers, want)
			}
			got := up.Last(t)
			if got.Method != "POST" || got.Path != "/chat" || string(got.Body) != string(chatReq().Body) {
				t.Fatalf("upstream got %s %s %q", got.Method, got.Path, got.Body)
			}
			if got.Header.Get("Content-Type") != "application/json" || got.Header.Get("X-Key") != "k" ||
				!strings.HasPrefix(got.Header.Get("User-Agent"), "tollgate-plugin-test/") {
				t.Fatalf("upstream headers %v", got.Header)
			}
		})
	}
}

func TestChatStreamRelaysEventByEvent(t *testing.T) {
	cases := []struct {
		desc   string
		chunks []string
		want   []vendor.Event
	}{
		{"completions framing", []string{"data: {\"a\":1}\n\n", ": keep-alive\n\n", "data: {\"b\":2}\n\n", "data: [DONE]\n\n"},
			[]vendor.Event{{Data: []byte(`{"a":1}`)}, {Data: []byte(`{"b":2}`)}, {Data: []byte("[DONE]")}}},
		{"named events, CRLF, split writes", []string{"event: message_start\r\ndata: {\"t\":", "1}\r\n\r\n", "event: message_stop\r\ndata: {}\r\n\r\n"},
			[]vendor.Event{{Name: "message_start", Data: []byte(`{"t":1}`)}, {Name: "message_stop", Data: []byte(`{}`)}}},
		{"no terminator is still nil: the codec judges", []string{"data: {\"a\":1}\n\n"},
			[]vendor.Event{{Data: []byte(`{"a":1}`)}}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			up := vt.NewUpstream(t, vt.Stream(tc.chunks...))
			v := newVendor(t, up.URL)
			req := chatReq()
			req.Stream, req.IdleTimeout, req.Timeout = true, 5*time.Second, 10*time.Second
			var sink vt.Sink
			if err := v.ChatStream(context.Background(), req, &sink); err != nil {
				t.Fatal(err)
			}
			if len(sink.Heads) != 1 || sink.Heads[0].Status != 200 || sink.Heads[0].Headers["content-type"] != "text/event-stream" {
				t.Fatalf("heads %+v", sink.Heads)
			}
			if fmt.Sprintf("%q", sink.Events) != fmt.Sprintf("%q", tc.want) {
				t.Fatalf("events %q, want %q", sink.Events, tc.want)
			}
			if got := up.Last(t).Header.Get("Accept"); got != "text/event-stream" {
				t.Fatalf("accept %q", got)
			}
		})
	}
}

func TestChatStreamErrorStatusGoesToHead(t *testing.T) {
	body := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	up := vt.NewUpstream(t, vt.Reply(529, body, "Retry-After", "3"))
	v := newVendor(t, up.URL)
	req := chatReq()
	req.Stream = true
	var sink vt.Sink
	if err := v.ChatStream(context.Background(), req, &sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.Heads) != 1 || sink.Heads[0].Status != 529 || string(sink.Heads[0].Body) != body ||
		sink.Heads[0].Headers["retry-after"] != "3" || len(sink.Events) != 0 {
		t.Fatalf("heads %+v events %d", sink.Heads, len(sink.Events))
	}
}

func TestErrorBodyIsCapped(t *testing.T) {
	big := strings.Repeat("x", httpvendor.MaxErrorBody+4096)
	cases := []struct {
		desc string
		h    http.HandlerFunc
	}{
		{"with length", vt.Reply(500, big)},
		{"chunked", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(500)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, big)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			up := vt.NewUpstream(t, tc.h)
			v := newVendor(t, up.URL)
			resp, err := v.Chat(context.Background(), chatReq())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 500 || len(resp.Body) != httpvendor.MaxErrorBody {
				t.Fatalf("got %d, %d bytes", resp.Status, len(resp.Body))
			}
		})
	}
}

// hang blocks until the client goes away, and reports that it saw it.
func hang(gone chan<- struct{}, first string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if first != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, first)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		if gone != nil {
			close(gone)
		}
	}
}

// cutConn writes raw bytes on the bare connection, then drops it.
func cutConn(raw string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
		_ = conn.Close()
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestFailureClasses(t *testing.T) {
	tlsUp := httptest.NewTLSServer(vt.Reply(200, `{}`))
	defer tlsUp.Close()
	cases := []struct {
		desc    string
		h       http.HandlerFunc // nil: base is used as is
		base    string
		stream  bool
		mutate  func(*vendor.ChatRequest)
		ctx     func() (context.Context, context.CancelFunc)
		want    vendor.FailureKind
		message string
	}{
		{desc: "connection refused", base: closedPort(t), want: vendor.FailureConnect, message: "connect"},
		{desc: "connection refused, stream", base: closedPort(t), stream: true, want: vendor.FailureConnect},
		{desc: "untrusted tls", base: tlsUp.URL, want: vendor.FailureConnect, message: "tls"},
		{desc: "hang past the total timeout", h: hang(nil, ""), mutate: func(r *vendor.ChatRequest) { r.Timeout = 100 * time.Millisecond },
			want: vendor.FailureTimeout, message: "within 100ms"},
		{desc: "stream hang past the total timeout", h: hang(nil, "data: {}\n\n"), stream: true,
			mutate: func(r *vendor.ChatRequest) { r.Timeout = 150 * time.Millisecond }, want: vendor.FailureTimeout},
		{desc: "stream idle between events", h: hang(nil, "data: {}\n\n"), stream: true,
			mutate: func(r *vendor.ChatRequest) { r.IdleTimeout = 100 * time.Millisecond }, want: vendor.FailureTimeout,
			message: "no event"},
		{desc: "stream without a head within the idle timeout", h: hang(nil, ""), stream: true,
			mutate: func(r *vendor.ChatRequest) { r.IdleTimeout = 100 * time.Millisecond }, want: vendor.FailureTimeout,
			message: "no event"},
		{desc: "caller deadline", h: hang(nil, ""),
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			}, want: vendor.FailureTimeout},
		{desc: "caller cancel", h: hang(nil, ""),
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				return ctx, cancel
			}, want: vendor.FailureCanceled},
		{desc: "stream cut mid-event, clean chunked end", stream: true,
			h: vt.Stream("data: {\"a\":1}\n\n", "data: {\"b\""), want: vendor.FailureBroken, message: "mid-event"},
		{desc: "stream connection dropped", stream: true,
			h:    cutConn("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n8\r\ndata: {}\r\n"),
			want: vendor.FailureBroken},
		{desc: "body shorter than its length", h: cutConn("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\":"),
			want: vendor.FailureBroken},
		{desc: "connection closed before any answer", h: cutConn(""), want: vendor.FailureBroken},
		{desc: "unknown channel", h: vt.Reply(200, `{}`), mutate: func(r *vendor.ChatRequest) { r.Channel = "other" },
			want: vendor.FailureConfig, message: `unknown channel "other"`},
		{desc: "protocol the channel does not speak", h: vt.Reply(200, `{}`), stream: true,
			mutate: func(r *vendor.ChatRequest) { r.Protocol = "unspoken" }, want: vendor.FailureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			base := tc.base
			if tc.h != nil {
				base = vt.NewUpstream(t, tc.h).URL
			}
			v := newVendor(t, base)
			req := chatReq()
			req.Stream = tc.stream
			if tc.mutate != nil {
				tc.mutate(req)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			start := time.Now()
			var err error
			if tc.stream {
				err = v.ChatStream(ctx, req, &vt.Sink{})
			} else {
				var resp *vendor.ChatResponse
				resp, err = v.Chat(ctx, req)
				if err == nil {
					t.Fatalf("answer %d %q, want a failure", resp.Status, resp.Body)
				}
			}
			if vt.Kind(err) != tc.want {
				t.Fatalf("got %v (kind %d), want kind %d", err, vt.Kind(err), tc.want)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("message %q lacks %q", err, tc.message)
			}
			if strings.Contains(err.Error(), "127.0.0.1") {
				t.Fatalf("message %q names the upstream", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

func TestStopStopsTheUpstream(t *testing.T) {
	cases := []struct {
		desc string
		stop func(cancel context.CancelFunc, s *vt.Sink)
		want vendor.FailureKind
	}{
		{"sink refuses an event", func(_ context.CancelFunc, s *vt.Sink) { s.StopAfter = 1 }, vendor.FailureCanceled},
		{"caller cancels after the first event", func(cancel context.CancelFunc, s *vt.Sink) {
			s.OnEvent = func(int) { cancel() }
		}, vendor.FailureCanceled},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			gone := make(chan struct{})
			up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := 0; ; i++ {
					if _, err := fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i); err != nil {
						break
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						close(gone)
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
				<-r.Context().Done()
				close(gone)
			})
			v := newVendor(t, up.URL)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sink := &vt.Sink{}
			tc.stop(cancel, sink)
			req := chatReq()
			req.Stream = true
			err := v.ChatStream(ctx, req, sink)
			if vt.Kind(err) != tc.want {
				t.Fatalf("got %v, want kind %d", err, tc.want)
			}
			select {
			case <-gone:
			case <-time.After(3 * time.Second):
				t.Fatal("the upstream never saw the request end")
			}
			if len(sink.Events) != 1 {
				t.Fatalf("%d events after the stop", len(sink.Events))
			}
		})
	}
}

func TestKeepAliveReusesOneConnection(t *testing.T) {
	up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			vt.Stream("data: {\"a\":1}\n\n", "data: [DONE]\n\n")(w, r)
			return
		}
		vt.Reply(200, `{"ok":true}`)(w, r)
	})
	v := newVendor(t, up.URL)
	for i := range 50 {
		req := chatReq()
		req.Stream = i%2 == 1
		if req.Stream {
			if err := v.ChatStream(context.Background(), req, &vt.Sink{}); err != nil {
				t.Fatal(err)
			}
		} else if _, err := v.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := up.NewConns(); n != 1 {
		t.Fatalf("%d connections for 50 sequential calls, want 1", n)
	}
}

func TestConfigure(t *testing.T) {
	spec := httpvendor.Spec{
		Description: vendor.Description{Name: "test"},
		Settings:    []string{"pool"},
		Prepare: func(ch vendor.Channel) (httpvendor.Route, error) {
			b, err := httpvendor.BaseURL(ch, true)
			return testRoute{b}, err
		},
	}
	cases := []struct {
		desc string
		cfg  vendor.Config
		err  string
	}{
		{"ok", vendor.Config{Settings: map[string]string{"pool": "1"},
			Channels: []vendor.Channel{{Name: "a", BaseURL: "http://127.0.0.1:1"}}}, ""},
		{"unknown plugin setting", vendor.Config{Settings: map[string]string{"pol": "1"}}, `unknown plugin setting "pol"`},
		{"duplicate channel", vendor.Config{Channels: []vendor.Channel{
			{Name: "a", BaseURL: "http://h"}, {Name: "a", BaseURL: "http://h"}}}, "configured twice"},
		{"nameless channel", vendor.Config{Channels: []vendor.Channel{{BaseURL: "http://h"}}}, "no name"},
		{"bad channel", vendor.Config{Channels: []vendor.Channel{{Name: "a", BaseURL: "ftp://h"}}}, "http or https"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			err := httpvendor.New(spec).Configure(context.Background(), tc.cfg)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}

	t.Run("a failed configure keeps the channels, a new one replaces them", func(t *testing.T) {
		up := vt.NewUpstream(t, vt.Reply(200, `{}`))
		v := newVendor(t, up.URL)
		if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "x", BaseURL: ""}}}); err == nil {
			t.Fatal("empty base_url accepted")
		}
		if _, err := v.Chat(context.Background(), chatReq()); err != nil {
			t.Fatalf("old channel lost: %v", err)
		}
		if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "x", BaseURL: up.URL}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Chat(context.Background(), chatReq()); vt.Kind(err) != vendor.FailureConfig {
			t.Fatalf("removed channel still served: %v", err)
		}
	})
}

func TestBaseURL(t *testing.T) {
	cases := []struct {
		desc, in string
		refuseV1 bool
		want     string
		err      string
	}{
		{"root", "https://api.openai.com", true, "https://api.openai.com", ""},
		{"trailing slash", "https://api.openai.com/", true, "https://api.openai.com", ""},
		{"path kept", "http://127.0.0.1:8080/proxy/openai/", true, "http://127.0.0.1:8080/proxy/openai", ""},
		{"v1 refused", "https://api.openai.com/v1", true, "", "without /v1"},
		{"v1beta refused", "https://generativelanguage.googleapis.com/v1beta/", true, "", "without /v1"},
		{"v1 allowed when the vendor has a prefix setting", "http://h/api/v1", false, "http://h/api/v1", ""},
		{"empty", " ", true, "", "empty"},
		{"scheme", "127.0.0.1:8080", true, "", ""},
		{"no host", "http:///v1", true, "", "no host"},
		{"query", "http://h/?a=1", true, "", "query"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := httpvendor.BaseURL(vendor.Channel{Name: "c", BaseURL: tc.in}, tc.refuseV1)
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %q, %v; want an error with %q", got, err, tc.err)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	ch := vendor.Channel{Name: "c", Settings: map[string]string{"path_prefix": "/v1"}, Protocols: []string{"a"}}
	if err := httpvendor.CheckSettings(ch, "path_prefix"); err != nil {
		t.Fatal(err)
	}
	if err := httpvendor.CheckSettings(ch); err == nil || !strings.Contains(err.Error(), "takes none") {
		t.Fatalf("got %v", err)
	}
	if err := httpvendor.CheckSettings(ch, "other"); err == nil || !strings.Contains(err.Error(), "known: other") {
		t.Fatalf("got %v", err)
	}
	if p, err := httpvendor.Protocols(ch, []string{"a", "b"}); err != nil || len(p) != 1 {
		t.Fatalf("got %v %v", p, err)
	}
	if _, err := httpvendor.Protocols(ch, []string{"b"}); err == nil {
		t.Fatal("unspoken protocol accepted")
	}
	if p, _ := httpvendor.Protocols(vendor.Channel{}, []string{"a", "b"}); len(p) != 2 {
		t.Fatalf("default protocols %v", p)
	}
	if _, err := httpvendor.APIKey(vendor.Channel{Name: "c", APIKey: " "}, true); err == nil {
		t.Fatal("blank key accepted")
	}
}
