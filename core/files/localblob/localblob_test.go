package localblob

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/drivertest"
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
	}, nil)
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
