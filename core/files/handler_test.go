package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func put(t testing.TB, s *Store, f File) Info {
	t.Helper()
	info, err := s.Put(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func link(t testing.TB, s *Store, base, id string, d time.Duration) string {
	t.Helper()
	u, _, err := s.Link(base, id, d)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// wantErr checks a completions-style error body.
func wantErr(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (%s)", r.status, status, r.body)
	}
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("error content type %q", r.header.Get("Content-Type"))
	}
	var b struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal([]byte(r.body), &b); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if b.Error.Code != code || b.Error.Type != "invalid_request_error" || b.Error.Message == "" {
		t.Errorf("error body %+v, want code %s", b.Error, code)
	}
}

func TestRoundTrip(t *testing.T) {
	for name, o := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s := open(t, o, c)
			srv := serve(t, s)
			png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3000)...)
			info := put(t, s, File{Data: png, ContentType: "image/png", Name: "cat 1.png", Owner: "acct_1", Retention: 24 * time.Hour})
			if info.Size != int64(len(png)) || info.ContentType != "image/png" || info.Owner != "acct_1" {
				t.Fatalf("info %+v", info)
			}
			if want := c.Now().Add(24 * time.Hour); info.ExpiresAt.Before(want) || info.ExpiresAt.Sub(want) >= time.Second {
				t.Fatalf("expires %v, want %v rounded up to the second", info.ExpiresAt, want)
			}
			u, exp, err := s.Link(srv.URL, info.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !exp.Equal(info.ExpiresAt) {
				t.Errorf("link expires %v, file %v", exp, info.ExpiresAt)
			}
			if !strings.HasPrefix(u, srv.URL+"/files/"+info.ID+"?expires=") {
				t.Errorf("link %s", u)
			}
			r := do(t, "GET", u)
			if r.status != 200 || r.body != string(png) {
				t.Fatalf("GET %d, %d bytes", r.status, len(r.body))
			}
			h := r.header
			for k, want := range map[string]string{
				"Content-Type":            "image/png",
				"Content-Length":          strconv.Itoa(len(png)),
				"Content-Disposition":     `inline; filename="cat 1.png"`,
				"Cache-Control":           "private, max-age=86400, immutable",
				"Etag":                    `"` + info.ID + `"`,
				"X-Content-Type-Options":  "nosniff",
				"Content-Security-Policy": "sandbox",
				"Accept-Ranges":           "bytes",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if got := h.Get("Expires"); got != info.ExpiresAt.UTC().Format(http.TimeFormat) {
				t.Errorf("Expires %q", got)
			}

			// HEAD: same headers, no body.
			hr := do(t, "HEAD", u)
			if hr.status != 200 || hr.body != "" || hr.header.Get("Content-Length") != strconv.Itoa(len(png)) ||
				hr.header.Get("Content-Type") != "image/png" || hr.header.Get("Content-Disposition") == "" {
				t.Fatalf("HEAD %d %q %v", hr.status, hr.body, hr.header)
			}

			// A single range, and the same on HEAD.
			rr := do(t, "GET", u, "Range", "bytes=1-3")
			if rr.status != 206 || rr.body != "PNG" || rr.header.Get("Content-Range") != "bytes 1-3/"+strconv.Itoa(len(png)) {
				t.Fatalf("range %d %q %v", rr.status, rr.body, rr.header)
			}
			rh := do(t, "HEAD", u, "Range", "bytes=10-")
			if rh.status != 206 || rh.header.Get("Content-Length") != strconv.Itoa(len(png)-10) {
				t.Fatalf("HEAD range %d %v", rh.status, rh.header)
			}
			// Several ranges: the whole file.
			mr := do(t, "GET", u, "Range", "bytes=0-1,5-6")
			if mr.status != 200 || mr.body != string(png) {
				t.Fatalf("multi-range %d, %d bytes", mr.status, len(mr.body))
			}
			// The ETag answers a revalidation.
			nm := do(t, "GET", u, "If-None-Match", `"`+info.ID+`"`)
			if nm.status != http.StatusNotModified {
				t.Fatalf("If-None-Match %d", nm.status)
			}

			// Hours later the cache lifetime has shrunk with the link's.
			c.Add(23 * time.Hour)
			if got := do(t, "HEAD", u).header.Get("Cache-Control"); got != "private, max-age=3600, immutable" {
				t.Errorf("later Cache-Control %q", got)
			}
		})
	}
}

