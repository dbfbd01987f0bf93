package rlbench

import (
	"net"
	"os"
	"runtime/debug"
	"slices"
)

// DefaultGCPercent is the Go garbage collector's GOGC that the rlbench
// command (and cmd/bareloop, its yardstick) sets unless the environment sets
// GOGC or GOMEMLIMIT: half the runtime's 100. Go sizes its heap to the live
// heap plus the goroutine stacks, times 1 + GOGC/100; with thousands of
// workers, their connections and stacks are most of what is live, so at 100
// rlbench's peak is about twice what it needs. docs/performance.md
// has the measurements behind it (10,000 go-redis workers).
const DefaultGCPercent = 50

// SetDefaultGC sets DefaultGCPercent unless $GOGC or $GOMEMLIMIT is set. It
// is for commands' main functions: it changes the whole process.
func SetDefaultGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}

// DefaultProcs is how many CPUs the rlbench command's Go runtime uses
// (GOMAXPROCS) unless --procs or $GOMAXPROCS says otherwise, for cfg when
// the runtime's own default is ncpu (the CPUs, or a container's quota): all
// but one when a target runs on this machine, so that redis-server's main
// thread keeps a CPU of its own instead of being preempted by the load
// generator; else all of them. A target runs here when rlbench starts it (a
// private server or cluster) or when its address is a loopback one.
// docs/performance.md has the measurements behind it.
func DefaultProcs(cfg Config, ncpu int) int {
	if ncpu > 1 && slices.ContainsFunc(cfg.withDefaults().Targets, local) {
		return ncpu - 1
	}
	return max(ncpu, 1)
}

// local reports whether t runs on this machine: a private server or
// cluster, or one whose (first) address is a loopback one.
func local(t TargetSpec) bool {
	addr := t.Addr
	if len(t.Cluster) > 0 {
		addr = t.Cluster[0]
	}
	if addr == "" {
		return true // private
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
