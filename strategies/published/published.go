// Package published registers strategies that call published Go rate
// limiters through their own public APIs, unchanged: go-redis/redis_rate,
// ulule/limiter and throttled. Import it for its side effect:
//
//	import _ "github.com/rlbench/rlbench/strategies/published"
//
// They are written for go-redis, so they run on the go-redis adapter only
// (strategies.Info.Clients): the adapter hands them its *redis.Client or
// *redis.ClusterClient, and its hook shows their every command to the
// context's strategies.Tap, so --crash-rate reaches them between their
// round trips with no help from their code. Each library's keys land on
// the decision's key itself, so that the cell's audit and clean-up cover
// them and verify reads them where it reads every strategy's.
package published

import (
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

// GoRedisClients lists the one client the published strategies run on.
var GoRedisClients = []string{"go-redis"}

// ErrNeedsGoRedis is returned by a published strategy's Decide when the
// client is not go-redis. A run refuses such a cell before it starts.
var ErrNeedsGoRedis = errors.New("needs a go-redis client")

// goRedisClient is clients.GoRedisConn as the published strategies see it
// (a strategy imports no client): the go-redis adapter's client itself,
// found by a type assertion, as an http.Handler finds an http.Flusher.
// Other adapters have no such method.
type goRedisClient interface {
	GoRedis() redis.UniversalClient
}

// wrappedClient is a strategies.Client around another, which Unwrap
// returns (verify's counting client): goRedisOf looks through it, as
// http.ResponseController looks through a ResponseWriter's Unwrap.
type wrappedClient interface {
	Unwrap() strategies.Client
}

// goRedisOf returns c's go-redis client, or ErrNeedsGoRedis wrapped with
// the strategy's name.
func goRedisOf(name string, c strategies.Client) (redis.UniversalClient, error) {
	for c != nil {
		if g, ok := c.(goRedisClient); ok {
			return g.GoRedis(), nil
		}
		w, ok := c.(wrappedClient)
		if !ok {
			break
		}
		c = w.Unwrap()
	}
	return nil, fmt.Errorf("%s: %w", name, ErrNeedsGoRedis)
}

// perClient builds a library's limiter once per go-redis client (and, for
// a library whose prefix is fixed when it is built, once per prefix), on
// the first decision that needs it. Decisions after it read it without a
// lock.
type perClient[T any] struct {
	m  sync.Map // perClientKey -> T
	mu sync.Mutex
}

type perClientKey struct {
	rdb    redis.UniversalClient
	prefix string
}

// get returns the value for (rdb, prefix), building it with build the
// first time.
func (p *perClient[T]) get(rdb redis.UniversalClient, prefix string, build func() (T, error)) (T, error) {
	k := perClientKey{rdb, prefix}
	if v, ok := p.m.Load(k); ok {
		return v.(T), nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m.Load(k); ok {
		return v.(T), nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	p.m.Store(k, v)
	return v, nil
}

// rankDecision is the decision of a limiter that reports the requests it
// still has room for: Count is the request's rank, limit - remaining, when
// allowed, and limit + 1 when not (the limiter does not say by how much).
func rankDecision(allowed bool, limit, remaining int64) strategies.Decision {
	if !allowed {
		return strategies.Decision{Allowed: false, Count: limit + 1}
	}
	return strategies.Decision{Allowed: true, Count: limit - remaining}
}

// mustRegister registers i from init.
func mustRegister(i strategies.Info) {
	if err := strategies.Register(i); err != nil {
		panic("published: " + err.Error())
	}
}
