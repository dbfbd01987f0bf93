// Package saturation tells who saturated during a load run: the load
// generator (this process) or the Redis server. A benchmark whose client is
// busier than its server measures the client.
//
// Take a Sample before the load phase and one after, then Compare them:
//
//	before, err := saturation.Take(ctx, rdb)
//	// ... the load phase ...
//	after, err := saturation.Take(ctx, rdb)
//	rep := saturation.Compare([]saturation.Sample{before}, []saturation.Sample{after})
//
// The process's CPU comes from getrusage(RUSAGE_SELF); the server's from
// INFO (used_cpu_user + used_cpu_sys), so the server may be anywhere.
//
// # The verdict
//
// CPU figures are in cores: CPU time over wall time, so 1.0 means one core
// busy for the whole phase. Redis runs every command on one main thread, so
// its share of its limit is its cores. The client's limit is the CPUs its
// Go code may use at once (GOMAXPROCS, Sample.ProcessCPUs), so its share is
// its cores over that, at most 1. The rule, in order:
//
//  1. server-bound when the server used at least Busy (0.9) cores and a share
//     of its limit at least the client's: the figures measure Redis.
//  2. client-bound when the client used at least Busy (0.9) of its CPUs and a
//     larger share of its limit than the server. It ran out of CPU first,
//     and Redis waited for it: on this project's 2-core machine, rlbench
//     with go-redis and 500 workers used 0.98 of its one CPU while the
//     server used 0.93 and slept in epoll_wait for the rest.
//  3. client-bound when neither side reached Busy, and the client used more
//     cores than the server and at least IdleCPU (0.1). Redis had CPU to
//     spare, so the rate was set by the client: either it could not get
//     more CPU (on a machine it shares with the server, and with whatever
//     else runs there), or the run is latency-bound and the client's share
//     of each round trip was the larger one. On the 2-core machine, rlbench
//     with rueidis and two CPUs used 0.91 cores against a server at 0.82
//     that redis-benchmark -P 16 drove to 0.97.
//  4. otherwise the verdict is empty: Redis had CPU to spare and the client
//     was the lighter side, or too idle (under 0.1 core) to judge.
//
// Shares are rounded to 0.001, like the figures, before the rule: 2.85
// cores of 3 CPUs ties with a server at 0.95.
//
// A client whose CPUs are unknown (ProcessCPUs 0) is judged by rules 1, 3
// and 4 only, with the server's rule needing no comparison.
//
// GOMAXPROCS stands for the CPUs the client can get. rlbench's default
// (--procs) leaves a local server a CPU, so it can get them. A client given
// more than the machine leaves free, such as --procs 2 next to redis-server
// on a 2-core machine, can run out of CPU below 0.9 of its GOMAXPROCS: next
// to a server at 0.9 cores or more, that run is called server-bound.
package saturation

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
)

// Busy is the share of its limit at or above which a side is saturated:
// 0.9 cores for Redis's main thread, 0.9 of its CPUs for the client.
const Busy = 0.9

// IdleCPU is the client CPU, in cores, below which a run is too idle for a
// client-bound verdict.
const IdleCPU = 0.1

// Sample is a point-in-time reading of CPU and connections.
type Sample struct {
	// At is when the sample was taken, from the local clock.
	At time.Time
	// ProcessCPU is this process's user+sys CPU time so far
	// (getrusage RUSAGE_SELF); 0 where the OS does not report it.
	ProcessCPU time.Duration
	// ProcessCPUs is how many CPUs the client's code may use at once:
	// GOMAXPROCS when Take ran, or what a caller that measures another
	// process sets (bench-peers: a child's own count); 0 if unknown.
	ProcessCPUs int
	// ServerCPU is the server's used_cpu_user + used_cpu_sys from INFO: its
	// whole process, all threads, since it started.
	ServerCPU time.Duration
	// ServerConnsReceived is the server's total_connections_received from
	// INFO: every connection it has accepted since it started.
	ServerConnsReceived int64
	// PeakRSSBytes is this process's peak resident set, in bytes, since
	// it started or since the last ResetPeakRSS (on Linux VmHWM, from
	// /proc/self/status; elsewhere getrusage's maxrss); 0 where the OS does
	// not report it.
	PeakRSSBytes int64
	// ServerRunID is the server's run_id from INFO: another one means
	// another server process (a restart, or a failover behind an address
	// that follows the master), whose counters do not compare.
	ServerRunID string
}

// infoReader is the one go-redis method Take calls, so that *redis.Client,
// *redis.Conn, redis.Cmdable and the cluster and ring clients all fit.
type infoReader interface {
	Info(ctx context.Context, section ...string) *redis.StringCmd
}

// Take reads a Sample: this process's CPU and peak RSS, and the server's CPU
// and accepted connections from one INFO call to rdb, a go-redis client to
// the server under test (*redis.Client, redis.Cmdable, a ring or cluster
// client: anything with go-redis's Info method). If rdb opens a new
// connection for the call, that connection is already counted in the sample.
//
// Plain INFO (the default sections) is used rather than INFO cpu stats,
// which servers before Redis 7.0 refuse.
func Take(ctx context.Context, rdb infoReader) (Sample, error) {
	text, err := rdb.Info(ctx).Result()
	if err != nil {
		return Sample{}, fmt.Errorf("saturation: info: %w", err)
	}
	s, err := parseInfo(text)
	if err != nil {
		return Sample{}, err
	}
	s.At = time.Now()
	var maxrss int64
	s.ProcessCPU, maxrss = selfUsage()
	s.PeakRSSBytes = peakRSS(maxrss)
	s.ProcessCPUs = runtime.GOMAXPROCS(0)
	return s, nil
}

