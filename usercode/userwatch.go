package usercode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// userCheckEvery is how often the guard checks, on every master, that its
// temporary user is still there as it made it. Each of the cell's
// connections that the server closes is dialled again at once and refused
// (WRONGPASS) once the user is gone: the check bounds that loop to about
// this long, where the load would otherwise spin on it to its end.
const userCheckEvery = 200 * time.Millisecond

// ErrUserLost is returned, wrapped, when the cell's temporary ACL user was
// deleted, disabled or given another password during the cell (by another
// client: ACL DELUSER, ACL SETUSER ... off): the cell's clients can no
// longer log in, and what ran after it ran unconfined by it. The cell's
// load stops there, and the cell fails.
var ErrUserLost = errors.New("the temporary ACL user was lost during the cell")

// userWatch checks the temporary user every userCheckEvery until stop.
type userWatch struct {
	stopOnce sync.Once
	stopped  chan struct{}
	done     context.CancelFunc // ends a check under way at stop
	// cancel stops the cell's load: with ErrUserLost, or at stop, once the
	// load is over.
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

// watchUser starts the check of g's temporary user on every master (none
// without a user); a user found lost stops the cell's load (cancel) and is
// the watch's error.
func (g *Guard) watchUser(cancel context.CancelCauseFunc) *userWatch {
	ctx, done := context.WithCancel(context.Background())
	w := &userWatch{stopped: make(chan struct{}), done: done, cancel: cancel}
	if g.user == "" {
		return w
	}
	sum := sha256.Sum256([]byte(g.password))
	password := hex.EncodeToString(sum[:])
	w.wg.Go(func() {
		tick := time.NewTicker(userCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-w.stopped:
				return
			case <-tick.C:
			}
			for _, n := range g.nodes {
				what, err := userLost(ctx, n, g.user, password)
				if err != nil || what == "" {
					continue // a check that fails says nothing of the user
				}
				lost := fmt.Errorf("%w: %s on %s (ACL GETUSER): the cell's connections can no longer log in (WRONGPASS), and what ran after it ran without its confinement; the cell's load stopped there", ErrUserLost, what, n.Options().Addr)
				w.mu.Lock()
				if w.err == nil {
					w.err = lost
				}
				w.mu.Unlock()
				cancel(lost)
				return
			}
		}
	})
	return w
}

// userLost says how the user is no longer as the guard made it on n:
// deleted, disabled, or without its password; "" when it is.
func userLost(ctx context.Context, n *redis.Client, user, passwordHash string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply, err := n.Do(ctx, "ACL", "GETUSER", user).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "deleted", nil
	case err != nil:
		return "", err
	}
	fields := map[string]any{}
	switch r := reply.(type) {
	case map[any]any: // RESP3
		for k, v := range r {
			fields[fmt.Sprint(k)] = v
		}
	case []any: // RESP2: name, value, ...
		for i := 0; i+1 < len(r); i += 2 {
			fields[fmt.Sprint(r[i])] = r[i+1]
		}
	default:
		return "", fmt.Errorf("acl getuser: unexpected reply %T", reply)
	}
	if !slices.Contains(words(fields["flags"]), "on") {
		return "disabled", nil
	}
	if !slices.Contains(words(fields["passwords"]), passwordHash) {
		return "given another password", nil
	}
	return "", nil
}

// words is a reply's array (or set) of strings.
func words(v any) []string {
	var out []string
	switch l := v.(type) {
	case []any:
		for _, x := range l {
			out = append(out, strings.ToLower(fmt.Sprint(x)))
		}
	case map[any]bool: // a RESP3 set, as go-redis may read it
		for x := range l {
			out = append(out, strings.ToLower(fmt.Sprint(x)))
		}
	}
	return out
}

// stop ends the watch and returns its error: nil unless the user was lost.
func (w *userWatch) stop() error {
	if w == nil {
		return nil
	}
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.done()
		w.wg.Wait()
		w.cancel(nil)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
