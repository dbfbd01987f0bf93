//go:build unix

package main

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this id runs (or may run: one
// of another user's answers EPERM, and counts as running).
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
