package redisserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/serverinfo"
)

const (
	// DefaultSentinelMaster is the master name StartSentinel's sentinels
	// monitor when SentinelOptions.MasterName is empty.
	DefaultSentinelMaster = "rlbench"
	// SentinelCount is how many sentinels StartSentinel starts: three, the
	// smallest number that keeps a majority when one is lost.
	SentinelCount = 3
	// sentinelQuorum is the number of sentinels that must agree the master is down.
	sentinelQuorum = 2
	// sentinelConfFile is a sentinel's config file, in its temporary
	// directory: sentinel mode needs one it can rewrite.
	sentinelConfFile = "sentinel.conf"
	// sentinelDownAfter is how long a master may not answer, in
	// milliseconds, before a sentinel counts it as down.
	sentinelDownAfter = 1000
	// sentinelFailoverTimeout is each sentinel's failover-timeout, in
	// milliseconds; a sentinel waits twice as long before it retries a
	// failover of the same master.
	sentinelFailoverTimeout = 10000
	// sentinelSettleTimeout caps how long StartSentinel and Failover wait
	// for the set-up to settle.
	sentinelSettleTimeout = 30 * time.Second
	// maxSentinelReplicas guards against a typo starting thousands of processes.
	maxSentinelReplicas = 100
)

// SentinelOptions configures StartSentinel. The zero value starts a master
// with no replica and three sentinels, with "redis-server" from PATH.
type SentinelOptions struct {
	// Replicas is the number of replicas of the master, from 0 to 100.
	// Failover needs at least 1. Default: 0.
	Replicas int
	// MasterName is the name the sentinels know the master by, which
	// clients ask them for. Default: DefaultSentinelMaster.
	MasterName string
	// Binary is the redis-server (or valkey-server) to run, for the data
	// nodes and the sentinels alike, as Options.Binary.
	Binary string
	// Args are extra config arguments for the master and its replicas (not
	// the sentinels), as Options.Args. If they set --requirepass, the
	// replicas authenticate to the master with it and the sentinels to
	// every node.
	Args []string
	// SentinelPassword, when not "", is the sentinels' own requirepass:
	// clients must log in to them with it, and they log in to each other
	// with it (sentinel sentinel-pass). Default: none.
	SentinelPassword string
	// MinReplicas, when > 0, is every data node's min-replicas-to-write: a
	// master refuses writes (NOREPLICAS) unless that many replicas have
	// acknowledged its stream within MinReplicasMaxLag. At most Replicas.
	// Default: 0, none.
	MinReplicas int
	// MinReplicasMaxLag is every data node's min-replicas-max-lag, in
	// seconds, with MinReplicas; 0 means DefaultMinReplicasMaxLag.
	MinReplicasMaxLag int
	// Relay, when not nil, puts a proxy in front of each data node: it is
	// called with the node's address once the node is started, and the
	// sentinels and the other nodes reach the node only through the
	// relay's address, which the node announces (replica-announce-ip and
	// -port). Clients must dial the node itself for it (Direct). The set-up
	// closes the relays at Close; SplitBrain cuts the master's. Default:
	// none, every connection direct.
	Relay func(addr string) (Relay, error)
	// QuickRejoin shortens the sentinels' INFO period to 1 s and their
	// hello period to 500 ms (SENTINEL DEBUG, Redis 7.0 and later; an
	// older server keeps 10 s and 2 s): an old master that comes back
	// after the sentinels promoted a replica (a SplitBrain healed) is
	// made a replica some 3 s after it returns, not 10 to 20. Default:
	// Sentinel's periods.
	QuickRejoin bool
}

// DefaultMinReplicasMaxLag is the min-replicas-max-lag, in seconds, of
// SentinelOptions.MinReplicas when MinReplicasMaxLag is 0: one second, as
// the set-up's down-after is one second (Redis' defaults are 10 and 30).
const DefaultMinReplicasMaxLag = 1