// parseInfo fills the server fields of a Sample from INFO text.
func parseInfo(text string) (Sample, error) {
	fields := serverinfo.Parse(text)
	s := Sample{ServerRunID: fields["run_id"]}
	for _, name := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, ok := fields[name]
		if !ok {
			return Sample{}, fmt.Errorf("saturation: info: no %s field", name)
		}
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < 0 || math.IsInf(secs, 0) {
			return Sample{}, fmt.Errorf("saturation: info: %s: not a number of seconds: %q", name, v)
		}
		s.ServerCPU += time.Duration(math.Round(secs * float64(time.Second)))
	}
	v, ok := fields["total_connections_received"]
	if !ok {
		return Sample{}, fmt.Errorf("saturation: info: no total_connections_received field")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("saturation: info: total_connections_received: %w", err)
	}
	s.ServerConnsReceived = n
	return s, nil
}

// Report is the self-check for one run, serialised into the JSON as
// "saturation". It is results.Saturation, which the report's data model
// defines; this package measures it.
type Report = results.Saturation

// Compare computes the Report between samples taken before and after the
// load phase from the server's nodes: before[i] and after[i] are one node's
// samples, taken together with the other nodes' (a single server is one
// node). Each node runs its commands on its own main thread, so the
// server's CPU is the busiest node's, and the verdict is judged on it, on
// the figures as rounded. Connections are all nodes' together. The
// client's CPU and the wall time come from the first node's pair. A node
// restarted in between resets its counters and makes the differences
// meaningless. Slices of different lengths, which cannot be the same nodes,
// and empty ones give a zero Report; a wall time that is not positive gives
// zero CPU figures and no verdict.
func Compare(before, after []Sample) Report {
	n := len(before)
	if n == 0 || len(after) != n {
		return Report{}
	}
	first, last := before[0], after[0]
	rep := Report{
		ClientCPUs:   last.ProcessCPUs,
		PeakRSSBytes: last.PeakRSSBytes,
	}
	if n > 1 {
		rep.ServerNodes = n
	}
	for i := range n {
		rep.ConnectionsOpened += after[i].ServerConnsReceived - before[i].ServerConnsReceived
	}
	wall := last.At.Sub(first.At)
	if wall <= 0 {
		return rep
	}
	rep.ClientCPU = cores(last.ProcessCPU-first.ProcessCPU, wall)
	for i := range n {
		rep.ServerCPU = max(rep.ServerCPU, cores(after[i].ServerCPU-before[i].ServerCPU, wall))
	}
	rep.Verdict = verdict(rep.ClientCPU, rep.ClientCPUs, rep.ServerCPU)
	return rep
}

// PerDecision fills rep's CPU per decision from the samples Compare took it
// from: this process's CPU time between before[0] and after[0], and each
// node's (INFO's used_cpu_user + used_cpu_sys) and every node's together,
// over decisions, in microseconds rounded to 0.001. Without decisions, or
// with samples Compare could not pair, it leaves them absent.
func PerDecision(rep *Report, before, after []Sample, decisions int64) {
	n := len(before)
	if decisions <= 0 || n == 0 || len(after) != n {
		return
	}
	rep.ClientCPUPerDecisionUS = perDecisionUS(after[0].ProcessCPU-before[0].ProcessCPU, decisions)
	var server time.Duration
	nodes := make([]float64, n)
	for i := range n {
		d := after[i].ServerCPU - before[i].ServerCPU
		server += d
		nodes[i] = perDecisionUS(d, decisions)
	}
	rep.ServerCPUPerDecisionUS = perDecisionUS(server, decisions)
	if n > 1 {
		rep.NodeCPUPerDecisionUS = nodes
	}
}

// perDecisionUS is cpu over decisions, in microseconds rounded to 0.001;
// 0 for a negative cpu (a counter that went back).
func perDecisionUS(cpu time.Duration, decisions int64) float64 {
	if cpu <= 0 {
		return 0
	}
	return math.Round(float64(cpu)/float64(time.Microsecond)/float64(decisions)*1000) / 1000
}

// cores is cpu over wall, rounded to 0.001.
func cores(cpu, wall time.Duration) float64 {
	return math.Round(float64(cpu)/float64(wall)*1000) / 1000
}

// The verdicts, one per rule of the package doc.
const (
	serverBound = "server-bound: redis-server's one main thread was busy: the figures measure Redis"
	clientBusy  = "client-bound: rlbench's CPUs were busier than redis-server's main thread: the figures measure rlbench, not Redis"
	clientSpare = "client-bound: Redis had CPU to spare: the figures measure rlbench, not Redis"
)

// verdict applies the package doc's rule to a client that used clientCPU
// cores of clientCPUs (0: unknown) and a server that used serverCPU.
func verdict(clientCPU float64, clientCPUs int, serverCPU float64) string {
	// The client's share of its limit, rounded like the figures; with its
	// CPUs unknown, a share that never wins rule 1 or 2.
	share := 0.0
	if clientCPUs > 0 {
		share = math.Round(min(clientCPU/float64(clientCPUs), 1)*1000) / 1000
	}
	switch {
	case serverCPU >= Busy && serverCPU >= share:
		return serverBound
	case share >= Busy:
		// Rule 1 failed, so the server is under Busy or under share:
		// either way under share.
		return clientBusy
	case clientCPU > serverCPU && clientCPU >= IdleCPU:
		// Rules 1 and 2 failed, so the server is under Busy: had it
		// reached Busy, it would have been under share, and share at
		// least Busy.
		return clientSpare
	}
	return ""
}
