package localblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/drivertest"
	"gocloud.dev/gcerrors"
)

type harness struct{ dir string }

func (h *harness) MakeDriver(context.Context) (driver.Bucket, error) { return New(h.dir, nil) }

// MakeDriverForNonexistentBucket: a directory that does not exist is no
// bucket (New refuses it), so the case does not apply.
func (h *harness) MakeDriverForNonexistentBucket(context.Context) (driver.Bucket, error) {
	return nil, nil
}
func (h *harness) HTTPClient() *http.Client         { return nil }
func (h *harness) SupportsCopy() bool               { return true }
func (h *harness) SupportsNonSlashDelimiters() bool { return true }
func (h *harness) Close()                           {}

// TestConformance runs gocloud's conformance suite for drivers.
func TestConformance(t *testing.T) {
	drivertest.RunConformanceTests(t, func(_ context.Context, t *testing.T) (drivertest.Harness, error) {
		return &harness{dir: t.TempDir()}, nil
	}, []drivertest.AsTest{verifyAs{}})
}

// verifyAs checks the types As exposes (the package's comment lists them).
type verifyAs struct{}

func (verifyAs) Name() string { return "verify As types for localblob" }

func (verifyAs) BucketCheck(b *blob.Bucket) error {
	var fi os.FileInfo
	if !b.As(&fi) || !fi.IsDir() {
		return errors.New("Bucket.As failed")
	}
	return nil
}

func (verifyAs) ErrorCheck(b *blob.Bucket, err error) error {
	var perr *os.PathError
	if !b.ErrorAs(err, &perr) {
		return errors.New("want ErrorAs to succeed for *os.PathError")
	}
	if !strings.HasSuffix(perr.Path, Suffix) {
		return fmt.Errorf("path %q", perr.Path)
	}
	return nil
}

func asFile(as func(any) bool) error {
	var f *os.File
	if !as(&f) || f == nil {
		return errors.New("want As to give the *os.File")
	}
	return nil
}

func (verifyAs) BeforeRead(as func(any) bool) error  { return asFile(as) }
func (verifyAs) BeforeWrite(as func(any) bool) error { return asFile(as) }
func (verifyAs) BeforeCopy(as func(any) bool) error  { return asFile(as) }
func (verifyAs) BeforeDelete(func(any) bool) error   { return nil }
func (verifyAs) BeforeList(func(any) bool) error     { return nil }
func (verifyAs) BeforeSign(func(any) bool) error     { return nil }
func (verifyAs) ListObjectCheck(o *blob.ListObject) error {
	if o.IsDir {
		return nil
	}
	var fi os.FileInfo
	if !o.As(&fi) {
		return errors.New("ListObject.As failed")
	}
	return nil
}

func (verifyAs) AttributesCheck(a *blob.Attributes) error {
	var fi os.FileInfo
	if !a.As(&fi) {
		return errors.New("Attributes.As failed")
	}
	return nil
}

func (verifyAs) ReaderCheck(r *blob.Reader) error {
	var ir io.Reader
	if !r.As(&ir) {
		return errors.New("Reader.As failed")
	}
	return nil
}

// TestKeyPaths: every key maps to a path whose pieces are never "", "."
// or "..", whose directories never end in Suffix, and back to the key.
func TestKeyPaths(t *testing.T) {
	for _, key := range []string{
		"0000000006abcdefghijklmnopqrstuvwxy", "a/b", "a.blob/b", "a.blob", "a/b.blob/c.blob",
		"../x", "./x", "x/..", "//", "a//b", "/a", "a/", "%41", "\x00\x1f\x7f\\", "☺/☺",
	} {
		rel, err := relPath(key)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for i, p := range parts {
			if p == "" || p == "." || p == ".." || (i < len(parts)-1 && strings.HasSuffix(p, Suffix)) {
				t.Errorf("%q: path %q has the piece %q", key, rel, p)
			}
		}
		if back, ok := KeyOf(rel); !ok || back != key {
			t.Errorf("%q: path %q reads back as %q %v", key, rel, back, ok)
		}
	}
	if rel, _ := relPath("0000000006abcdefghijklmnopqrstuvwxy"); rel != "0000000006abcdefghijklmnopqrstuvwxy"+Suffix {
		t.Errorf("an id's file is %q", rel)
	}
	if _, ok := KeyOf("0000000006abcdefghijklmnopqrstuvwxy"); ok {
		t.Error("a file without the suffix read as a blob")
	}
}

// TestLayout: a blob is one file, its header then its content; another
// version's header is an error (not a missing blob, nor content); files
// that are not blob files (another program's, a temporary file) are not
// listed.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBucket(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "k", []byte("content"), &blob.WriterOptions{ContentType: "image/png", Metadata: map[string]string{"owner": "acct_1"}}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "k"+Suffix))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte(magic+"\x01")) || !bytes.HasSuffix(raw, []byte("content")) {
		t.Fatalf("file %q", raw)
	}
	a, err := b.Attributes(ctx, "k")
	if err != nil || a.ContentType != "image/png" || a.Metadata["owner"] != "acct_1" || a.Size != 7 {
		t.Fatalf("attributes %+v %v", a, err)
	}
	for _, name := range []string{"other", "k.blob.18a2b3c4d5e6f.tmp", "k.attrs"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for it := b.List(nil); ; {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	if len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("listed %q", keys)
	}
	raw[len(magic)] = 2
	if err := os.WriteFile(filepath.Join(dir, "k"+Suffix), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Attributes(ctx, "k"); err == nil || gcerrors.Code(err) == gcerrors.NotFound {
		t.Fatalf("another version: %v", err)
	}
	if _, err := b.ReadAll(ctx, "k"); err == nil || gcerrors.Code(err) == gcerrors.NotFound {
		t.Fatalf("another version read: %v", err)
	}
}

func TestNewRefusesMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	if _, err := New(dir, nil); err == nil {
		t.Fatal("opened a missing directory")
	}
	if _, err := New(dir, &Options{CreateDir: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created %v %v", fi, err)
	}
}
