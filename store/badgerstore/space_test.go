//go:build linux

package badgerstore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// smallDisk mounts a tmpfs of size on a fresh directory (root only; under
// CI a test that cannot mount it fails).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs (needs root): %v: %s", err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file until the disk is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for _, n := range []int{64 << 10, 4 << 10, 512} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return p
}

// A full disk refuses money moves (settlements included, their holds
// kept) with ErrUnavailable and a message naming no path, while writes
// keep going to Badger elsewhere in the store; nothing faults. When the
// space returns, the reserve is taken again and the moves pass.
func TestFullDiskRefusesMovesAndRecovers(t *testing.T) {
	disk := smallDisk(t, "24m")
	dir := filepath.Join(disk, "badger")
	ctx := t.Context()
	s := openTemp(t, dir, Options{Reserve: 4 << 20, ProbeInterval: 50 * time.Millisecond})
	if fi, err := os.Stat(filepath.Join(dir, reserveFile)); err != nil || allocated(fi) < 4<<20 {
		t.Fatalf("reserve file: %v", err)
	}
	if fi, err := os.Stat(memPath(dir, s.health.space.nextMem-1)); err != nil || allocated(fi) < walSize(4<<20) {
		t.Fatalf("the memtable's log is not allocated: %v", err)
	}
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "h1", AccountID: "a", Amount: money.Credits(1)}); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, disk)
	waitCheck(t, s, true)
	err := s.Check(ctx)
	if !errors.Is(err, store.ErrUnavailable) || strings.Contains(err.Error(), disk) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("check on a full disk: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, reserveFile)); !os.IsNotExist(err) {
		t.Errorf("the reserve was kept on a full disk: %v", err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "h2", AccountID: "a", Amount: 1}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("hold on a full disk: %v", err)
	}
	row := &store.LogRow{AccountID: "a", RequestID: "h1", Model: "m", Status: store.StatusSuccess, Cost: money.Credits(1) / 2}
	if err := s.Settle(ctx, store.Settlement{HoldID: "h1", Charge: row.Cost, Row: row}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("settlement on a full disk: %v", err)
	}
	if err := s.PutModel(ctx, store.Model{ID: "x"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a short transaction on a full disk: %v", err)
	}
	if hs, _ := s.OpenHolds(ctx); len(hs) != 1 {
		t.Fatalf("open holds on a full disk: %v", hs)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitCheck(t, s, false)
	if err := s.Settle(ctx, store.Settlement{HoldID: "h1", Charge: row.Cost, Row: row}); err != nil {
		t.Fatalf("settlement after the space returned: %v", err)
	}
	if w, _ := s.GetWallet(ctx, "a"); w.Balance != money.Credits(10)-row.Cost || w.Held != 0 {
		t.Fatalf("wallet %+v", w)
	}
	if _, err := os.Stat(filepath.Join(dir, reserveFile)); err != nil {
		t.Errorf("the reserve was not taken again: %v", err)
	}
}
