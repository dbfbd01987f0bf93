// Package plan decides, once, which cells a run runs: each target x
// strategy x client, with the strategy's Info, the client and the cell's
// keys, and the cells it leaves out, each with its reason. It is the one
// place that decides: the load run ranges over its cells, and verify, the
// thresholds' check and the command line read it.
//
// A plan is made in two steps. Build reads names and settings only, before
// anything touches Redis: it selects the strategies and clients ("all"
// expanded), leaves out the clients that a target's topology does not
// support and the pairs that "all" made of a strategy and a client it does
// not run on, and refuses what the user named that cannot run. LeaveOut,
// once per opened target during its pre-flight (topology.Checks.LeaveOut),
// asks the server whether it can run each strategy that "all" brought in,
// and leaves out of that target those it cannot.
package plan

import (
	"errors"
	"fmt"
	"github.com/rlbench/rlbench/keyspace"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
)

// Settings are what a plan is built from.
type Settings struct {
	// Strategies are strategy names as Registry holds them, or "all": the
	// built-in strategies, and Registry's user strategies after them
	// (strategies.Registry.Select).
	Strategies []string
	// Clients are client names (clients.Names), or "all": every client
	// that supports the topology of every target.
	Clients []string
	// Registry holds the strategies; nil means the built-in ones.
	Registry *strategies.Registry
	// Targets are the run's targets, labelled (topology.Label); the errors
	// about a target name it by its label, when it has one.
	Targets []topology.Spec
	// Options are the clients' settings (retries, timeouts, connection
	// shape) as clients.CheckOptions reads them; the plan adds each
	// target's topology.
	Options clients.Options
	// Prefix is the run's key prefix: each target's is its own under it
	// when there are several (keyspace.TargetPrefix), and each cell's its
	// own under that (keyspace.Cell); "" means the cells have no prefix.
	Prefix string
	// Matrix keeps every strategy x client pair, those of a strategy and
	// a client it does not run on too, neither left out nor refused:
	// verify's matrix reports such a pair as not applicable.
	Matrix bool
}

// Plan is the cells of a run: Build makes it, LeaveOut completes it per
// target. It is not safe for concurrent use.
type Plan struct {
	// Strategies and Clients are the run's, "all" expanded, in the order
	// the cells run them.
	Strategies, Clients []string
	// Optional are the strategies that "all" brought in and that were not
	// named too: a target whose server cannot run one leaves it out
	// (LeaveOut) rather than refusing the run.
	Optional []string
	// Registry holds the strategies of the plan.
	Registry *strategies.Registry
	settings Settings
	infos    map[string]strategies.Info
	// lacks are, per target, the strategies LeaveOut left out, each with
	// what the server lacks.
	lacks []map[string][]string
}

// Cell is one target x strategy x client of a plan.
type Cell struct {
	// Target is the index of the cell's target in Settings.Targets, Spec
	// that target.
	Target int
	Spec   topology.Spec
	// Info is the cell's strategy, as the plan's Registry holds it.
	Info strategies.Info
	// Client is the client's name.
	Client string
	// RunPrefix is the run's key prefix on the cell's target; Prefix is
	// the cell's own, under it: cells never share keys.
	RunPrefix, Prefix string
	// LeftOut is why the run does not run the cell, nil when it runs it:
	// a *ClientUnsupported or a *ServerLacks.
	LeftOut error
}

// ClientUnsupported is why a cell that "all" made is left out: its
// strategy runs on other clients only (a library written for them).
type ClientUnsupported struct {
	Strategy string
	// Clients are the clients the strategy runs on.
	Clients []string
}

func (e *ClientUnsupported) Error() string {
	return fmt.Sprintf("%s runs on %s only", e.Strategy, strings.Join(e.Clients, ", "))
}

// ServerLacks is why the cells of a strategy that "all" brought in are
// left out of a target: its server lacks what the strategy needs
// (LeaveOut).
type ServerLacks struct {
	Strategy string
	// Lacks are the commands or options the server lacks, e.g.
	// ["HEXPIRE", "HTTL"] or ["EXPIRE ... NX"].
	Lacks []string
}

func (e *ServerLacks) Error() string {
	return fmt.Sprintf("the server cannot run %s: it lacks %s", e.Strategy, strings.Join(e.Lacks, ", "))
}

