//go:build !linux

package redisserver

import "os/exec"

// setParentDeathSignal does nothing outside Linux, which alone has Pdeathsig;
// there the caller's Close is the only guard against a leaked server.
func setParentDeathSignal(cmd *exec.Cmd) {}