// Sentinel is a private Sentinel set-up on free loopback ports: a master,
// its replicas and three sentinels (redis-server --sentinel) monitoring it,
// started by StartSentinel and owned by the caller, who must Close it.
type Sentinel struct {
	name      string
	password  string
	nodes     []*Server // the master as started, then its replicas
	sentinels []*Server
	clients   map[string]*redis.Client // an admin connection per address
	// relays are the data nodes' relays by the nodes' own addresses, and
	// direct the nodes' own addresses by the relays'; empty without
	// SentinelOptions.Relay.
	relays map[string]Relay
	direct map[string]string

	mu     sync.Mutex
	closed bool
}

// StartSentinel starts a master, then o.Replicas replicas of it, then three
// sentinels that monitor it (quorum 2, down-after 1 second, failover
// timeout 10 seconds), each a private server (Start) with its own
// temporary directory. It returns when every replica's link to the master
// is up and every sentinel knows the master, all its replicas and the two
// other sentinels: a few seconds, mostly the sentinels' 2-second hello
// period. On error every process already started is stopped.
func StartSentinel(ctx context.Context, o SentinelOptions) (*Sentinel, error) {
	if o.Replicas < 0 || o.Replicas > maxSentinelReplicas {
		return nil, fmt.Errorf("redisserver: start sentinel: %d replicas: want 0 to %d", o.Replicas, maxSentinelReplicas)
	}
	if o.MinReplicas < 0 || o.MinReplicas > o.Replicas || o.MinReplicasMaxLag < 0 {
		return nil, fmt.Errorf("redisserver: start sentinel: min-replicas-to-write %d, max lag %d s: want 0 to the %d replicas, and a lag >= 0", o.MinReplicas, o.MinReplicasMaxLag, o.Replicas)
	}
	s := &Sentinel{name: o.MasterName, password: requirepass(o.Args), clients: map[string]*redis.Client{},
		relays: map[string]Relay{}, direct: map[string]string{}}
	if s.name == "" {
		s.name = DefaultSentinelMaster
	}
	if err := s.start(ctx, o); err != nil {
		s.Close()
		return nil, fmt.Errorf("redisserver: start sentinel: %w", err)
	}
	return s, nil
}

// start starts the master, the replicas and the sentinels, and waits until
// they settle.
func (s *Sentinel) start(ctx context.Context, o SentinelOptions) error {
	args := dataArgs(o)
	master, err := Start(ctx, Options{Binary: o.Binary, Args: args})
	if err != nil {
		return err
	}
	s.add(&s.nodes, master)
	settle, cancel := context.WithTimeout(ctx, sentinelSettleTimeout)
	defer cancel()
	if err := s.relay(settle, o, master); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(s.announced(master.Addr()))
	replicaArgs := slices.Clone(args)
	if s.password != "" {
		replicaArgs = append(replicaArgs, "--masterauth", s.password)
	}
	if o.Relay == nil {
		replicaArgs = append(replicaArgs, "--replicaof", host, port)
	}
	if err := s.startMany(ctx, &s.nodes, o.Replicas, Options{Binary: o.Binary, Args: replicaArgs}); err != nil {
		return err
	}
	if o.Relay != nil {
		// A replica announces its relay before it first greets its master.
		for _, replica := range s.nodes[1:] {
			if err := s.relay(settle, o, replica); err != nil {
				return err
			}
			if err := s.clients[replica.Addr()].Do(settle, "replicaof", host, port).Err(); err != nil {
				return fmt.Errorf("replicaof on %s: %w", replica.Addr(), err)
			}
		}
	}
	// Replicas first: a sentinel learns them from the master's INFO, which
	// it reads at once, then only every 10 seconds.
	for _, replica := range s.nodes[1:] {
		if err := s.awaitLinkUp(settle, replica.Addr()); err != nil {
			return err
		}
	}
	sentinelArgs := []string(nil)
	if o.SentinelPassword != "" {
		sentinelArgs = []string{"--requirepass", o.SentinelPassword}
	}
	if err := s.startMany(ctx, &s.sentinels, SentinelCount, Options{Binary: o.Binary, Args: sentinelArgs, sentinel: true}); err != nil {
		return err
	}
	for _, sen := range s.sentinels {
		if o.QuickRejoin {
			if err := s.quicken(settle, sen.Addr()); err != nil {
				return err
			}
		}
		if err := s.monitor(settle, sen.Addr(), host, port); err != nil {
			return err
		}
	}
	return s.awaitSettled(settle, master.Addr())
}

