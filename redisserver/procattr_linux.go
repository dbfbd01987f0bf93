package redisserver

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks Linux to SIGKILL the server when the process that
// started it dies, so a crashed test or CLI never leaks a server.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
