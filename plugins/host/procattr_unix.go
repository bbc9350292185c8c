//go:build unix

package host

import (
	"os/exec"
	"syscall"
)

// ownGroup puts a plugin in a process group of its own: a Ctrl-C or a
// SIGTERM sent to the gateway's group reaches the gateway only, which
// then stops its plugins in order, instead of each dying on its own and
// being reported as a crash.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
