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
		// The IANA special-purpose ranges, and IPv6 forms that embed an
		// IPv4 address.
		"192.0.0.8": true, "192.0.2.1": true, "198.18.0.1": true, "198.19.255.1": true, "198.51.100.1": true,
		"203.0.113.9": true, "240.0.0.1": true, "255.255.255.255": true, "64:ff9b::a00:1": true,
		"2002:a00:1::1": true, "::a00:1": true, "2001:db8::1": true, "2001::1": true, "::ffff:0:a00:1": true,
		"192.0.3.1": false, "198.20.0.1": false, "203.0.114.1": false,
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
	fetchErr := func(err error) (reason, detail string) {
		var fe *httpvendor.FetchError
		if !errors.As(err, &fe) {
			return "not a FetchError: " + errSafe(err), ""
		}
		return fe.Reason, fe.Detail
	}
	// Every fetch that was tried fails with one reason, whatever the cause,
	// so a client cannot scan ports through the gateway; the cause is in
	// Detail, for the operator.
	generic := ""
	check := func(t *testing.T, err error, detail string) {
		t.Helper()
		reason, d := fetchErr(err)
		if generic == "" {
			generic = reason
		}
		if reason != generic || !strings.Contains(d, detail) {
			t.Fatalf("reason %q (want the one generic reason %q), detail %q (want %q)", reason, generic, d, detail)
		}
	}
	t.Run("private refused", func(t *testing.T) {
		v := newPathVendor(t, up.URL, false)
		for _, u := range []string{up.URL + "/img", strings.Replace(up.URL, "127.0.0.1", "localhost", 1) + "/img"} {
			_, _, err := v.Fetch(context.Background(), u, 100)
			check(t, err, "private")
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
		_, _, err = v.Fetch(context.Background(), up.URL+"/img", 5)
		check(t, err, "larger than 5 bytes")
		_, _, err = v.Fetch(context.Background(), up.URL+"/none", 100)
		check(t, err, "HTTP 404")
		_, _, err = v.Fetch(context.Background(), closedPort(t)+"/x", 100)
		check(t, err, "unreachable")
		if _, _, err := v.Fetch(context.Background(), "ftp://h/x", 100); !strings.Contains(errSafe(err), "http(s)") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a redirect carries no credentials", func(t *testing.T) {
		other := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("x")) })
		hop := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, strings.Replace(other.URL, "http://", "http://user:pw@", 1)+"/img", http.StatusTemporaryRedirect)
		})
		v := newPathVendor(t, up.URL, true)
		u := strings.Replace(hop.URL, "http://", "http://client:secret@", 1) + "/start"
		if _, _, err := v.Fetch(context.Background(), u, 100); err != nil {
			t.Fatal(err)
		}
		reqs := other.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests reached the redirect's target", len(reqs))
		}
		for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
			if v := reqs[0].Header.Get(h); v != "" {
				t.Errorf("the redirect carried %s: %q", h, v)
			}
		}
	})
}

func errSafe(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
