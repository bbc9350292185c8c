package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob"
)

func TestSweep(t *testing.T) {
	ctx := context.Background()
	for name, o := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s := open(t, o, c)
			short := put(t, s, File{Data: []byte("1"), ContentType: "image/png", Retention: time.Hour})
			day := put(t, s, File{Data: []byte("2"), ContentType: "image/png", Retention: 24 * time.Hour})
			day2 := put(t, s, File{Data: []byte("3"), ContentType: "image/png", Retention: 24 * time.Hour})
			kb := put(t, s, File{Data: []byte("4"), ContentType: "text/plain"})

			if n, err := s.Sweep(ctx); n != 0 || err != nil {
				t.Fatalf("early sweep %d %v", n, err)
			}
			c.Add(time.Hour - time.Second)
			if n, _ := s.Sweep(ctx); n != 0 {
				t.Fatalf("swept %d before the hour", n)
			}
			// Expiries round up to the second: the clock is at .25 s.
			c.Add(time.Second)
			if n, _ := s.Sweep(ctx); n != 0 {
				t.Fatalf("swept %d before the rounded expiry", n)
			}
			c.Add(750 * time.Millisecond)
			if n, err := s.Sweep(ctx); n != 1 || err != nil {
				t.Fatalf("hour sweep %d %v", n, err)
			}
			if _, err := s.bucket.Attributes(ctx, short.ID); err == nil {
				t.Fatal("the hour file is still in the bucket")
			}
			c.Add(23 * time.Hour)
			if n, err := s.Sweep(ctx); n != 2 || err != nil {
				t.Fatalf("day sweep %d %v", n, err)
			}
			for _, id := range []string{day.ID, day2.ID} {
				if _, err := s.Stat(ctx, id); !errors.Is(err, ErrExpired) {
					t.Fatalf("stat %s: %v", id, err)
				}
			}
			if _, err := s.Stat(ctx, kb.ID); err != nil {
				t.Fatalf("the file without retention: %v", err)
			}
		})
	}
}

func TestSweepPages(t *testing.T) {
	ctx := context.Background()
	for name, o := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s := open(t, o, c)
			s.sweepPage = 3
			var keep []string
			for i := range 11 {
				ret := time.Hour
				if i%3 == 0 {
					ret = 2 * time.Hour
				}
				f := put(t, s, File{Data: []byte{byte(i)}, ContentType: "image/png", Retention: ret})
				if ret > time.Hour {
					keep = append(keep, f.ID)
				}
			}
			c.Add(time.Hour + time.Second)
			if n, err := s.Sweep(ctx); n != 7 || err != nil {
				t.Fatalf("sweep %d %v", n, err)
			}
			page, _, err := s.bucket.ListPage(ctx, blob.FirstPageToken, 100, nil)
			if err != nil || len(page) != len(keep) {
				t.Fatalf("left %d files, want %d (%v)", len(page), len(keep), err)
			}
		})
	}
}

func TestSweepLeavesForeignKeysAndRemovesStaleTemps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newClock()
	s := open(t, Options{Dir: dir}, c)
	f := put(t, s, File{Data: []byte("x"), ContentType: "image/png", Retention: time.Hour})

	// Someone else's data in a shared bucket, and a temporary file left by
	// a crash in the middle of a write.
	if err := s.bucket.WriteAll(ctx, "other/report.csv", []byte("a,b"), nil); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(dir, f.ID[:expiryLen]+"zzzzzzzzzzzzzzzzzzzzzzzzzz.18c2d4f1a.tmp")
	if err := os.WriteFile(temp, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := c.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(temp, old, old); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, f.ID[:expiryLen]+"yyyyyyyyyyyyyyyyyyyyyyyyyy.18c2d4f1b.tmp")
	if err := os.WriteFile(fresh, []byte("writing"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fresh, c.Now(), c.Now()); err != nil {
		t.Fatal(err)
	}

	n, err := s.Sweep(ctx)
	if n != 0 || err != nil {
		t.Fatalf("sweep %d %v", n, err)
	}
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Errorf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("an upload in progress was removed: %v", err)
	}
	if ok, _ := s.bucket.Exists(ctx, "other/report.csv"); !ok {
		t.Error("a foreign key was swept")
	}
	c.Add(time.Hour + time.Second)
	if n, err := s.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("sweep %d %v", n, err)
	}
	if ok, _ := s.bucket.Exists(ctx, "other/report.csv"); !ok {
		t.Error("a foreign key was swept")
	}
}

func TestRunSweepsUntilCancelled(t *testing.T) {
	c := newClock()
	s := open(t, Options{URL: "mem://", SweepEvery: 5 * time.Millisecond}, c)
	f := put(t, s, File{Data: []byte("x"), ContentType: "image/png", Retention: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	c.Add(time.Minute + time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ok, _ := s.bucket.Exists(context.Background(), f.ID); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not sweep the expired file")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
}

// TestSweepDirInBatches: a directory's sweep reads it in batches of its
// own and still finds every expired file past the first batch, of either
// layout (one file, or the earlier content and attributes sidecar, removed
// together), and leaves the rest.
func TestSweepDirInBatches(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newClock()
	s := open(t, Options{Dir: dir}, c)
	if s.dir != dir {
		t.Fatalf("the store does not sweep its directory itself: dir %q", s.dir)
	}
	var keep []string
	want := 0
	for i := range 2500 {
		ret := time.Hour
		if i%5 == 0 {
			ret = 3 * time.Hour
		}
		f := File{Data: []byte{byte(i)}, ContentType: "image/png", Retention: ret}
		var id string
		if i%2 == 0 {
			id = put(t, s, f).ID
		} else {
			id = putEarlier(t, s, f)
		}
		if ret > time.Hour {
			keep = append(keep, id)
			want++
			if i%2 == 1 {
				want++ // and its sidecar
			}
		}
	}
	c.Add(2 * time.Hour)
	if n, err := s.Sweep(ctx); n != 2000 || err != nil {
		t.Fatalf("sweep %d %v", n, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != want {
		t.Fatalf("%d entries left, want %d", len(ents), want)
	}
	for _, id := range keep {
		if _, err := s.Stat(ctx, id); err != nil {
			t.Fatalf("kept %s: %v", id, err)
		}
	}
}

func TestLocalDir(t *testing.T) {
	for _, c := range []struct{ url, dir, want string }{
		{"", "/data/files", "/data/files"},
		{"file:///srv/files", "", "/srv/files"},
		{"file:///srv/bucket?prefix=tollgate/", "", "/srv/bucket/tollgate"},
		{"file:///srv/bucket?prefix=a/../b/", "", ""},
		{"file:///srv/bucket?prefix=pre", "", ""},
		{"mem://", "", ""},
		{"s3://bucket?region=eu-west-1", "", ""},
	} {
		if got := localDir(c.url, c.dir); got != c.want {
			t.Errorf("localDir(%q, %q) = %q, want %q", c.url, c.dir, got, c.want)
		}
	}
}
