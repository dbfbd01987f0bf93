package rlbench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	"github.com/rlbench/rlbench/workload"
)

// target is one opened target of a run. Whatever its topology, it is a set
// of masters, reached through one admin connection of the run's own (for
// audits, clean-ups, faults and self-checks): a single server is a
// one-node cluster.
type target struct {
	spec   TargetSpec
	info   serverinfo.Info
	server results.Server
	// login is how the clients and the admin connection log in; tls is
	// its TLS configuration, nil for plain TCP.
	login connection.Settings
	tls   *tls.Config
	// admin is the run's own connection to the target, beside the clients
	// under test.
	admin    redis.UniversalClient
	topology topology
	// unlinkToDel is true on a server without UNLINK (before Redis 4.0):
	// the clean-up sends DEL.
	unlinkToDel bool
	// leftOut are the strategies of --strategy all that the server cannot
	// run, each with what it lacks (target.leaveOut): no cell runs them.
	leftOut map[string][]string
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
	faultActions(prefix string) faults.Target
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

// openTarget opens spec: starts or reaches its servers and checks that
// every cell of cfg can run there, before anything is written.
func openTarget(ctx context.Context, cfg Config, spec TargetSpec) (*target, error) {
	t, err := openTopology(ctx, cfg, spec)
	if err != nil {
		return nil, err
	}
	if err := t.preflight(ctx, cfg); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// openTopology starts or reaches the servers spec names, and reads what
// the server says of itself (INFO server).
func openTopology(ctx context.Context, cfg Config, spec TargetSpec) (*target, error) {
	t, err := reachTopology(ctx, cfg, spec)
	if err != nil {
		return nil, err
	}
	if err := t.readInfo(ctx); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// reachTopology starts or reaches the servers spec names and makes the
// admin connection, sending nothing but the login check: a user allowed
// only to read keys can be given it (Masters).
func reachTopology(ctx context.Context, cfg Config, spec TargetSpec) (*target, error) {
	switch {
	case spec.isCluster():
		return openCluster(ctx, cfg, spec)
	case spec.isSentinel():
		return openSentinel(ctx, cfg, spec)
	}
	return openServer(ctx, cfg, spec)
}

// checkLogin is connection.Check of addr with login, as bad input: a
// wrong CA, TLS on one side only, a refused user or password are found
// before anything is written, and named by the flag to look at. An
// interrupt during the check is returned as it is: not bad input.
func checkLogin(ctx context.Context, spec TargetSpec, addr string, login connection.Settings) error {
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
func newTarget(_ context.Context, t *target, managed bool) (*target, error) {
	var err error
	if t.tls, err = t.login.TLS.Config(); err != nil {
		t.close()
		return nil, usage("Connection", fmt.Errorf("%s: %w", t.spec.Label, err))
	}
	t.server.Managed = managed
	return t, nil
}

// readInfo reads what the server says of itself: its name and version.
func (t *target) readInfo(ctx context.Context) error {
	info, err := serverinfo.Read(ctx, t.admin)
	if denied := acl.Denied("info", err); denied != nil {
		return usage("Username", fmt.Errorf("%s: %w", t.spec.Label, denied))
	}
	if err != nil {
		return usage(t.field(), fmt.Errorf("%s: %w", t.spec.Label, err))
	}
	t.info, t.server.Name, t.server.Version = info, info.Name, info.Version
	return nil
}

func (t *target) close() {
	t.claim.release()
	t.admin.Close()
	t.topology.close()
}

// nodes returns an admin connection to each master.
func (t *target) nodes(ctx context.Context) ([]*redis.Client, error) {
	return t.topology.nodes(ctx)
}

// redirects reads the cluster's redirection counters on every node; nil
// for a single server, for a server without INFO errorstats, and when a
// node could not be read.
func (t *target) redirects(ctx context.Context) redirects.Snapshot {
	if !serverinfo.VersionAtLeast(t.info.RedisVersion, redirects.MinRedis) {
		return nil
	}
	return t.topology.redirects(ctx)
}

// nodeFor returns the master of nodes that serves key.
func (t *target) nodeFor(ctx context.Context, key string, nodes []*redis.Client) (*redis.Client, error) {
	if c, ok := t.admin.(*redis.ClusterClient); ok {
		return c.MasterForKey(ctx, key)
	}
	return nodes[0], nil
}

// describe says what the target is, for the run's header.
func (t *target) describe() string { return t.topology.describe(t.server) }

// clientOptions are the options the clients under test connect with.
func (t *target) clientOptions(cfg Config, workers int, name string) clients.Options {
	o := clients.Options{
		Username: t.login.Username, Password: t.login.Password, DB: t.login.DB, TLS: t.tls,
		Workers: workers, FlushDelay: cfg.FlushDelay, ClientName: name, Connections: cfg.Connections,
		Retries: cfg.Retries, DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
	}
	t.topology.endpoint(&o)
	return o
}

// faultTarget is what the faults of the cell whose keys are under prefix
// act on.
func (t *target) faultTarget(cfg Config, prefix string) faults.Target {
	ft := t.topology.faultActions(prefix)
	ft.Admin = t.admin
	ft.Capabilities = t.spec.capabilities(cfg.AllowServerWideFaults)
	ft.Server = t.server.Addr
	ft.ClientName = clientName(prefix)
	return ft
}

// serverSamples is one saturation.Sample per master, by address.
type serverSamples struct {
	addrs   []string
	samples []saturation.Sample
}

// sample takes a saturation sample on every master.
func (t *target) sample(ctx context.Context) (serverSamples, error) {
	nodes, err := t.nodes(ctx)
	if err != nil {
		return serverSamples{}, err
	}
	var s serverSamples
	for _, n := range nodes {
		x, err := saturation.Take(ctx, n)
		if err != nil {
			return serverSamples{}, fmt.Errorf("%s: %w", n.Options().Addr, err)
		}
		s.addrs = append(s.addrs, n.Options().Addr)
		s.samples = append(s.samples, x)
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
	spec    TargetSpec
}

// openServer reaches an existing server, after a check of the login, or
// starts a private one (with TLS when PrivateTLS).
func openServer(ctx context.Context, cfg Config, spec TargetSpec) (*target, error) {
	s := &server{addr: spec.Addr, spec: spec}
	login := cfg.login(spec)
	if spec.Addr != "" {
		if err := checkLogin(ctx, spec, spec.Addr, login); err != nil {
			return nil, err
		}
	} else {
		opts := redisserver.Options{Binary: spec.RedisServer, Args: privateServerArgs}
		if cfg.PrivateTLS {
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
	t := &target{spec: spec, login: login, admin: admin, topology: s, server: results.Server{Addr: s.addr}}
	return newTarget(ctx, t, s.private != nil)
}

func (s *server) nodes(context.Context) ([]*redis.Client, error) {
	return []*redis.Client{s.admin}, nil
}

func (s *server) endpoint(o *clients.Options) { o.Addr = s.addr }

func (s *server) faultActions(string) faults.Target {
	if s.private == nil {
		return faults.Target{}
	}
	return faults.Target{Restart: s.private.Restart}
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

// cluster is a Redis Cluster: an existing one, or a private one that
// rlbench started and can fail over and reshard.
type cluster struct {
	// seeds are the nodes the clients connect to first.
	seeds   []string
	admin   *redis.ClusterClient
	managed *redisserver.Cluster
	spec    TargetSpec
}

// openCluster starts the managed cluster, or checks the login on the
// first seed node of an existing one.
func openCluster(ctx context.Context, cfg Config, spec TargetSpec) (*target, error) {
	c := &cluster{seeds: spec.Cluster, spec: spec}
	login := cfg.login(spec)
	field := "Targets.Cluster"
	if spec.ManagedCluster != "" {
		field = "Targets.ManagedCluster"
		masters, replicas, _ := redisserver.ParseClusterSize(spec.ManagedCluster)
		m, err := redisserver.StartCluster(ctx, redisserver.ClusterOptions{
			Masters: masters, Replicas: replicas, Binary: spec.RedisServer,
			Args: privateServerArgs,
		})
		if err != nil {
			return nil, usage(field, fmt.Errorf("%s: %w", spec.Label, err))
		}
		c.managed, c.seeds, login = m, m.Addrs(), connection.Settings{}
	} else if err := checkLogin(ctx, spec, c.seeds[0], login); err != nil {
		return nil, err
	}
	admin, err := connection.Admin{Settings: login}.Cluster(c.seeds)
	if err != nil {
		c.close()
		return nil, usage("Connection", fmt.Errorf("%s: %w", spec.Label, err))
	}
	c.admin = admin
	t := &target{spec: spec, login: login, admin: admin, topology: c, server: results.Server{Addr: strings.Join(c.seeds, ",")}}
	if _, err := c.nodes(ctx); err != nil {
		t.close()
		return nil, usage(field, fmt.Errorf("%s: %w (is a Redis Cluster node listening there?)", spec.Label, err))
	}
	return newTarget(ctx, t, c.managed != nil)
}

func (c *cluster) nodes(ctx context.Context) ([]*redis.Client, error) {
	var mu sync.Mutex
	var nodes []*redis.Client
	err := c.admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster masters: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("cluster masters: none")
	}
	slices.SortFunc(nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return nodes, nil
}

func (c *cluster) endpoint(o *clients.Options) { o.Cluster = c.seeds }

// faultActions gives a private cluster's failover (when its masters have
// replicas: it promotes a replica of the master that serves slot 0 at the
// time) and reshard (it moves the slot of the cell's first key to the next
// master).
func (c *cluster) faultActions(prefix string) faults.Target {
	if c.managed == nil {
		return faults.Target{}
	}
	ft := faults.Target{Reshard: func(ctx context.Context, hold time.Duration) (string, error) {
		key := workload.KeyNames(prefix, 1)[0]
		slot, err := c.admin.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return "", fmt.Errorf("reshard: cluster keyslot %s: %w", key, err)
		}
		m, err := c.managed.MoveSlot(ctx, int(slot), hold)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("slot %d moved from %s to %s with its keys (%d), migrating for %s", m.Slot, m.From, m.To, m.Keys, hold), nil
	}}
	if c.spec.managedReplicas() > 0 {
		ft.Failover = func(ctx context.Context) (string, error) {
			masters := c.managed.MasterAddrs()
			if len(masters) == 0 {
				return "", errors.New("failover: the cluster has no master")
			}
			newMaster, err := c.managed.Failover(ctx, masters[0])
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s took over from %s", newMaster, masters[0]), nil
		}
	}
	return ft
}

// redirects reads the cluster's redirection and cluster-error counters on
// every node (package redirects); nil when a node could not be read.
func (c *cluster) redirects(ctx context.Context) redirects.Snapshot {
	s, err := redirects.Take(ctx, c.admin)
	if err != nil {
		return nil
	}
	return s
}

func (c *cluster) describe(r results.Server) string {
	if r.Managed {
		return fmt.Sprintf("private Redis Cluster %s of %s %s (%s); stopped at the end", c.spec.ManagedCluster, r.Name, r.Version, r.Addr)
	}
	return fmt.Sprintf("Redis Cluster of %s %s via %s", r.Name, r.Version, r.Addr)
}

func (c *cluster) close() {
	if c.managed != nil {
		c.managed.Close()
	}
}

// clientName is the CLIENT SETNAME of a cell's connections, which the
// kill-clients fault closes: unique to the cell, since its prefix is.
func clientName(cellPrefix string) string {
	return "rlbench-" + strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, cellPrefix)
}

// scanKeys audits the keys under prefix on every master and, with del,
// deletes them in the same pass (one SCAN of each master for both); with
// fields, it audits hash fields too (audit.Options.Fields).
func (t *target) scanKeys(ctx context.Context, prefix string, window int64, del, fields bool) (audit.Report, error) {
	return t.scan(ctx, keyAudit(prefix, window, del, fields))
}

// scan runs audit.Scan with opts on every master (UseDel where the server
// has no UNLINK).
func (t *target) scan(ctx context.Context, opts audit.Options) (audit.Report, error) {
	masters, err := t.nodes(ctx)
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

// audit audits the keys under prefix on every master; perNode has the
// result per master on a cluster, and is nil for a single server.
func (t *target) audit(ctx context.Context, prefix string, window int64, fields bool) (audit.Result, []audit.NodeResult, error) {
	rep, err := t.scanKeys(ctx, prefix, window, false, fields)
	return rep.Result(), t.perNode(rep), err
}

// perNode is rep's result per master on a cluster; nil for a single
// server, whose one node is the whole.
func (t *target) perNode(rep audit.Report) []audit.NodeResult {
	if !t.spec.isCluster() {
		return nil
	}
	return rep.NodeResults()
}

// cleanup deletes the keys under prefix on every master.
func (t *target) cleanup(ctx context.Context, prefix string) error {
	_, err := t.scanKeys(ctx, prefix, 0, true, false)
	return err
}
