package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOpenOptions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		desc string
		o    Options
		want string
	}{
		{"short secret", Options{URL: "mem://", Secret: []byte("short")}, "at least 16 bytes"},
		{"no secret", Options{URL: "mem://"}, "at least 16 bytes"},
		{"nothing to open", Options{Secret: secret}, "no storage URL and no directory"},
		{"unknown scheme", Options{URL: "ftp://host/dir", Secret: secret}, `scheme "ftp" is not supported (supported: file://, mem://, s3://)`},
		{"gcs not built in", Options{URL: "gs://bucket", Secret: secret}, `scheme "gs" is not supported`},
		{"no scheme", Options{URL: "/var/lib/tollgate/files", Secret: secret}, "has no scheme"},
		{"bad parameter", Options{URL: "file://" + t.TempDir() + "?colour=blue", Secret: secret}, `invalid query parameter "colour"`},
		{"password not echoed", Options{URL: "ftp://u:hunter2@host/x", Secret: secret}, "not supported"},
		{"negative sweep", Options{URL: "mem://", Secret: secret, SweepEvery: -1}, "must not be negative"},
		{"dir is a file", Options{Dir: writeFile(t), Secret: secret}, "not a directory"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s, err := Open(ctx, tc.o)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error leaks a password: %v", err)
			}
		})
	}
}

func writeFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPutStatOpenDelete(t *testing.T) {
	ctx := context.Background()
	for name, o := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s := open(t, o, c)
			data := bytes.Repeat([]byte("0123456789"), 100_000)
			// A reader, not a byte slice: Put streams.
			info := put(t, s, File{Reader: bytes.NewReader(data), ContentType: "audio/mpeg", Name: "speech.mp3", Owner: "acct_9", Retention: time.Hour})
			st, err := s.Stat(ctx, info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st.ID != info.ID || st.Size != int64(len(data)) || st.ContentType != "audio/mpeg" ||
				st.Name != "speech.mp3" || st.Owner != "acct_9" || !st.ExpiresAt.Equal(info.ExpiresAt) {
				t.Fatalf("stat %+v, put %+v", st, info)
			}
			rc, oi, err := s.Open(ctx, info.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data) || oi.Name != "speech.mp3" {
				t.Fatalf("open: %v, %d bytes, %+v", err, len(got), oi)
			}
			if err := s.Delete(ctx, info.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, info.ID); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := s.Stat(ctx, info.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("stat after delete: %v", err)
			}
			if _, _, err := s.Open(ctx, info.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("open after delete: %v", err)
			}
			if _, err := s.Stat(ctx, "../../etc/passwd"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("stat of a malformed id: %v", err)
			}
		})
	}
}