// Build makes the plan of s, from names and settings alone: nothing
// touches a server. Errors are *topology.UsageError naming the Config field
// ("Strategies", "Clients", "Connections", "Retries", "ReadTimeout"),
// in the order a run checks them: the strategy names, the client names,
// a strategy named on a client named that it cannot run on, then each
// target's client settings.
func Build(s Settings) (*Plan, error) {
	given, givenClients := s.Strategies, s.Clients
	selected, err := s.Registry.Select(given)
	if err != nil {
		return nil, usage("Strategies", err)
	}
	p := &Plan{Strategies: selected, Registry: s.Registry, settings: s, infos: map[string]strategies.Info{}, lacks: make([]map[string][]string, len(s.Targets))}
	for _, name := range selected {
		if p.infos[name], err = s.Registry.Lookup(name); err != nil {
			return nil, usage("Strategies", err)
		}
	}
	if slices.Contains(given, "all") {
		p.Optional = slices.DeleteFunc(slices.Clone(selected), func(name string) bool { return slices.Contains(given, name) })
	}
	if p.Clients, err = clients.Select(givenClients); err != nil {
		return nil, usage("Clients", err)
	}
	if slices.Contains(givenClients, "all") {
		p.Clients = p.clientsForTargets()
	}
	if !s.Matrix {
		if err := p.checkClientSupport(given, givenClients); err != nil {
			return nil, err
		}
	}
	for i := range s.Targets {
		if err := p.checkClientOptions(i); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Info returns the Info of strategy name, one of p.Strategies.
func (p *Plan) Info(name string) (strategies.Info, bool) {
	info, ok := p.infos[name]
	return info, ok
}

// Cells returns the cells of target i (an index in Settings.Targets), in
// the order the run reaches them (strategies, then clients), those left
// out too, with their reason (Cell.LeftOut).
func (p *Plan) Cells(i int) []Cell {
	s := p.settings
	runPrefix := s.Prefix
	if s.Prefix != "" && len(s.Targets) > 1 {
		// Two labels may name one server: cells never share keys.
		runPrefix = keyspace.TargetPrefix(runPrefix, i+1)
	}
	var cells []Cell
	for _, name := range p.Strategies {
		info := p.infos[name]
		for _, client := range p.Clients {
			c := Cell{Target: i, Spec: s.Targets[i], Info: info, Client: client, RunPrefix: runPrefix}
			if s.Prefix != "" {
				c.Prefix = keyspace.Cell(runPrefix, name, client)
			}
			switch {
			case p.lacks[i][name] != nil:
				c.LeftOut = &ServerLacks{Strategy: name, Lacks: p.lacks[i][name]}
			case !info.Supports(client) && !s.Matrix:
				c.LeftOut = &ClientUnsupported{Strategy: name, Clients: info.Clients}
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// checkClientSupport refuses a strategy named on a client named, both
// given by name (not by "all"), that the strategy cannot run on (a
// published library written for go-redis, on rueidis). A pair that "all"
// made is left out instead (ClientUnsupported).
func (p *Plan) checkClientSupport(given, givenClients []string) error {
	for _, s := range p.Strategies {
		info := p.infos[s]
		for _, c := range p.Clients {
			if !info.Supports(c) && slices.Contains(given, s) && slices.Contains(givenClients, c) {
				return usage("Clients", fmt.Errorf("strategy %s runs on %s only (a library written for it); it cannot run on %s",
					s, strings.Join(info.Clients, ", "), c))
			}
		}
	}
	return nil
}

// optionsOn are the client settings of p on target i, with its topology,
// as clients.CheckOptions and clients.Topologies read them.
func (p *Plan) optionsOn(i int) clients.Options {
	o := p.settings.Options
	switch t := p.settings.Targets[i]; {
	case t.IsSentinel():
		o.Sentinel = connection.Sentinel{Master: "sentinel"}
	case t.IsCluster():
		o.Cluster = []string{"cluster"}
	}
	return o
}

// clientsForTargets is p.Clients (--client all, expanded) without the
// clients that do not support the topology of one of the targets (redigo
// on a cluster or Sentinel): all leaves them out instead of refusing.
func (p *Plan) clientsForTargets() []string {
	return slices.DeleteFunc(slices.Clone(p.Clients), func(name string) bool {
		for i := range p.settings.Targets {
			if !slices.Contains(clients.Topologies[name], clients.TopologyOf(p.optionsOn(i))) {
				return true
			}
		}
		return false
	})
}

// checkClientOptions refuses, before anything touches Redis, the client
// settings that a client of p cannot take on target i
// (clients.CheckOptions): a topology it does not support (redigo on a
// cluster or Sentinel), a connection shape it cannot open, retries on
// redigo, differing read and write timeouts on rueidis or valkey-go.
func (p *Plan) checkClientOptions(i int) error {
	o := p.optionsOn(i)
	label := p.settings.Targets[i].Label
	for _, name := range p.Clients {
		err := clients.CheckOptions(name, o)
		if err == nil {
			continue
		}
		field := "Clients"
		switch {
		case errors.Is(err, clients.ErrConnections):
			field = "Connections"
		case errors.Is(err, clients.ErrNoRetries):
			field = "Retries"
		case errors.Is(err, clients.ErrRueidisTimeouts):
			field = "ReadTimeout"
		}
		if label != "" && field == "Clients" {
			err = fmt.Errorf("%s: %w", label, err)
		}
		return usage(field, err)
	}
	return nil
}

func usage(field string, err error) error { return &topology.UsageError{Field: field, Err: err} }