// dataArgs are the config arguments of every data node: o.Args, a
// replica's sync started at once (a diskless sync waits 5 s by default
// for more replicas: at start, and whenever an old master rejoins), and
// min-replicas-to-write with its lag.
func dataArgs(o SentinelOptions) []string {
	args := append([]string{"--repl-diskless-sync-delay", "0"}, o.Args...)
	if o.MinReplicas > 0 {
		lag := cmp.Or(o.MinReplicasMaxLag, DefaultMinReplicasMaxLag)
		args = append(args, "--min-replicas-to-write", strconv.Itoa(o.MinReplicas), "--min-replicas-max-lag", strconv.Itoa(lag))
	}
	return args
}

// startMany starts n servers with o in parallel and adds them to list.
func (s *Sentinel) startMany(ctx context.Context, list *[]*Server, n int, o Options) error {
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = Start(ctx, o) })
	}
	wg.Wait()
	for _, srv := range servers {
		if srv != nil {
			s.add(list, srv)
		}
	}
	return errors.Join(errs...)
}

// add appends srv to list and opens an admin connection to it, logged in
// with its requirepass (the master's for a data node, the sentinels' own
// for a sentinel).
func (s *Sentinel) add(list *[]*Server, srv *Server) {
	*list = append(*list, srv)
	s.clients[srv.Addr()] = connection.Admin{Settings: connection.Settings{Password: srv.password}, PoolSize: 2, FailFast: true}.PlainClient(srv.Addr())
}

// monitor tells the sentinel at addr to watch the master at host:port.
func (s *Sentinel) monitor(ctx context.Context, addr, host, port string) error {
	rdb := s.clients[addr]
	if err := rdb.Do(ctx, "sentinel", "monitor", s.name, host, port, sentinelQuorum).Err(); err != nil {
		return fmt.Errorf("sentinel monitor on %s: %w", addr, err)
	}
	args := []any{"sentinel", "set", s.name,
		"down-after-milliseconds", sentinelDownAfter,
		"failover-timeout", sentinelFailoverTimeout}
	if s.password != "" {
		args = append(args, "auth-pass", s.password)
	}
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("sentinel set on %s: %w", addr, err)
	}
	return nil
}

// awaitLinkUp waits until the replica at addr reports its link to its
// master up.
func (s *Sentinel) awaitLinkUp(ctx context.Context, addr string) error {
	return poll(ctx, "replica "+addr+" to sync with its master", func(ctx context.Context) error {
		text, err := s.clients[addr].Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if status := serverinfo.Parse(text)["master_link_status"]; status != "up" {
			return fmt.Errorf("master_link_status:%s", status)
		}
		return nil
	})
}

// awaitSettled waits until every sentinel names master as the master and
// knows every replica and the other sentinels.
func (s *Sentinel) awaitSettled(ctx context.Context, master string) error {
	return poll(ctx, "the sentinels to agree on "+master, func(ctx context.Context) error {
		for _, sen := range s.sentinels {
			rdb := s.clients[sen.Addr()]
			got, err := s.masterFrom(ctx, rdb)
			if err != nil {
				return err
			}
			if got != master {
				return fmt.Errorf("sentinel %s names %s as master", sen.Addr(), got)
			}
			if err := s.knows(ctx, rdb, "replicas", len(s.nodes)-1); err != nil {
				return fmt.Errorf("sentinel %s: %w", sen.Addr(), err)
			}
			if err := s.knows(ctx, rdb, "sentinels", len(s.sentinels)-1); err != nil {
				return fmt.Errorf("sentinel %s: %w", sen.Addr(), err)
			}
		}
		return nil
	})
}

