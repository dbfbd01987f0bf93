package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failover promotes a replica of the master at masterAddr with CLUSTER
// FAILOVER (the coordinated kind: the master stops taking writes until the
// replica has caught up, so no acknowledged write is lost) and returns the
// new master's address. It picks the first replica, in the order of Addrs,
// that the cluster does not flag as failing, and errors with ErrNoReplica if
// there is none. It waits until the cluster has settled again, for at most
// 15 seconds or until ctx ends: the promoted node reports itself master,
// every node says cluster_state:ok and agrees on the new roles, and the old
// master has become a replica of the new one, in sync.
//
// The new master starts with an empty script cache.
func (c *Cluster) Failover(ctx context.Context, masterAddr string) (newMaster string, err error) {
	if c.isClosed() {
		return "", fmt.Errorf("redisserver: failover %s: cluster is closed", masterAddr)
	}
	ctx, cancel := context.WithTimeout(ctx, failoverTimeout)
	defer cancel()
	view, err := c.view(ctx)
	if err != nil {
		return "", fmt.Errorf("redisserver: failover %s: %w", masterAddr, err)
	}
	master, ok := view.byAddr(c, masterAddr)
	if !ok || !master.has("master") {
		return "", fmt.Errorf("redisserver: failover %s: not a master of the cluster; masters are %s", masterAddr, strings.Join(c.mastersIn(view), ", "))
	}
	var replica viewNode
	for _, srv := range c.nodes {
		if n, ok := view.byAddr(c, srv.Addr()); ok && n.masterID == master.id && !n.has("fail") && !n.has("fail?") {
			replica = n
			break
		}
	}
	if replica.id == "" {
		return "", fmt.Errorf("redisserver: failover %s: %w", masterAddr, ErrNoReplica)
	}
	newMaster = c.addrOf(replica)
	if err := c.clients[newMaster].ClusterFailover(ctx).Err(); err != nil {
		return "", fmt.Errorf("redisserver: failover %s: cluster failover on %s: %w", masterAddr, newMaster, err)
	}
	err = c.await(ctx, newMaster+" to take over", func(ctx context.Context) error {
		view, err := c.settled(ctx)
		if err != nil {
			return err
		}
		if n, _ := view.byID(replica.id); !n.has("master") {
			return fmt.Errorf("%s is still a replica", newMaster)
		}
		if n, _ := view.byID(master.id); n.masterID != replica.id {
			return fmt.Errorf("%s is not yet a replica of %s", masterAddr, newMaster)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("redisserver: failover %s: %w", masterAddr, err)
	}
	return newMaster, nil
}

// SlotMove is what MoveSlot did.
type SlotMove struct {
	Slot     int
	From, To string // the masters' addresses
	Keys     int    // keys MIGRATE moved
}

// MoveSlot moves one hash slot to another master as redis-cli --cluster
// reshard does: the next master after its owner, in the order of
// MasterAddrs, marks it IMPORTING and the owner MIGRATING; the owner's keys
// in it go over with MIGRATE (TTLs included); then every master learns the
// new owner with CLUSTER SETSLOT NODE. While the slot migrates, the owner
// answers a command for a key it no longer holds with an ASK redirection;
// after the handover a client that still asks the old owner gets MOVED.
// hold keeps the slot migrating for that long after the first keys have
// moved (a large slot takes a while), before the last MIGRATE and the
// handover. When it fails before the handover, it marks the slot STABLE on
// both masters again, so that none is left half-moved. It waits until the cluster has settled again, for at most 15
// seconds or until ctx ends.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, hold time.Duration) (SlotMove, error) {
	m := SlotMove{Slot: slot}
	if c.isClosed() {
		return m, fmt.Errorf("redisserver: move slot %d: cluster is closed", slot)
	}
	if slot < 0 || slot >= clusterSlots {
		return m, fmt.Errorf("redisserver: move slot %d: not a hash slot (0 to %d)", slot, clusterSlots-1)
	}
	ctx, cancel := context.WithTimeout(ctx, failoverTimeout+hold)
	defer cancel()
	view, err := c.view(ctx)
	if err != nil {
		return m, fmt.Errorf("redisserver: move slot %d: %w", slot, err)
	}
	masters := c.mastersIn(view)
	for i, addr := range masters {
		if n, _ := view.byAddr(c, addr); n.serves(slot) {
			m.From, m.To = addr, masters[(i+1)%len(masters)]
		}
	}
	if m.From == "" || m.From == m.To {
		return m, fmt.Errorf("redisserver: move slot %d: no master serves it, or no other master to take it", slot)
	}
	src, dst := c.clients[m.From], c.clients[m.To]
	srcID, dstID := c.idOf(m.From), c.idOf(m.To)
	handedOver := false
	defer func() {
		if !handedOver {
			// Best effort: no slot left half-moved for later cells and
			// the audit. The keys already moved stay on the new owner.
			bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), clusterQueryTimeout)
			defer cancel()
			src.Do(bg, "cluster", "setslot", slot, "stable")
			dst.Do(bg, "cluster", "setslot", slot, "stable")
		}
	}()
	if err := dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err(); err != nil {
		return m, fmt.Errorf("redisserver: move slot %d: setslot importing on %s: %w", slot, m.To, err)
	}
	if err := src.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err(); err != nil {
		return m, fmt.Errorf("redisserver: move slot %d: setslot migrating on %s: %w", slot, m.From, err)
	}
	if err := c.migrateKeys(ctx, slot, m.From, m.To, &m.Keys); err != nil {
		return m, err
	}
	select {
	case <-time.After(hold):
	case <-ctx.Done():
		return m, fmt.Errorf("redisserver: move slot %d: %w", slot, ctx.Err())
	}
	// Keys the owner still served during the hold, and any it took since.
	if err := c.migrateKeys(ctx, slot, m.From, m.To, &m.Keys); err != nil {
		return m, err
	}
	// The new owner first, then the old, then the rest, as redis-cli does.
	order := append([]string{m.To, m.From}, slices.DeleteFunc(slices.Clone(masters), func(a string) bool { return a == m.To || a == m.From })...)
	for i, addr := range order {
		if err := c.clients[addr].Do(ctx, "cluster", "setslot", slot, "node", dstID).Err(); err != nil {
			return m, fmt.Errorf("redisserver: move slot %d: setslot node on %s: %w", slot, addr, err)
		}
		// Once both ends agree, the slot is the new owner's: the others
		// learn it from them.
		handedOver = i >= 1
	}
	err = c.await(ctx, fmt.Sprintf("slot %d to settle on %s", slot, m.To), func(ctx context.Context) error {
		view, err := c.settled(ctx)
		if err != nil {
			return err
		}
		if n, _ := view.byAddr(c, m.To); !n.serves(slot) {
			return fmt.Errorf("%s does not serve slot %d yet", m.To, slot)
		}
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("redisserver: move slot %d: %w", slot, err)
	}
	return m, nil
}

// migrateKeys moves every key of slot from one master to another with
// MIGRATE, a batch at a time, adding their number to moved.
func (c *Cluster) migrateKeys(ctx context.Context, slot int, from, to string, moved *int) error {
	src := c.clients[from]
	host, port, _ := net.SplitHostPort(to)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			return fmt.Errorf("redisserver: move slot %d: getkeysinslot on %s: %w", slot, from, err)
		}
		if len(keys) == 0 {
			return nil
		}
		args := []any{"migrate", host, port, "", 0, dialTimeout.Milliseconds()}
		if c.password != "" {
			args = append(args, "auth", c.password)
		}
		args = append(args, "keys")
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("redisserver: move slot %d: migrate to %s: %w", slot, to, err)
		}
		*moved += len(keys)
	}
}
