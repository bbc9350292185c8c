package httpvendor_test

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

type pathRoute struct{ testRoute }

func (r pathRoute) BuildPath(path string, h http.Header) (string, error) {
	h["X-Key"] = []string{"k"}
	return r.base + path, nil
}

func newPathVendor(t *testing.T, base string, allowPrivate bool) *httpvendor.Vendor {
	t.Helper()
	v := httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "test", Version: "1"},
		Prepare: func(ch vendor.Channel) (httpvendor.Route, error) {
			b, err := httpvendor.BaseURL(ch, true)
			return pathRoute{testRoute{b}}, err
		},
	})
	if err := v.Configure(context.Background(), vendor.Config{AllowPrivateURLs: allowPrivate,
		Channels: []vendor.Channel{{Name: "main", BaseURL: base}}}); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPost(t *testing.T) {
	up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bad") {
			vt.Reply(400, `{"error":{"message":"no"}}`)(w, r)
			return
		}
		vt.Reply(200, `{"data":[]}`)(w, r)
	})
	v := newPathVendor(t, up.URL, false)
	resp, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Path: "/v1/images/edits",
		ContentType: "multipart/form-data; boundary=x", Body: []byte("--x--")})
	if err != nil || resp.Status != 200 || string(resp.Body) != `{"data":[]}` {
		t.Fatalf("%+v %v", resp, err)
	}
	got := up.Last(t)
	if got.Path != "/v1/images/edits" || got.Header.Get("Content-Type") != "multipart/form-data; boundary=x" ||
		got.Header.Get("X-Key") != "k" || got.Header.Get("Accept") != "application/json" || string(got.Body) != "--x--" {
		t.Fatalf("upstream got %s %v %q", got.Path, got.Header, got.Body)
	}
	resp, err = v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Path: "/bad", ContentType: "application/json"})
	if err != nil || resp.Status != 400 || string(resp.Body) != `{"error":{"message":"no"}}` {
		t.Fatalf("%+v %v", resp, err)
	}
	t.Run("a body above MaxBody breaks", func(t *testing.T) {
		_, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Path: "/", MaxBody: 4})
		if vt.Kind(err) != vendor.FailureBroken {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		slow := vt.NewUpstream(t, hang(nil, ""))
		v := newPathVendor(t, slow.URL, false)
		_, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Path: "/", Timeout: 100 * time.Millisecond})
		if vt.Kind(err) != vendor.FailureTimeout {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unknown channel, chat-only route", func(t *testing.T) {
		if _, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "other"}); vt.Kind(err) != vendor.FailureConfig {
			t.Fatalf("got %v", err)
		}
		chatOnly := newVendor(t, up.URL)
		if _, err := chatOnly.Post(context.Background(), &httpvendor.PostRequest{Channel: "main"}); vt.Kind(err) != vendor.FailureConfig {
			t.Fatalf("got %v", err)
		}
	})
}

func TestPrivateAddr(t *testing.T) {
	for addr, private := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "0.0.0.0": true, "::1": true, "fe80::1": true, "fc00::1": true, "::ffff:127.0.0.1": true,
		"224.0.0.1": true, "8.8.8.8": false, "2606:4700::1111": false, "100.128.0.1": false,
	} {
		if got := httpvendor.PrivateAddr(netip.MustParseAddr(addr)); got != private {
			t.Errorf("%s: private %v, want %v", addr, got, private)
		}
	}
}

func TestFetch(t *testing.T) {
	up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("0123456789"))
		case "/redirect":
			http.Redirect(w, r, "/img", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
	fetchErr := func(err error) string {
		var fe *httpvendor.FetchError
		if !errors.As(err, &fe) {
			return "not a FetchError: " + errSafe(err)
		}
		return fe.Reason
	}
	t.Run("private refused", func(t *testing.T) {
		v := newPathVendor(t, up.URL, false)
		for _, u := range []string{up.URL + "/img", strings.Replace(up.URL, "127.0.0.1", "localhost", 1) + "/img"} {
			if _, _, err := v.Fetch(context.Background(), u, 100); !strings.Contains(fetchErr(err), "private") {
				t.Fatalf("%s: %v", u, err)
			}
		}
		if n := len(up.Requests()); n != 0 {
			t.Fatalf("%d requests reached the private address", n)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		v := newPathVendor(t, up.URL, true)
		b, ct, err := v.Fetch(context.Background(), up.URL+"/redirect", 100)
		if err != nil || string(b) != "0123456789" || ct != "image/png" {
			t.Fatalf("%q %q %v", b, ct, err)
		}
		if _, _, err := v.Fetch(context.Background(), up.URL+"/img", 5); !strings.Contains(fetchErr(err), "larger than 5 bytes") {
			t.Fatalf("got %v", err)
		}
		if _, _, err := v.Fetch(context.Background(), up.URL+"/none", 100); !strings.Contains(fetchErr(err), "HTTP 404") {
			t.Fatalf("got %v", err)
		}
		if _, _, err := v.Fetch(context.Background(), "ftp://h/x", 100); !strings.Contains(fetchErr(err), "http(s)") {
			t.Fatalf("got %v", err)
		}
		if _, _, err := v.Fetch(context.Background(), closedPort(t)+"/x", 100); !strings.Contains(fetchErr(err), "unreachable") {
			t.Fatalf("got %v", err)
		}
	})
}

func errSafe(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
