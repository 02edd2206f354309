package localddb

import (
	"os/exec"
	"syscall"
)

// BindToParent asks the kernel to kill the server when the test binary
// dies, even by SIGKILL or a test timeout, so no java or node (DynamoDB Local, dynalite, s3rver) is orphaned.
func BindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
