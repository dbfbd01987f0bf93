package redisserver

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseClusterSize reads a cluster shape as --managed-cluster takes it: "N"
// for N masters, or "NxR" for N masters with R replicas each ("3", "3x1").
// Errors wrap ErrClusterSize, whose message names the accepted form.
func ParseClusterSize(s string) (masters, replicas int, err error) {
	m, r, hasReplicas := strings.Cut(strings.ToLower(s), "x")
	masters, ok := parseCount(m)
	if ok && hasReplicas {
		replicas, ok = parseCount(r)
	}
	if !ok {
		return 0, 0, fmt.Errorf("redisserver: cluster size %q: %w", s, ErrClusterSize)
	}
	if err := checkClusterSize(masters, replicas); err != nil {
		return 0, 0, fmt.Errorf("redisserver: cluster size %q: %w", s, err)
	}
	return masters, replicas, nil
}

// parseCount reads a non-empty run of decimal digits.
func parseCount(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// checkClusterSize says why masters and replicas do not make a cluster.
func checkClusterSize(masters, replicas int) error {
	switch {
	case masters < DefaultClusterMasters:
		return fmt.Errorf("%d masters, Redis Cluster needs at least 3: %w", masters, ErrClusterSize)
	case replicas < 0:
		return fmt.Errorf("%d replicas: %w", replicas, ErrClusterSize)
	case masters > maxClusterNodes || masters*(1+replicas) > maxClusterNodes:
		return fmt.Errorf("more than %d nodes: %w", maxClusterNodes, ErrClusterSize)
	}
	return nil
}
