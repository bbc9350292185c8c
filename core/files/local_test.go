package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tollgate-gw/tollgate/core/files/localblob"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"
)

// earlierBucket is the directory as the earlier release opened it:
// fileblob, attributes in a <id>.attrs sidecar.
func earlierBucket(t testing.TB, dir string) *blob.Bucket {
	t.Helper()
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{CreateDir: true, DirFileMode: 0o700, NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// putEarlier stores f in s's directory as the earlier release did
// (through fileblob, as s.earlier is opened), and returns its id.
func putEarlier(t testing.TB, s *Store, f File) string {
	t.Helper()
	var exp time.Time
	if f.Retention > 0 {
		exp = s.now().Add(f.Retention + time.Second - 1).Truncate(time.Second)
	}
	id, err := newID(exp)
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]string{metaOwner: f.Owner}
	if n := cleanName(f.Name); n != "" {
		md[metaName] = n
	}
	ctx := context.Background()
	if err := s.earlier.WriteAll(ctx, id, f.Data, &blob.WriterOptions{ContentType: f.ContentType, Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, id+".attrs")); s.dir != "" && err != nil {
		t.Fatalf("the earlier layout wrote no sidecar: %v", err)
	}
	return id
}

// TestLocalLayoutOneFile: on a directory a hosted file is one file on
// disk, <id>.blob (no attributes sidecar), and its attributes come back
// whole; the earlier release's fileblob does not find it (a downgraded
// gateway answers 404, never the header as content).
func TestLocalLayoutOneFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Options{Dir: dir}, newClock())
	info := put(t, s, File{Data: []byte("ID3 some audio"), ContentType: "audio/mpeg", Name: "song.mp3", Owner: "acct_9", Retention: time.Hour})
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != info.ID+localblob.Suffix {
		t.Fatalf("entries %v, want the one file %s%s", ents, info.ID, localblob.Suffix)
	}
	got, err := s.Stat(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentType != "audio/mpeg" || got.Name != "song.mp3" || got.Owner != "acct_9" || got.Size != 14 ||
		!got.ExpiresAt.Equal(info.ExpiresAt) || got.CreatedAt.IsZero() {
		t.Fatalf("stat %+v", got)
	}
	r, _, err := s.Open(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Seek(4, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "some audio" {
		t.Fatalf("read %q %v", b, err)
	}
	if _, err := earlierBucket(t, dir).Attributes(ctx, info.ID); gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("the earlier release finds the file: %v", err)
	}
	// A header longer than the first read.
	long := put(t, s, File{Data: []byte("x"), ContentType: "text/plain; note=" + strings.Repeat("a", 900), Owner: "kb:1"})
	if got, err := s.Stat(ctx, long.ID); err != nil || got.ContentType != long.ContentType || got.Size != 1 || got.Owner != "kb:1" {
		t.Fatalf("long header: %+v %v", got, err)
	}
	if err := s.Delete(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, info.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
}

// TestEarlierLayoutStillServed: files the earlier release wrote (content
// and sidecar, through fileblob) are served with their attributes, ranges
// included, also one whose content begins as a blob file's header does;
// deleting one removes its sidecar.
func TestEarlierLayoutStillServed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Options{Dir: dir}, newClock())
	srv := serve(t, s)
	for _, data := range [][]byte{
		append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...),
		[]byte("\x00tollgate-blob\n\x01\x03abc and the rest"),
	} {
		id := putEarlier(t, s, File{Data: data, ContentType: "image/png", Name: "old.png", Owner: "acct_1", Retention: time.Hour})
		info, err := s.Stat(ctx, id)
		if err != nil || info.ContentType != "image/png" || info.Name != "old.png" || info.Owner != "acct_1" || info.Size != int64(len(data)) {
			t.Fatalf("stat %+v %v", info, err)
		}
		u := link(t, s, srv.URL, id, 0)
		r := do(t, "GET", u)
		if r.status != 200 || r.body != string(data) || r.header.Get("Content-Type") != "image/png" ||
			r.header.Get("Content-Disposition") != "inline; filename=old.png" {
			t.Fatalf("GET %d %q %v", r.status, r.body, r.header)
		}
		rr := do(t, "GET", u, "Range", "bytes=1-3")
		if rr.status != 206 || rr.body != string(data[1:4]) || rr.header.Get("Content-Range") != "bytes 1-3/"+strconv.Itoa(len(data)) {
			t.Fatalf("range %d %q %v", rr.status, rr.body, rr.header)
		}
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, id+".attrs")); !os.IsNotExist(err) {
			t.Fatalf("sidecar left: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
			t.Fatalf("content left: %v", err)
		}
	}
}

// TestServedTheSameOnBothLayouts: the handler's answer for a file is the
// same byte for byte whichever layout holds it (but the ETag, made from
// the modification time).
func TestServedTheSameOnBothLayouts(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir}, newClock())
	srv := serve(t, s)
	f := File{Data: bytes.Repeat([]byte("0123456789"), 100), ContentType: "video/mp4", Name: "clip.mp4", Owner: "acct_2", Retention: time.Hour}
	ids := []string{put(t, s, f).ID, putEarlier(t, s, f)}
	for _, hdr := range [][]string{nil, {"Range", "bytes=10-19"}, {"Range", "bytes=-5"}, {"Range", "bytes=990-"}} {
		var got [2]response
		for i, id := range ids {
			got[i] = do(t, "GET", link(t, s, srv.URL, id, 0), hdr...)
			got[i].header.Del("ETag")
			got[i].header.Del("Date")
		}
		if got[0].status != got[1].status || got[0].body != got[1].body || !equalHeader(got[0].header, got[1].header) {
			t.Fatalf("%v: new %d %v, earlier %d %v", hdr, got[0].status, got[0].header, got[1].status, got[1].header)
		}
		if hdr == nil && (got[0].status != 200 || got[0].body != string(f.Data)) {
			t.Fatalf("GET %d %d bytes", got[0].status, len(got[0].body))
		}
	}
}

