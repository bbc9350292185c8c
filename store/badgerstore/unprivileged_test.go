package badgerstore

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testkind"
)

// runUnprivileged runs the test named name again in a copy of this test
// binary as the user nobody (the tests run as root), and fails t unless it
// passed there. When the switch of user is refused (a container without
// CAP_SETUID) it skips, or fails in CI.
func runUnprivileged(t *testing.T, name string) {
	t.Helper()
	cannot := func(format string, args ...any) {
		t.Helper()
		if testkind.InCI() {
			t.Fatalf("cannot run as an unprivileged user: "+format, args...)
		}
		t.Skipf("cannot run as an unprivileged user: "+format, args...)
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		cannot("%v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The go tool's build directory is root's alone: the child runs a copy
	// from a directory nobody can read, with a temporary directory of its own.
	dir, err := os.MkdirTemp("", "badgerstore-nobody-") // t.TempDir's parent is root's alone
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	bin := filepath.Join(dir, "badgerstore.test")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{copyExecutable(bin), os.Chmod(dir, 0o755), os.Chown(tmp, uid, gid)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if cmd.Process == nil {
		cannot("%v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name+" ") {
		t.Fatalf("%s as uid %d: %v\n%s", name, uid, err, out)
	}
	t.Logf("%s passed as uid %d", name, uid)
}

func copyExecutable(to string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
