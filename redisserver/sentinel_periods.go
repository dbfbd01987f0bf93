package redisserver

import (
	"context"
	"fmt"
	"strings"
)

// The sentinels' periods under SentinelOptions.QuickRejoin, in
// milliseconds (SENTINEL DEBUG); Sentinel's own are 10,000 and 2,000.
const (
	// quickInfoPeriod is how often a sentinel reads INFO of the master and
	// of each replica: how soon it sees that a node it counts as a replica
	// (an old master back from a cut) says it is a master.
	quickInfoPeriod = 1000
	// quickPublishPeriod is how often a sentinel says hello to the others.
	// It reconfigures a node that says it is a master where the sentinels
	// count a replica four of these periods after the node first said so
	// (time to hear of a newer configuration first), and the sentinels of
	// a new set-up find each other within one.
	quickPublishPeriod = 500
)

// quicken sets the quick periods on the sentinel at addr. A server
// without SENTINEL DEBUG (before Redis 7.0) keeps its own: the set-up
// works the same, and an old master rejoins later.
func (s *Sentinel) quicken(ctx context.Context, addr string) error {
	err := s.clients[addr].Do(ctx, "sentinel", "debug", "info-period", quickInfoPeriod, "publish-period", quickPublishPeriod).Err()
	if err != nil && !strings.Contains(err.Error(), "Unknown subcommand") {
		return fmt.Errorf("sentinel debug on %s: %w", addr, err)
	}
	return nil
}
