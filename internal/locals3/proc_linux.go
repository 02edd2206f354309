package locals3

import (
	"os/exec"
	"syscall"
)

// bindToParent asks the kernel to kill the server when the test binary
// dies, even by SIGKILL or a test timeout, so no node is orphaned.
func bindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
