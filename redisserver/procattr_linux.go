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

// processAlive reports whether a process with this id runs (one of another
// user's answers EPERM, and counts as running).
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
