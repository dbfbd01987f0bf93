package connection

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Admin configures the connections rlbench opens beside the clients under
// test: audits, clean-ups, faults, self-checks and the management of the
// servers it starts. They log in with Settings, send no CLIENT SETINFO and
// turn maintenance notifications off, so that they work on any server
// version. They never retry a command (go-redis retries 3 times by
// default): a pipeline caught in a stalled server's buffer runs when the
// server resumes, and a retry would run it again (UNLINK, EXPIRE, ...);
// the caller decides what to read or send again (package audit). The
// zero value is a pool of 4 connections over plain TCP to database 0 as
// the default user.
type Admin struct {
	Settings
	// PoolSize is the connections per node; 0 means 4.
	PoolSize int
	// FailFast shortens the timeouts to 2 s and dials once, for talking to
	// nodes that may be down (the caller then asks another).
	FailFast bool
}

// failFastTimeout is a FailFast connection's dial, read and write timeout.
const failFastTimeout = 2 * time.Second

// options are the go-redis options of every admin connection: a
// *tls.Config of their own, and an error only when the TLS files cannot
// be read.
func (a Admin) options(addrs []string) (*redis.UniversalOptions, error) {
	o, err := a.GoRedisUniversal(addrs, false, nil)
	if err != nil {
		return nil, err
	}
	o.PoolSize = a.PoolSize
	if o.PoolSize == 0 {
		o.PoolSize = 4
	}
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	o.MaxRetries = -1
	if a.FailFast {
		o.Protocol = 2
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = failFastTimeout, failFastTimeout, failFastTimeout
		o.DialerRetries = 1
	}
	return o, nil
}

// Client returns an admin connection to the server at addr.
func (a Admin) Client(addr string) (*redis.Client, error) {
	o, err := a.options([]string{addr})
	if err != nil {
		return nil, err
	}
	return redis.NewClient(o.Simple()), nil
}

// Cluster returns an admin connection to the Redis Cluster that the nodes
// at addrs belong to. The clients of its nodes (ForEachMaster, which the
// audit walks) never retry a command: a fault in the cluster is reported,
// not hidden. The cluster client itself follows MOVED and ASK and, after a
// timeout, asks another node (go-redis' MaxRedirects): rlbench sends it
// reads, and the pre-flight's probe SET and DEL, which a second run leaves
// as the first did.
func (a Admin) Cluster(addrs []string) (*redis.ClusterClient, error) {
	o, err := a.options(addrs)
	if err != nil {
		return nil, err
	}
	return redis.NewClusterClient(o.Cluster()), nil
}

// Failover returns an admin connection to the master that the sentinels of
// t name, following it across failovers; it dials the address t.Direct
// gives for it, when there is one.
func (a Admin) Failover(t Sentinel) (*redis.Client, error) {
	o, err := a.options(t.Addrs)
	if err != nil {
		return nil, err
	}
	o.MasterName = t.Master
	o.SentinelUsername, o.SentinelPassword = t.Username, t.Password
	o.Dialer = t.GoRedisDialer(o.DialTimeout, o.TLSConfig)
	return redis.NewFailoverClient(o.Failover()), nil
}

// PlainClient is Client for a server reached over plain TCP, which cannot
// fail: the servers rlbench starts, and tests.
func (a Admin) PlainClient(addr string) *redis.Client {
	a.TLS = nil
	c, _ := a.Client(addr)
	return c
}
