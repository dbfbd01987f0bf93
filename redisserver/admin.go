package redisserver

import (
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Admin configures the connections rlbench opens beside the clients under
// test: audits, clean-ups, faults, self-checks and cluster management. They
// send no CLIENT SETINFO and turn maintenance notifications off, so that
// they work on any server version. Its zero value is a connection of 4 to
// database 0 with no password.
type Admin struct {
	// Password authenticates; "" means none.
	Password string
	// DB is the database number; a cluster has only 0.
	DB int
	// PoolSize is the connections per node; 0 means 4.
	PoolSize int
	// FailFast turns retries off and shortens the timeouts to 2 s, for
	// talking to nodes that may be down (the caller then asks another).
	FailFast bool
}

// options are the go-redis options of every admin connection.
func (a Admin) options(addrs []string) *redis.UniversalOptions {
	o := &redis.UniversalOptions{
		Addrs:                    addrs,
		Password:                 a.Password,
		DB:                       a.DB,
		PoolSize:                 a.PoolSize,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if o.PoolSize == 0 {
		o.PoolSize = 4
	}
	if a.FailFast {
		o.Protocol = 2
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = dialTimeout, dialTimeout, dialTimeout
		o.DialerRetries = 1
		o.MaxRetries = -1
	}
	return o
}

// Client returns an admin connection to the server at addr.
func (a Admin) Client(addr string) *redis.Client {
	return redis.NewClient(a.options([]string{addr}).Simple())
}

// Cluster returns an admin connection to the Redis Cluster that the nodes
// at addrs belong to. It never retries a command: a fault in the cluster is
// reported, not hidden.
func (a Admin) Cluster(addrs []string) *redis.ClusterClient {
	o := a.options(addrs).Cluster()
	o.MaxRetries = -1
	return redis.NewClusterClient(o)
}
