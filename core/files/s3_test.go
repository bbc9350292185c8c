package files

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// TestS3 runs the store on the s3:// driver against an in-process S3
// server on 127.0.0.1 (gofakes3): the URL parameters an operator writes for
// an S3-compatible service, metadata through S3 headers, listing and delete.
func TestS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("tollgate"); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(gofakes3.New(backend).Server())
	defer fake.Close()
	// Static credentials from the environment, and nothing else the SDK
	// might reach for (profiles, the instance metadata service).
	empty := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Unsetenv("AWS_PROFILE")

	base := "s3://tollgate?endpoint=" + fake.URL + "&region=us-east-1&use_path_style=true&prefix=hosted/"
	t.Run("default checksums", func(t *testing.T) { testS3(t, backend, base) })
	// What docs/files.md advises for services that reject the SDK's
	// default checksum headers.
	t.Run("checksums when required", func(t *testing.T) {
		testS3(t, backend, base+"&request_checksum_calculation=when_required&response_checksum_validation=when_required")
	})
}

func testS3(t *testing.T, backend *s3mem.Backend, url string) {
	ctx := context.Background()
	c := newClock()
	s := open(t, Options{URL: url}, c)
	srv := serve(t, s)

	data := []byte("\x89PNG\r\n\x1a\n s3 content")
	f := put(t, s, File{Data: data, ContentType: "image/png", Name: "café.png", Owner: "acct_s3", Retention: time.Hour})
	kb := put(t, s, File{Data: []byte("source"), ContentType: "text/plain"})
	st, err := s.Stat(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "café.png" || st.Owner != "acct_s3" || st.ContentType != "image/png" || st.Size != int64(len(data)) {
		t.Fatalf("stat %+v", st)
	}
	// The prefix parameter keeps the files under a folder of the bucket.
	if _, err := backend.HeadObject("tollgate", "hosted/"+f.ID); err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}

	u := link(t, s, srv.URL, f.ID, 0)
	r := do(t, "GET", u)
	if r.status != 200 || r.body != string(data) || r.header.Get("Content-Disposition") != `inline; filename*=utf-8''caf%C3%A9.png` {
		t.Fatalf("GET %d %q %v", r.status, r.body, r.header)
	}
	if r := do(t, "GET", u, "Range", "bytes=0-3"); r.status != 206 || r.body != "\x89PNG" {
		t.Fatalf("range %d %q", r.status, r.body)
	}
	if r := do(t, "HEAD", u); r.status != 200 || r.header.Get("Content-Length") != "19" {
		t.Fatalf("HEAD %d %v", r.status, r.header)
	}

	c.Add(time.Hour + time.Second)
	n, err := s.Sweep(ctx)
	if n != 1 || err != nil {
		t.Fatalf("sweep %d %v", n, err)
	}
	wantErr(t, do(t, "GET", u), 410, FileExpired)
	if _, err := s.Stat(ctx, kb.ID); err != nil {
		t.Fatalf("kb file: %v", err)
	}
}