func TestBadLinks(t *testing.T) {
	c := newClock()
	s := open(t, Options{URL: "mem://"}, c)
	srv := serve(t, s)
	a := put(t, s, File{Data: []byte("a"), ContentType: "text/plain", Retention: time.Hour})
	b := put(t, s, File{Data: []byte("b"), ContentType: "text/plain", Retention: time.Hour})
	good := link(t, s, srv.URL, a.ID, 10*time.Minute)
	pu, _ := url.Parse(good)
	q := pu.Query()

	with := func(id, expires, sig string) string {
		v := url.Values{}
		if expires != "" {
			v.Set("expires", expires)
		}
		if sig != "" {
			v.Set("sig", sig)
		}
		return srv.URL + "/files/" + id + "?" + v.Encode()
	}
	sig := q.Get("sig")
	flipped := []byte(sig)
	if flipped[3] == 'A' {
		flipped[3] = 'B'
	} else {
		flipped[3] = 'A'
	}
	other := otherSecretStore(t, c)

	for _, tc := range []struct {
		desc string
		url  string
	}{
		{"tampered signature", with(a.ID, q.Get("expires"), string(flipped))},
		{"truncated signature", with(a.ID, q.Get("expires"), sig[:20])},
		{"no signature", with(a.ID, q.Get("expires"), "")},
		{"no expiry", with(a.ID, "", sig)},
		{"extended expiry", with(a.ID, strconv.FormatInt(c.Now().Add(48*time.Hour).Unix(), 10), sig)},
		{"link for another id", with(b.ID, q.Get("expires"), sig)},
		{"malformed id", with("nope", q.Get("expires"), sig)},
		{"signed by another secret", link(t, other, srv.URL, a.ID, time.Minute)},
		{"unknown id, valid signature", link(t, s, srv.URL, "0"+a.ID[1:expiryLen]+strings.Repeat("a", randLen), time.Minute)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			wantErr(t, do(t, "GET", tc.url), 404, "not_found")
			if r := do(t, "HEAD", tc.url); r.status != 404 || r.body != "" {
				t.Errorf("HEAD %d %q", r.status, r.body)
			}
		})
	}

	t.Run("deleted before expiry", func(t *testing.T) {
		bl := link(t, s, srv.URL, b.ID, time.Minute)
		if err := s.Delete(context.Background(), b.ID); err != nil {
			t.Fatal(err)
		}
		wantErr(t, do(t, "GET", bl), 404, "not_found")
	})
	t.Run("method", func(t *testing.T) {
		r := do(t, "POST", good)
		if r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("POST %d %v", r.status, r.header)
		}
	})
	t.Run("expired link", func(t *testing.T) {
		// Link expiries round up to the second (the clock is at .25 s).
		c.Add(10*time.Minute + 500*time.Millisecond)
		if r := do(t, "GET", good); r.status != 200 {
			t.Fatalf("link before its expiry: %d", r.status)
		}
		c.Add(250 * time.Millisecond)
		wantErr(t, do(t, "GET", good), 410, FileExpired)
		// A fresh link still works: only the link expired.
		if r := do(t, "GET", link(t, s, srv.URL, a.ID, time.Minute)); r.status != 200 || r.body != "a" {
			t.Fatalf("fresh link %d", r.status)
		}
	})
}

// otherSecretStore is a second store on the same clock with another secret.
func otherSecretStore(t *testing.T, c *clock) *Store {
	s, err := Open(context.Background(), Options{URL: "mem://", Secret: []byte("another-secret-0123456789"), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestExpiredFile(t *testing.T) {
	for name, o := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s := open(t, o, c)
			srv := serve(t, s)
			f := put(t, s, File{Data: []byte("x"), ContentType: "image/png", Retention: 24 * time.Hour})
			u := link(t, s, srv.URL, f.ID, 0)
			c.Add(24*time.Hour + time.Second)
			// Past retention, not swept yet: already gone.
			wantErr(t, do(t, "GET", u), 410, FileExpired)
			n, err := s.Sweep(context.Background())
			if err != nil || n != 1 {
				t.Fatalf("sweep %d %v", n, err)
			}
			// Swept: still 410 for the holder of a valid link.
			wantErr(t, do(t, "GET", u), 410, FileExpired)
			if _, err := s.Stat(context.Background(), f.ID); err != ErrExpired {
				t.Fatalf("stat after sweep: %v", err)
			}
		})
	}
}

