package rlbench

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/connection"
)

// checkClientOptions refuses, before anything touches Redis, the client
// settings that a client under test cannot take on target t
// (clients.CheckOptions): a topology it does not support (redigo on a
// cluster or Sentinel), a connection shape it cannot open, retries on
// redigo, differing read and write timeouts on rueidis or valkey-go.
// With all (--client all), a client without support for t's topology is
// left out of the run instead.
func (c *Config) checkClientOptions(t TargetSpec, all bool) error {
	o := clients.Options{
		Retries: c.Retries, Connections: c.Connections,
		DialTimeout: c.DialTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout,
	}
	switch {
	case t.isSentinel():
		o.Sentinel = connection.Sentinel{Master: "sentinel"}
	case t.isCluster():
		o.Cluster = []string{"cluster"}
	}
	if all {
		c.Clients = slices.DeleteFunc(c.Clients, func(name string) bool {
			return !slices.Contains(clients.Topologies[name], clients.TopologyOf(o))
		})
	}
	for _, name := range c.Clients {
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
		if t.Label != "" && field == "Clients" {
			err = fmt.Errorf("%s: %w", t.Label, err)
		}
		return usage(field, err)
	}
	return nil
}
