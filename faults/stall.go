package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// StallSlice is the longest one CLIENT PAUSE of a stall lasts. A stall of D
// is ceil(D / StallSlice) pauses, each renewing the one before it, all sent
// at once on a connection of the stall's own: the server runs each queued
// pause as the one before ends, before any other client (the first one
// postponed is the first one resumed), so that no command passes between
// two slices. A rlbench that is killed, or that ends the stall at an
// interrupt or at the end of the load, closes that connection, the server
// drops the pauses still queued, and every client is answered again within
// one slice. CLIENT UNPAUSE cannot do it: under a pause of every command
// (CLIENT PAUSE ALL) it waits for the pause's end like any other command.
const StallSlice = time.Second

// stall pauses every client of the server that admin reaches for d, in
// slices of StallSlice, until d has passed or ctx is done, and says what it
// did.
func stall(ctx context.Context, admin redis.Cmdable, d time.Duration) (string, error) {
	withOpts, ok := admin.(interface{ Options() *redis.Options })
	if !ok {
		return "", errors.New("stall: the admin connection is not a single server's")
	}
	// A connection of the stall's own, with no read timeout: its replies
	// come one slice apart.
	opts := *withOpts.Options()
	opts.PoolSize, opts.MinIdleConns, opts.MaxRetries = 1, 0, -1
	opts.ReadTimeout, opts.ContextTimeoutEnabled = -1, false
	c := redis.NewClient(&opts)
	defer c.Close()
	slices := stallSlices(d)
	pipe := c.Pipeline()
	for _, ms := range slices {
		pipe.Do(ctx, "client", "pause", ms)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := pipe.Exec(context.WithoutCancel(ctx))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return "", fmt.Errorf("client pause: %w", err)
		}
		return fmt.Sprintf("clients paused for %s (%d pauses of at most %s, each renewing the last)", d, len(slices), StallSlice), nil
	case <-ctx.Done():
		c.Close() // the server drops the pauses still queued
		<-done
		return fmt.Sprintf("clients paused for %s of %s: the stall was ended early (%v), the server answering again within %s", time.Since(start).Round(time.Millisecond), d, context.Cause(ctx), StallSlice), nil
	}
}

// stallSlices splits d into pauses of at most StallSlice, in whole
// milliseconds (at least 1).
func stallSlices(d time.Duration) []int64 {
	total := max(d.Round(time.Millisecond).Milliseconds(), 1)
	slice := StallSlice.Milliseconds()
	var out []int64
	for ; total > slice; total -= slice {
		out = append(out, slice)
	}
	return append(out, total)
}