func TestPutOptions(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := open(t, Options{URL: "mem://", MaxSize: 1000}, c)

	t.Run("sniffed content type", func(t *testing.T) {
		f := put(t, s, File{Data: []byte("\x89PNG\r\n\x1a\n0000"), Retention: time.Hour})
		if f.ContentType != "image/png" {
			t.Fatalf("sniffed %q", f.ContentType)
		}
		st, err := s.Stat(ctx, f.ID)
		if err != nil || st.ContentType != "image/png" || st.Size != 12 {
			t.Fatalf("stat %+v %v", st, err)
		}
	})
	t.Run("never expires", func(t *testing.T) {
		s := open(t, Options{URL: "mem://"}, c)
		f := put(t, s, File{Data: []byte("kb source"), ContentType: "text/markdown"})
		if !f.ExpiresAt.IsZero() || !strings.HasPrefix(f.ID, "000000000") {
			t.Fatalf("info %+v", f)
		}
		if _, _, err := s.Link("http://gw", f.ID, 0); !errors.Is(err, ErrNoExpiry) {
			t.Fatalf("unbounded link: %v", err)
		}
		_, exp, err := s.Link("http://gw", f.ID, time.Hour)
		if err != nil || !exp.Equal(c.Now().Add(time.Hour).Truncate(time.Second).Add(time.Second)) {
			t.Fatalf("link expiry %v %v", exp, err)
		}
		c.Add(10 * 365 * 24 * time.Hour)
		if n, err := s.Sweep(ctx); n != 0 || err != nil {
			t.Fatalf("sweep %d %v", n, err)
		}
		if _, err := s.Stat(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		_, err := s.Put(ctx, File{Reader: bytes.NewReader(make([]byte, 1001)), ContentType: "image/png", Retention: time.Hour})
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("put: %v", err)
		}
		if _, err := s.Put(ctx, File{Data: make([]byte, 1000), ContentType: "image/png", Retention: time.Hour}); err != nil {
			t.Fatalf("exactly the limit: %v", err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, f := range []File{
			{Data: []byte("x"), Reader: bytes.NewReader(nil)},
			{Data: []byte("x"), Retention: -time.Second},
			{Data: []byte("x"), ContentType: "not a/type/at all;;"},
		} {
			if _, err := s.Put(ctx, f); err == nil {
				t.Errorf("put %+v: no error", f)
			}
		}
	})
	t.Run("reader fails", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := s.Put(ctx, File{Reader: io.MultiReader(bytes.NewReader([]byte("abc")), errReader{boom}), ContentType: "image/png"})
		if !errors.Is(err, boom) {
			t.Fatalf("put: %v", err)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestFailedPutLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, MaxSize: 100}, newClock())
	if _, err := s.Put(ctx, File{Data: make([]byte, 101), ContentType: "image/png", Retention: time.Hour}); !errors.Is(err, ErrTooLarge) {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, File{Reader: errReader{io.ErrUnexpectedEOF}, ContentType: "image/png"}); err == nil {
		t.Fatal("no error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestConcurrentPuts(t *testing.T) {
	for name, o := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, o, newClock())
			const n = 24
			ids := make([]string, n)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f, err := s.Put(ctx, File{Data: bytes.Repeat([]byte{byte(i)}, 4096+i), ContentType: "image/png", Retention: time.Hour})
					if err != nil {
						errs <- err
						return
					}
					ids[i] = f.ID
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for i, id := range ids {
				if seen[id] {
					t.Fatalf("duplicate id %s", id)
				}
				seen[id] = true
				rc, _, err := s.Open(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(rc)
				rc.Close()
				if !bytes.Equal(b, bytes.Repeat([]byte{byte(i)}, 4096+i)) {
					t.Fatalf("file %d has the wrong content", i)
				}
			}
		})
	}
}

func TestReopenKeepsFilesAndLinks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newClock()
	s1, err := Open(ctx, Options{Dir: dir, Secret: secret, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	f := put(t, s1, File{Data: []byte("persisted"), ContentType: "image/webp", Name: "out.webp", Owner: "acct_2", Retention: 2 * time.Hour})
	u := link(t, s1, "http://gw.test", f.ID, 0)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(t, Options{URL: "file://" + dir}, c)
	st, err := s2.Stat(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.ContentType != "image/webp" || st.Name != "out.webp" || st.Owner != "acct_2" || st.Size != 9 || !st.ExpiresAt.Equal(f.ExpiresAt) {
		t.Fatalf("after reopen %+v", st)
	}
	srv := serve(t, s2)
	r := do(t, "GET", strings.Replace(u, "http://gw.test", srv.URL, 1))
	if r.status != 200 || r.body != "persisted" {
		t.Fatalf("old link after reopen: %d %q", r.status, r.body)
	}

	// Another secret: the same link is dead, the file is not.
	s3, err := Open(ctx, Options{Dir: dir, Secret: []byte("a-rotated-secret-0123456789"), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	srv3 := serve(t, s3)
	wantErr(t, do(t, "GET", strings.Replace(u, "http://gw.test", srv3.URL, 1)), 404, "not_found")
	if r := do(t, "GET", link(t, s3, srv3.URL, f.ID, time.Minute)); r.status != 200 {
		t.Fatalf("new link: %d", r.status)
	}
}

func TestCleanName(t *testing.T) {
	long := strings.Repeat("é", 150)
	for in, want := range map[string]string{
		"":               "",
		"  a.png ":       "a.png",
		"/":              "",
		"..":             "",
		"dir/":           "dir",
		"a/b/c.txt":      "c.txt",
		`a\b.txt`:        "b.txt",
		"x\x00y\x7f.png": "xy.png",
		"bad\xffutf8":    "badutf8",
		long:             strings.Repeat("é", 100),
	} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
}
