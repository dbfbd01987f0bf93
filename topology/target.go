// Package target opens the servers a run loads, whatever their topology (a
// single server, a Redis Cluster, a master that Sentinel manages; an
// existing one or a private one that rlbench starts), checks before the
// first write that a run can use them (Preflight, the claim on the run's
// prefix), and deletes a killed run's keys (Cleanup).
package topology

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/redirects"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/serverinfo"
)

// Target is one opened target of a run. Whatever its topology, it is a set
// of masters, reached through one admin connection of the run's own (for
// audits, clean-ups, faults and self-checks): a single server is a
// one-node cluster.
type Target struct {
	// Spec is what the target was opened from, labelled.
	Spec Spec
	// Info is what the server says of itself (INFO server).
	Info serverinfo.Info
	// Server names the server in reports.
	Server results.Server
	// Login is how the clients and the admin connection log in; tls is
	// its TLS configuration, nil for plain TCP.
	Login connection.Settings
	tls   *tls.Config
	// Admin is the run's own connection to the target, beside the clients
	// under test.
	Admin    redis.UniversalClient
	topology topology
	// unlinkToDel is true on a server without UNLINK (before Redis 4.0):
	// the clean-up sends DEL.
	unlinkToDel bool
	// claim is the run's hold on its prefix (claim.go), released at
	// close; nil when not taken, or taken by another target of the run
	// on the same server.
	claim *claim
}

// topology is what one kind of target does its own way; everything else in
// a run is written once, over the masters that nodes returns. A new kind of
// target implements it and adds a case to openTopology.
type topology interface {
	// nodes returns an admin connection to each master, ordered by
	// address; an error if there is none.
	nodes(ctx context.Context) ([]*redis.Client, error)
	// endpoint sets where the clients under test connect.
	endpoint(o *clients.Options)
	// faultActions returns the actions of the faults that need the
	// topology's help (restart, failover, reshard) for the cell whose keys
	// are under prefix; those it cannot take are nil.
	faultActions(prefix string) faults.Subject
	// redirects reads the cluster's redirection counters on every node;
	// nil where there are none to read.
	redirects(ctx context.Context) redirects.Snapshot
	// describe says what the target is, for the run's header.
	describe(s results.Server) string
	close()
}

// privateServerArgs are the settings of every server rlbench starts beyond
// redis-server's defaults: room for 10,000 go-redis workers' connections.
var privateServerArgs = []string{"--maxclients", "20000"}

