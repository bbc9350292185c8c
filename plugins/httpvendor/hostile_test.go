package httpvendor_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// A vendor call never follows a redirect: the channel's key and the body
// never reach the redirect's target, and the 3xx is an upstream failure.
func TestRedirectsAreNotFollowed(t *testing.T) {
	target := vt.NewUpstream(t, vt.Reply(200, `{"stolen":true}`))
	up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/chat", http.StatusTemporaryRedirect)
	})
	v := newVendor(t, up.URL)
	if _, err := v.Chat(context.Background(), chatReq()); vt.Kind(err) != vendor.FailureBroken || !strings.Contains(err.Error(), "redirect (HTTP 307)") {
		t.Fatalf("chat: %v", err)
	}
	req := chatReq()
	req.Stream = true
	if err := v.ChatStream(context.Background(), req, &vt.Sink{}); vt.Kind(err) != vendor.FailureBroken {
		t.Fatalf("stream: %v", err)
	}
	if n := len(target.Requests()); n != 0 {
		t.Fatalf("the redirect was followed %d times", n)
	}
	if got := up.Last(t).Header.Get("Accept-Encoding"); got != "identity" {
		t.Errorf("Accept-Encoding %q, want identity", got)
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

// A compressed answer the gateway did not ask for is decoded (within the
// body cap) or refused, never passed on as the answer's bytes.
func TestCompressedAnswers(t *testing.T) {
	body := `{"id":"c1","choices":[]}`
	up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(gzipped(body))
	})
	resp, err := newVendor(t, up.URL).Chat(context.Background(), chatReq())
	if err != nil || string(resp.Body) != body {
		t.Fatalf("gzip: %+v %v", resp, err)
	}
	br := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte("\x0b\x02\x80"))
	})
	if _, err := newVendor(t, br.URL).Chat(context.Background(), chatReq()); vt.Kind(err) != vendor.FailureBroken || !strings.Contains(err.Error(), "br") {
		t.Fatalf("br: %v", err)
	}
}

// An SSE event past the configured cap ends the call as an upstream
// failure, without reading the rest of it.
func TestStreamEventCap(t *testing.T) {
	up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"ok\":1}\n\ndata: "))
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 64 { // 4 MB of one line
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	v := httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "test", Version: "1"},
		Prepare: func(ch vendor.Channel) (httpvendor.Route, error) {
			b, err := httpvendor.BaseURL(ch, true)
			return testRoute{b}, err
		},
	})
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL}}, MaxEventBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	req := chatReq()
	req.Stream = true
	sink := &vt.Sink{}
	err := v.ChatStream(context.Background(), req, sink)
	if vt.Kind(err) != vendor.FailureBroken || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v", err)
	}
	if len(sink.Events) != 1 {
		t.Fatalf("%d events relayed, want the one before the big one", len(sink.Events))
	}
}