func equalHeader(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// TestTornWriteNeverVisible: a file being written (its temporary file), a
// Put whose reader fails half way and one whose context ends keep nothing
// a reader can see; a blob file cut inside its header is an error (500),
// never content.
func TestTornWriteNeverVisible(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Options{Dir: dir}, newClock())
	srv := serve(t, s)

	info := put(t, s, File{Data: []byte("content"), ContentType: "image/png", Name: "a.png", Retention: time.Hour})
	path := filepath.Join(dir, info.ID+localblob.Suffix)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Half written, under the temporary name the writer uses.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".18a2b3c4d5e6f.tmp", whole[:len(whole)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, info.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stat of a file being written: %v", err)
	}
	if r := do(t, "GET", link(t, s, srv.URL, info.ID, 0)); r.status != 404 {
		t.Fatalf("GET of a file being written: %d %q", r.status, r.body)
	}
	// Cut inside its header.
	if err := os.WriteFile(path, whole[:18], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, info.ID); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("stat of a damaged file: %v", err)
	}
	if r := do(t, "GET", link(t, s, srv.URL, info.ID, 0)); r.status != 500 {
		t.Fatalf("GET %d %q", r.status, r.body)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)

	boom := errors.New("the upstream hung up")
	if _, err := s.Put(ctx, File{Reader: io.MultiReader(bytes.NewReader([]byte("ab")), iotest.ErrReader(boom)), ContentType: "image/png"}); err == nil {
		t.Fatal("a failed read stored a file")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cctx, File{Data: []byte("x"), ContentType: "image/png"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Fatalf("left behind: %v (before %v)", after, before)
	}
}

// TestFileURLWithPrefix: a file:// URL's prefix= folder holds the files of
// both layouts, and the sweep reads that folder itself.
func TestFileURLWithPrefix(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	c := newClock()
	s := open(t, Options{URL: "file://" + root + "?prefix=tollgate/files/"}, c)
	want := filepath.Join(root, "tollgate", "files")
	if s.dir != want {
		t.Fatalf("dir %q, want %q", s.dir, want)
	}
	n := put(t, s, File{Data: []byte("new"), ContentType: "text/plain", Retention: time.Hour})
	e := putEarlier(t, s, File{Data: []byte("old"), ContentType: "text/plain", Retention: time.Hour})
	if _, err := os.Stat(filepath.Join(want, n.ID+localblob.Suffix)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{n.ID, e} {
		if _, err := s.Stat(ctx, id); err != nil {
			t.Fatalf("stat %s: %v", id, err)
		}
	}
	c.Add(2 * time.Hour)
	if got, err := s.Sweep(ctx); got != 2 || err != nil {
		t.Fatalf("sweep %d %v", got, err)
	}
	if ents, _ := os.ReadDir(want); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// TestFileURLRefusesSidecarOptions: fileblob's options that the one-file
// layout cannot honour are refused at start rather than ignored.
func TestFileURLRefusesSidecarOptions(t *testing.T) {
	for _, q := range []string{"metadata=skip", "base_url=/x&secret_key_path=/k"} {
		o := Options{URL: "file://" + t.TempDir() + "?" + q, Secret: secret}
		if s, err := Open(context.Background(), o); err == nil {
			_ = s.Close()
			t.Errorf("%s: opened", q)
		}
	}
}

// TestFileURLListedSweep: with a prefix that is no folder (the sweep then
// lists through gocloud), files of both layouts expire and are swept, and
// other keys are left alone.
func TestFileURLListedSweep(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	c := newClock()
	s := open(t, Options{URL: "file://" + root + "?prefix=pre"}, c)
	if s.dir != "" {
		t.Fatalf("the store reads %q itself", s.dir)
	}
	n := put(t, s, File{Data: []byte("new"), ContentType: "text/plain", Retention: time.Hour})
	e := putEarlier(t, s, File{Data: []byte("old"), ContentType: "text/plain", Retention: time.Hour})
	keep := put(t, s, File{Data: []byte("kept"), ContentType: "text/plain"})
	if err := os.WriteFile(filepath.Join(root, "other.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pre" + n.ID + localblob.Suffix, "pre" + e, "pre" + e + ".attrs"} {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{n.ID, e} {
		if _, err := s.Stat(ctx, id); err != nil {
			t.Fatalf("stat %s: %v", id, err)
		}
	}
	c.Add(2 * time.Hour)
	if got, err := s.Sweep(ctx); got != 2 || err != nil {
		t.Fatalf("sweep %d %v", got, err)
	}
	ents, _ := os.ReadDir(root)
	var names []string
	for _, d := range ents {
		names = append(names, d.Name())
	}
	if strings.Join(names, " ") != "other.txt pre"+keep.ID+localblob.Suffix {
		t.Fatalf("left %v", names)
	}
}
