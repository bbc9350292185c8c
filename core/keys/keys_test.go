package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateIsWellFormed(t *testing.T) {
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 76 || !WellFormed(k) {
		t.Fatalf("bad key %q", k)
	}
	for _, bad := range []string{"", k[:75], k + "0", strings.ToUpper(k), "sk-other-" + k[9:], k[:70] + "zzzzzz"} {
		if WellFormed(bad) {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestSealRoundTrip(t *testing.T) {
	s, err := NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := Generate()
	sealed, err := s.Seal(k)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), k[12:]) {
		t.Fatal("sealed value contains the key in clear")
	}
	got, err := s.Open(sealed, Hash(k))
	if err != nil || got != k {
		t.Fatalf("open: %q %v", got, err)
	}
	other, _ := Generate()
	if _, err := s.Open(sealed, Hash(other)); err == nil {
		t.Fatal("sealed value opened under another key's hash")
	}
	if _, err := s.Open(nil, Hash(k)); err != ErrNotRevealable {
		t.Fatalf("hash-only: %v", err)
	}
}

func TestLoadMasterGeneratesOnce(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadMaster("", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadMaster("", dir, "")
	if err != nil || string(a) != string(b) {
		t.Fatalf("second load differs: %v", err)
	}
	if _, err := LoadMaster("abc", dir, ""); err == nil {
		t.Fatal("short hex accepted")
	}
}

// A key file outside the data directory: generated there, never in the
// data directory, and read back from there.
func TestLoadMasterFromAFileOutsideTheDataDir(t *testing.T) {
	data, keyDir := t.TempDir(), t.TempDir()
	file := filepath.Join(keyDir, "secrets", "master.key")
	a, err := LoadMaster("", data, file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "master.key")); !os.IsNotExist(err) {
		t.Fatalf("a key was written into the data directory: %v", err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	b, err := LoadMaster("", data, file)
	if err != nil || string(a) != string(b) {
		t.Fatalf("second load differs: %v", err)
	}
}
