package connection

import (
	"crypto/tls"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The methods below fill only the fields that say how to reach and log in
// to the server (addresses, user, password, db, TLS, Sentinel): pool
// sizes, timeouts and retries stay the caller's. Each builds its own
// *tls.Config, so that callers never share one. Their errors are
// TLSFiles.Config's, which name the flag.

// GoRedis returns go-redis options for the single server at addr.
func (s Settings) GoRedis(addr string) (*redis.Options, error) {
	cfg, err := s.TLS.Config()
	if err != nil {
		return nil, err
	}
	return &redis.Options{Addr: addr, Username: s.Username, Password: s.Password, DB: s.DB, TLSConfig: cfg}, nil
}

// GoRedisUniversal returns options for redis.NewUniversalClient: a
// failover client when sentinel is not nil, else a cluster client when
// cluster is true (even with one seed address), else a client of addrs[0].
func (s Settings) GoRedisUniversal(addrs []string, cluster bool, sentinel *Sentinel) (*redis.UniversalOptions, error) {
	cfg, err := s.TLS.Config()
	if err != nil {
		return nil, err
	}
	o := &redis.UniversalOptions{
		Addrs:         addrs,
		IsClusterMode: cluster && sentinel == nil,
		Username:      s.Username,
		Password:      s.Password,
		TLSConfig:     cfg,
	}
	if !o.IsClusterMode {
		o.DB = s.DB
	}
	if sentinel != nil {
		o.Addrs, o.MasterName = sentinel.Addrs, sentinel.Master
		o.SentinelUsername, o.SentinelPassword = sentinel.Username, sentinel.Password
	}
	return o, nil
}

// Rueidis returns a rueidis ClientOption for addrs: one server, or the
// seeds of a cluster (rueidis tells them apart; set ForceSingleClient for
// a single server, as package clients does).
func (s Settings) Rueidis(addrs []string) (rueidis.ClientOption, error) {
	cfg, err := s.TLS.Config()
	if err != nil {
		return rueidis.ClientOption{}, err
	}
	return rueidis.ClientOption{
		InitAddress: addrs,
		Username:    s.Username,
		Password:    s.Password,
		SelectDB:    s.DB,
		TLSConfig:   cfg,
	}, nil
}

func cloneTLS(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	return cfg.Clone()
}