// Open starts or reaches the servers spec names (a single server, a
// cluster, a master that Sentinel manages; an existing one or a private
// one), and reads what the server says of itself (INFO server). An
// existing server is logged in to with spec.Login. It writes nothing:
// Preflight checks, before the first write, that a run can use the target.
// Errors are *UsageError when the spec or its login is at fault.
func Open(ctx context.Context, spec Spec) (*Target, error) {
	t, err := reachTopology(ctx, spec, spec.Login)
	if err != nil {
		return nil, err
	}
	if err := t.readInfo(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// reachTopology starts or reaches the servers spec names and makes the
// admin connection, sending nothing but the login check: a user allowed
// only to read keys can be given it (Masters).
func reachTopology(ctx context.Context, spec Spec, login connection.Settings) (*Target, error) {
	switch {
	case spec.IsCluster():
		return openCluster(ctx, spec, login)
	case spec.IsSentinel():
		return openSentinel(ctx, spec, login)
	}
	return openServer(ctx, spec, login)
}

// checkLogin is connection.Check of addr with login, as bad input: a
// wrong CA, TLS on one side only, a refused user or password are found
// before anything is written, and named by the flag to look at. An
// interrupt during the check is returned as it is: not bad input.
func checkLogin(ctx context.Context, spec Spec, addr string, login connection.Settings) error {
	if err := connection.Check(ctx, addr, login); err != nil {
		if errors.Is(err, connection.ErrCheckInterrupted) {
			return err
		}
		return usage("Connection", err) // it names the flag and the address
	}
	return nil
}

// newTarget completes t once its admin connection is made: the TLS
// configuration of its clients.
func newTarget(_ context.Context, t *Target, managed bool) (*Target, error) {
	var err error
	if t.tls, err = t.Login.TLS.Config(); err != nil {
		t.Close()
		return nil, usage("Connection", fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	t.Server.Managed = managed
	return t, nil
}

// where names node n of t in an error: the target's label, and the node's
// address when the label is not already that.
func (t *Target) where(n *redis.Client) string {
	if addr := n.Options().Addr; addr != t.Spec.Label {
		return t.Spec.Label + ": " + addr
	}
	return t.Spec.Label
}

// Field is the Config field that names t, for errors about it.
func (t *Target) Field() string { return t.field() }

// field is the Config field that names t, for errors about it.
func (t *Target) field() string {
	switch {
	case t.Spec.Login.FromURL():
		return "Targets.URL"
	case t.Spec.ManagedCluster != "":
		return "Targets.ManagedCluster"
	case len(t.Spec.Cluster) > 0:
		return "Targets.Cluster"
	case t.Spec.Addr != "":
		return "Targets.Addr"
	}
	return "Targets.RedisServer"
}

// readInfo reads what the server says of itself: its name and version.
func (t *Target) readInfo(ctx context.Context) error {
	info, err := serverinfo.Read(ctx, t.Admin)
	if denied := acl.Denied("info", err); denied != nil {
		return usage("Targets.Login.Username", fmt.Errorf("%s: %w", t.Spec.Label, denied))
	}
	if err != nil {
		return usage(t.field(), fmt.Errorf("%s: %w", t.Spec.Label, err))
	}
	t.Info, t.Server.Name, t.Server.Version = info, info.Name, info.Version
	return nil
}

// Close releases the run's claim on its prefix, closes the admin
// connection and stops what Open started.
func (t *Target) Close() {
	t.claim.release()
	t.Admin.Close()
	t.topology.close()
}

// Nodes returns an admin connection to each master, ordered by address.
func (t *Target) Nodes(ctx context.Context) ([]*redis.Client, error) {
	return t.topology.nodes(ctx)
}

// Redirects reads the cluster's redirection counters on every node; nil
// for a single server, for a server without INFO errorstats, and when a
// node could not be read.
func (t *Target) Redirects(ctx context.Context) redirects.Snapshot {
	if !serverinfo.VersionAtLeast(t.Info.RedisVersion, redirects.MinRedis) {
		return nil
	}
	return t.topology.redirects(ctx)
}

// NodeFor returns the master of nodes that serves key.
func (t *Target) NodeFor(ctx context.Context, key string, nodes []*redis.Client) (*redis.Client, error) {
	if c, ok := t.Admin.(*redis.ClusterClient); ok {
		return c.MasterForKey(ctx, key)
	}
	return nodes[0], nil
}

// LogHeader writes t's line of the run's header: what it is (the plan
// adds what it leaves out of it: plan.Plan.LogHeader).
func (t *Target) LogHeader(log io.Writer) {
	fmt.Fprintf(log, "rlbench: target %s: %s\n", t.Spec.Label, t.Describe())
}

// Describe says what the target is, for the run's header.
func (t *Target) Describe() string { return t.topology.describe(t.Server) }

// ClientOptions are o, the run's settings of the clients under test, with
// where and how they connect to t: its endpoint and login.
func (t *Target) ClientOptions(o clients.Options) clients.Options {
	o.Username, o.Password, o.DB, o.TLS = t.Login.Username, t.Login.Password, t.Login.DB, t.tls
	t.topology.endpoint(&o)
	return o
}

// FaultSubject is what the faults of the cell whose keys are under prefix
// act on; allowServerWide is Config.AllowServerWideFaults.
func (t *Target) FaultSubject(prefix string, allowServerWide bool) faults.Subject {
	ft := t.topology.faultActions(prefix)
	ft.Admin = t.Admin
	ft.Capabilities = t.Spec.Capabilities(allowServerWide)
	ft.Server = t.Server.Addr
	ft.ClientName = ClientName(prefix)
	return ft
}

// ServerSamples is one saturation.Sample per master, by address.
type ServerSamples = saturation.Reading

// Sample takes a saturation sample on every master.
func (t *Target) Sample(ctx context.Context) (ServerSamples, error) {
	nodes, err := t.Nodes(ctx)
	if err != nil {
		return ServerSamples{}, err
	}
	var s ServerSamples
	for _, n := range nodes {
		x, err := saturation.Take(ctx, n)
		if err != nil {
			return ServerSamples{}, fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		s.Addrs = append(s.Addrs, n.Options().Addr)
		s.Samples = append(s.Samples, x)
	}
	return s, nil
}

// server is a single server: an existing one, or a private one that
// rlbench started.
type server struct {
	// private is the server rlbench started; nil for an existing one.
	private *redisserver.Server
	addr    string
	admin   *redis.Client
	spec    Spec
}

// openServer reaches an existing server, after a check of the login, or
// starts a private one (with TLS when PrivateTLS).
func openServer(ctx context.Context, spec Spec, login connection.Settings) (*Target, error) {
	s := &server{addr: spec.Addr, spec: spec}
	if spec.Addr != "" {
		if err := checkLogin(ctx, spec, spec.Addr, login); err != nil {
			return nil, err
		}
	} else {
		opts := redisserver.Options{Binary: spec.RedisServer, Args: privateServerArgs}
		if spec.PrivateTLS {
			opts.TLS = &redisserver.TLSOptions{}
		}
		srv, err := redisserver.Start(ctx, opts)
		if err != nil {
			field := "Targets.RedisServer"
			if errors.Is(err, redisserver.ErrNoTLS) {
				field = "PrivateTLS"
			}
			return nil, usage(field, fmt.Errorf("%s: %w", spec.Label, err))
		}
		s.private, s.addr = srv, srv.Addr()
		login = connection.Settings{}
		if files, ok := srv.TLS(); ok {
			login.TLS = &connection.TLSFiles{CACert: files.CACert}
		}
	}
	admin, err := connection.Admin{Settings: login}.Client(s.addr)
	if err != nil {
		s.close()
		return nil, usage("Connection", fmt.Errorf("%s: %w", spec.Label, err))
	}
	s.admin = admin
	t := &Target{Spec: spec, Login: login, Admin: admin, topology: s, Server: results.Server{Addr: s.addr}}
	return newTarget(ctx, t, s.private != nil)
}

func (s *server) nodes(context.Context) ([]*redis.Client, error) {
	return []*redis.Client{s.admin}, nil
}

func (s *server) endpoint(o *clients.Options) { o.Addr = s.addr }

func (s *server) faultActions(string) faults.Subject {
	if s.private == nil {
		return faults.Subject{}
	}
	return faults.Subject{Restart: s.private.Restart}
}

func (s *server) redirects(context.Context) redirects.Snapshot { return nil }

func (s *server) describe(r results.Server) string {
	if !r.Managed {
		return fmt.Sprintf("%s %s at %s", r.Name, r.Version, r.Addr)
	}
	binary := s.spec.RedisServer
	if binary == "" {
		binary = redisserver.DefaultBinary
	}
	tls := ""
	if _, ok := s.private.TLS(); ok {
		tls = ", TLS only (a throwaway CA)"
	}
	return fmt.Sprintf("private %s %s (%s) on %s, no persistence%s; stopped at the end", r.Name, r.Version, binary, r.Addr, tls)
}

func (s *server) close() {
	if s.private != nil {
		s.private.Close()
	}
}

// ClientName is the CLIENT SETNAME of a cell's connections, which the
// kill-clients fault closes: unique to the cell, since its prefix is.
func ClientName(cellPrefix string) string {
	return "rlbench-" + strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, cellPrefix)
}

// ScanKeys audits the keys under prefix on every master and, with del,
// deletes them in the same pass (one SCAN of each master for both); with
// fields, it audits hash fields too (audit.Options.Fields).
func (t *Target) ScanKeys(ctx context.Context, prefix string, window int64, del, fields bool) (audit.Report, error) {
	return t.Scan(ctx, KeyAudit(prefix, window, del, fields))
}

// KeyAudit is the Options of Target.ScanKeys: the keys under prefix,
// window (seconds) their longest TTL, deleted with del, their hash fields
// audited with fields.
func KeyAudit(prefix string, window int64, del, fields bool) audit.Options {
	return audit.Options{
		Prefix: prefix, MaxTTL: time.Duration(window) * time.Second, Dedup: true,
		Unlink: del, Fields: fields,
	}
}

// Scan runs audit.Scan with opts on every master (UseDel where the server
// has no UNLINK).
func (t *Target) Scan(ctx context.Context, opts audit.Options) (audit.Report, error) {
	masters, err := t.Nodes(ctx)
	if err != nil {
		return audit.Report{}, fmt.Errorf("audit: %w", err)
	}
	nodes := make([]audit.Node, len(masters))
	for i, m := range masters {
		nodes[i] = m
	}
	opts.UseDel = t.unlinkToDel
	return audit.Scan(ctx, nodes, opts)
}

// Audit audits the keys under prefix on every master; perNode has the
// result per master on a cluster, and is nil for a single server.
func (t *Target) Audit(ctx context.Context, prefix string, window int64, fields bool) (audit.Result, []audit.NodeResult, error) {
	rep, err := t.ScanKeys(ctx, prefix, window, false, fields)
	return rep.Result(), t.PerNode(rep), err
}

// PerNode is rep's result per master on a cluster; nil for a single
// server, whose one node is the whole.
func (t *Target) PerNode(rep audit.Report) []audit.NodeResult {
	if !t.Spec.IsCluster() {
		return nil
	}
	return rep.NodeResults()
}

// Cleanup deletes the keys under prefix on every master.
func (t *Target) Cleanup(ctx context.Context, prefix string) error {
	_, err := t.ScanKeys(ctx, prefix, 0, true, false)
	return err
}

// NewAdmin makes another admin connection to t, of a with t's login,
// beside the one Admin holds: to the server, the cluster, or the master
// the sentinels name (following it). The caller closes it.
func (t *Target) NewAdmin(a connection.Admin) (redis.UniversalClient, error) {
	a.Settings = t.Login
	switch tp := t.topology.(type) {
	case *cluster:
		return a.Cluster(tp.seeds)
	case *sentinel:
		return a.Failover(tp.target)
	}
	return a.Client(t.Server.Addr)
}

// PrivateServer is the private single server t started, which can be
// restarted; nil for any other target.
func (t *Target) PrivateServer() *redisserver.Server {
	if s, ok := t.topology.(*server); ok {
		return s.private
	}
	return nil
}
