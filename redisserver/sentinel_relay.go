package redisserver

import (
	"context"
	"fmt"
	"maps"
	"net"
)

// Relay is a proxy in front of one data node (SentinelOptions.Relay), e.g.
// a netproxy.Proxy.
type Relay interface {
	// Addr is where the relay listens: the address the sentinels and the
	// other nodes know the node by.
	Addr() string
	// Cut makes every byte vanish both ways until Heal, without closing a
	// connection.
	Cut() error
	// Heal ends a Cut.
	Heal() error
	// Close stops the relay.
	Close() error
}

// relay puts a relay from o.Relay in front of the data node srv, and makes
// the node announce it; nothing without o.Relay.
func (s *Sentinel) relay(ctx context.Context, o SentinelOptions, srv *Server) error {
	if o.Relay == nil {
		return nil
	}
	r, err := o.Relay(srv.Addr())
	if err != nil {
		return fmt.Errorf("relay to %s: %w", srv.Addr(), err)
	}
	s.relays[srv.Addr()], s.direct[r.Addr()] = r, srv.Addr()
	host, port, err := net.SplitHostPort(r.Addr())
	if err != nil {
		return fmt.Errorf("relay to %s: address %q: %w", srv.Addr(), r.Addr(), err)
	}
	err = s.clients[srv.Addr()].ConfigSet(ctx, "replica-announce-ip", host).Err()
	if err == nil {
		err = s.clients[srv.Addr()].ConfigSet(ctx, "replica-announce-port", port).Err()
	}
	if err != nil {
		return fmt.Errorf("announce relay %s on %s: %w", r.Addr(), srv.Addr(), err)
	}
	return nil
}

// announced is the address the sentinels and the other nodes know the
// data node at addr by: its relay's, or addr itself.
func (s *Sentinel) announced(addr string) string {
	if r, ok := s.relays[addr]; ok {
		return r.Addr()
	}
	return addr
}

// Direct maps each data node's relay address, as the sentinels name it,
// to the node's own (connection.Sentinel.Direct); empty without
// SentinelOptions.Relay.
func (s *Sentinel) Direct() map[string]string { return maps.Clone(s.direct) }