// knows checks that SENTINEL REPLICAS (or SENTINELS) lists want instances,
// none of them flagged down or disconnected.
func (s *Sentinel) knows(ctx context.Context, rdb *redis.Client, what string, want int) error {
	list, err := rdb.Do(ctx, "sentinel", what, s.name).Slice()
	if err != nil {
		return fmt.Errorf("sentinel %s: %w", what, err)
	}
	healthy := 0
	for _, entry := range list {
		flags := sentinelField(entry, "flags")
		if !strings.Contains(flags, "down") && !strings.Contains(flags, "disconnected") {
			healthy++
		}
	}
	if healthy < want {
		return fmt.Errorf("knows %d healthy %s of %d", healthy, what, want)
	}
	return nil
}

// sentinelField reads a field of one entry of SENTINEL REPLICAS or
// SENTINELS, which is a flat list of names and values (RESP2) or a map.
func sentinelField(entry any, name string) string {
	switch e := entry.(type) {
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			if fmt.Sprint(e[i]) == name {
				return fmt.Sprint(e[i+1])
			}
		}
	case map[any]any:
		return fmt.Sprint(e[name])
	}
	return ""
}

// masterFrom asks one sentinel for the master's address.
func (s *Sentinel) masterFrom(ctx context.Context, rdb *redis.Client) (string, error) {
	hp, err := rdb.Do(ctx, "sentinel", "get-master-addr-by-name", s.name).StringSlice()
	if err != nil {
		return "", fmt.Errorf("sentinel get-master-addr-by-name on %s: %w", rdb.Options().Addr, err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel get-master-addr-by-name on %s: reply %s", rdb.Options().Addr, excerpt.Text(fmt.Sprintf("%q", hp)))
	}
	addr := net.JoinHostPort(hp[0], hp[1])
	if own, ok := s.direct[addr]; ok {
		return own, nil
	}
	return addr, nil
}

// MasterName returns the name the sentinels know the master by.
func (s *Sentinel) MasterName() string { return s.name }

// SentinelAddrs returns the addresses of the three sentinels.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, sen := range s.sentinels {
		addrs[i] = sen.Addr()
	}
	return addrs
}

// Nodes returns the data nodes: the master as started, then its replicas.
// After a Failover the roles differ: ask MasterAddr.
func (s *Sentinel) Nodes() []*Server { return s.nodes }

// MasterAddr returns the master's address as the first sentinel that
// answers reports it: the node's own, not its relay's.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	if s.isClosed() {
		return "", errors.New("redisserver: master addr: sentinel set-up is closed")
	}
	var errs []error
	for _, sen := range s.sentinels {
		addr, err := s.masterFrom(ctx, s.clients[sen.Addr()])
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("redisserver: master addr: %w", errors.Join(errs...))
}

// Close stops every sentinel, then every data node (each as Server.Close),
// then the relays, and removes their temporary directories. Calling Close again does
// nothing and returns nil.
func (s *Sentinel) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, rdb := range s.clients {
		rdb.Close()
	}
	var errs []error
	// Sentinels first, so that they do not fail over while the nodes stop.
	for _, group := range [][]*Server{s.sentinels, s.nodes} {
		groupErrs := make([]error, len(group))
		var wg sync.WaitGroup
		for i, srv := range group {
			wg.Go(func() { groupErrs[i] = srv.Close() })
		}
		wg.Wait()
		errs = append(errs, groupErrs...)
	}
	for _, r := range s.relays {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

func (s *Sentinel) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// setupStart prepares s.dir for the server's mode: a sentinel's config
// file (which it rewrites; with its requirepass, it logs in to the other
// sentinels with the same) and a TLS server's certificates.
func (s *Server) setupStart(o Options) error {
	if s.sentinel {
		var conf []byte
		if s.password != "" {
			conf = []byte("sentinel sentinel-pass " + strconv.Quote(s.password) + "\n")
		}
		if err := os.WriteFile(filepath.Join(s.dir, sentinelConfFile), conf, 0o600); err != nil {
			return fmt.Errorf("sentinel config: %w", err)
		}
	}
	return s.setupTLS(o.TLS)
}

// poll calls check until it returns nil or ctx ends; the error then says
// what was awaited and what check said last.
func poll(ctx context.Context, what string, check func(context.Context) error) error {
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
