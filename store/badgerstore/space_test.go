//go:build linux

package badgerstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testdisk"
	"github.com/tollgate-gw/tollgate/store"
)

// A full disk refuses money moves (settlements included, their holds
// kept) with ErrUnavailable and a message naming no path, while writes
// keep going to Badger elsewhere in the store; nothing faults. When the
// space returns, the reserve is taken again and the moves pass.
func TestFullDiskRefusesMovesAndRecovers(t *testing.T) {
	disk := testdisk.Mount(t, "24m")
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
	free := testdisk.Fill(t, disk)
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
	free()
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
