package badgerstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// A kill between Badger's creating its next value log and sizing it
// leaves an empty file; the store still opens, with its data.
func TestOpensPastAnEmptyValueLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if len(vlogs) == 0 {
		t.Fatal("no value log to follow")
	}
	sort.Strings(vlogs)
	var fid int
	if _, err := fmt.Sscanf(filepath.Base(vlogs[len(vlogs)-1]), "%06d.vlog", &fid); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, fmt.Sprintf("%06d.vlog", fid+1))
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openTemp(t, dir, Options{})
	w, err := s.GetWallet(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if w.Balance != money.Credits(10) {
		t.Fatalf("balance %v after reopening", w.Balance)
	}
}
