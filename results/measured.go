package results

import (
	"fmt"
	"strings"
)

// FaultEvent records one fault as it happened (package faults injects them).
type FaultEvent struct {
	// Fault is the fault in faults.Parse's syntax, e.g. "stall@3s:500ms".
	Fault string `json:"fault"`
	// AtS is when it was injected, in seconds from the start of the load.
	AtS float64 `json:"at_s"`
	// Detail says what it did, e.g. "killed 200 connections".
	Detail string `json:"detail,omitempty"`
	// Error is why it failed, if it did.
	Error string `json:"error,omitempty"`
	// LostReplies counts the replies a reply-loss fault lost (the server
	// ran the request; the client's connection was reset instead).
	LostReplies int64 `json:"lost_replies,omitempty"`
	// ResetConnections counts the connections a reset fault reset.
	ResetConnections int `json:"reset_connections,omitempty"`
	// FirstIncrements counts the fresh counters created during the fault's
	// span (a key's first increment: the decision that opened a fixed
	// window), on the keys the admission figures follow; 0 says the fault
	// never met a first increment, so that its immortal-key figure shows
	// nothing of one. Nil (absent) for a fault without a span, or a
	// strategy whose windows are not delimited (not a fixed window).
	FirstIncrements *int64 `json:"first_increments,omitempty"`
}

// Kind is the kind of the fault e records: Fault up to its "@".
func (e FaultEvent) Kind() string {
	kind, _, _ := strings.Cut(e.Fault, "@")
	return kind
}

// Saturation is who was the busier side during a run's load: rlbench or
// the server (package saturation measures it and states the rule of the
// verdict), serialised into the JSON as "saturation".
type Saturation struct {
	// ClientCPU is this process's CPU over wall time, in cores (1.0 = one
	// core busy), rounded to 0.001.
	ClientCPU float64 `json:"client_cpu"`
	// ClientCPUs is the CPUs the client's Go code could use at once
	// (GOMAXPROCS, from the later sample); absent if unknown.
	ClientCPUs int `json:"client_cpus,omitempty"`
	// ServerCPU is the server's CPU over wall time, in cores, rounded to
	// 0.001: on a server of several nodes, the busiest node's.
	ServerCPU float64 `json:"server_cpu"`
	// ServerNodes is the number of nodes (a cluster's masters) whose
	// busiest is ServerCPU; absent for one server.
	ServerNodes int `json:"server_nodes,omitempty"`
	// ConnectionsOpened is the number of connections the server accepted
	// between the two samples, from any client.
	ConnectionsOpened int64 `json:"connections_opened"`
	// PeakRSSBytes is this process's peak resident set, in bytes, as of the
	// later sample: the cell's own high-water mark (reset at the cell's
	// start), or the whole process's so far when PeakRSSOfRun says so.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakRSSOfRun is true when the peak could not be reset at the cell's
	// start (outside Linux, or /proc/self/clear_refs refused): PeakRSSBytes
	// is then the run's so far, earlier cells included.
	PeakRSSOfRun bool `json:"peak_rss_of_run,omitempty"`
	// Verdict is a line that starts "server-bound:" or "client-bound:", or
	// "" when Redis had CPU to spare and the client was not the busier side.
	Verdict string `json:"verdict"`
	// ClientCPUPerDecisionUS is this process's CPU time during the load
	// (user+sys, between the two samples) over the load's decisions, in
	// microseconds, rounded to 0.001; absent without decisions.
	ClientCPUPerDecisionUS float64 `json:"client_cpu_per_decision_us,omitempty"`
	// ServerCPUPerDecisionUS is the server's CPU time during the load
	// (INFO used_cpu_user + used_cpu_sys, every node's together) over the
	// load's decisions, in microseconds, rounded to 0.001; absent without
	// decisions.
	ServerCPUPerDecisionUS float64 `json:"server_cpu_per_decision_us,omitempty"`
	// NodeCPUPerDecisionUS is each node's share of ServerCPUPerDecisionUS:
	// its own CPU time over all the load's decisions, in the order of the
	// nodes' samples; absent for one server.
	NodeCPUPerDecisionUS []float64 `json:"node_cpu_per_decision_us,omitempty"`
}

// Load is the figures as one line, the cost per decision first: "CPU per
// decision rlbench 1.92 µs, server 1.41 µs; cores 0.98 of 1,
// server 0.93; 500 connections, peak RSS 135 MiB". rlbench's CPUs (its
// GOMAXPROCS) are left out when unknown, the CPU per decision without
// decisions.
func (s Saturation) Load() string {
	cpus := ""
	if s.ClientCPUs > 0 {
		cpus = fmt.Sprintf(" of %d", s.ClientCPUs)
	}
	conns := "connections"
	if s.ConnectionsOpened == 1 {
		conns = "connection"
	}
	busiest := ""
	if s.ServerNodes > 1 {
		busiest = fmt.Sprintf(" (the busiest of %d nodes)", s.ServerNodes)
	}
	ofRun := ""
	if s.PeakRSSOfRun {
		ofRun = " (the run's so far)"
	}
	line := ""
	if s.ClientCPUPerDecisionUS > 0 || s.ServerCPUPerDecisionUS > 0 {
		line = fmt.Sprintf("CPU per decision rlbench %.2f µs, server %.2f µs", s.ClientCPUPerDecisionUS, s.ServerCPUPerDecisionUS)
		if len(s.NodeCPUPerDecisionUS) > 1 {
			nodes := make([]string, len(s.NodeCPUPerDecisionUS))
			for i, v := range s.NodeCPUPerDecisionUS {
				nodes[i] = fmt.Sprintf("%.2f", v)
			}
			line += " (nodes " + strings.Join(nodes, " + ") + ")"
		}
		line += "; "
	}
	return line + fmt.Sprintf("cores %.2f%s, server %.2f%s; %d %s, peak RSS %d MiB%s",
		s.ClientCPU, cpus, s.ServerCPU, busiest, s.ConnectionsOpened, conns, s.PeakRSSBytes>>20, ofRun)
}