func TestHandlerWithoutMuxPattern(t *testing.T) {
	c := newClock()
	s := open(t, Options{URL: "mem://"}, c)
	f := put(t, s, File{Data: []byte("hello"), ContentType: "text/plain", Retention: time.Hour})
	u, _ := url.Parse(link(t, s, "http://gw.test/", f.ID, time.Minute))
	if u.Path != "/files/"+f.ID {
		t.Fatalf("path %s", u.Path)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", u.String(), nil))
	if w.Code != 200 || w.Body.String() != "hello" || w.Header().Get("Content-Type") != "text/plain" {
		t.Fatalf("%d %q %v", w.Code, w.Body.String(), w.Header())
	}
}

func TestDispositionNames(t *testing.T) {
	s := open(t, Options{URL: "mem://"}, newClock())
	srv := serve(t, s)
	for _, tc := range []struct{ name, want string }{
		{"", ""},
		{"../../etc/passwd", `inline; filename=passwd`},
		{`C:\Users\me\photo.jpg`, `inline; filename=photo.jpg`},
		{"a\"b\r\nSet-Cookie: x.png", `inline; filename="a\"bSet-Cookie: x.png"`},
		{"café.png", `inline; filename*=utf-8''caf%C3%A9.png`},
	} {
		f := put(t, s, File{Data: []byte("x"), ContentType: "image/png", Name: tc.name, Retention: time.Hour})
		r := do(t, "GET", link(t, s, srv.URL, f.ID, time.Minute))
		if got := r.header.Get("Content-Disposition"); got != tc.want {
			t.Errorf("name %q: disposition %q, want %q", tc.name, got, tc.want)
		}
		if len(r.header.Values("Set-Cookie")) != 0 {
			t.Errorf("name %q injected a header", tc.name)
		}
	}
}

// FuzzLinkForgery: a link is served only as it was signed. Any other id,
// expiry or signature (a stretched expiry, a signature of another file,
// padding, another encoding) answers 404, whatever the client writes.
func FuzzLinkForgery(f *testing.F) {
	c := newClock()
	s := open(f, Options{URL: "mem://"}, c)
	a := put(f, s, File{Data: []byte("a"), ContentType: "text/plain", Retention: time.Hour})
	good := link(f, s, "http://gw", a.ID, 10*time.Minute)
	pu, _ := url.Parse(good)
	gq := pu.Query()
	exp, _ := strconv.ParseInt(gq.Get("expires"), 10, 64)
	f.Add(a.ID, gq.Get("expires"), gq.Get("sig"))
	f.Add(a.ID, strconv.FormatInt(exp+3600, 10), gq.Get("sig"))
	f.Add(a.ID, gq.Get("expires"), gq.Get("sig")+"=")
	f.Add(a.ID+"x", gq.Get("expires"), gq.Get("sig"))
	f.Add(a.ID, "+"+gq.Get("expires"), gq.Get("sig"))
	want, _ := base64.RawURLEncoding.DecodeString(gq.Get("sig"))
	h := s.Handler()
	f.Fuzz(func(t *testing.T, id, expires, sig string) {
		v := url.Values{"expires": {expires}, "sig": {sig}}
		r := httptest.NewRequest("GET", "/files/x?"+v.Encode(), nil)
		r.SetPathValue("id", id)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		n, err := strconv.ParseInt(expires, 10, 64)
		// One signature, however it is spelt in base64url.
		got, derr := base64.RawURLEncoding.DecodeString(sig)
		genuine := id == a.ID && err == nil && n == exp && derr == nil && bytes.Equal(got, want)
		if w.Code == 200 && !genuine {
			t.Fatalf("served a forged link: id %q expires %q sig %q", id, expires, sig)
		}
		if w.Code != 200 && w.Code != 404 && w.Code != 410 {
			t.Fatalf("status %d for id %q expires %q sig %q", w.Code, id, expires, sig)
		}
	})
}
