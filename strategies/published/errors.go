package published

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

// wrap names the operation and turns a server error reply into
// strategies.ReplyError, as the adapters do, so that reports classify the
// libraries' errors like every other strategy's. Other errors (a simulated
// crash, a network error) are wrapped as they are.
func wrap(op string, err error) error {
	if re, ok := errors.AsType[redis.Error](err); ok && err != redis.Nil {
		return fmt.Errorf("%s: %w", op, strategies.ReplyError(re.Error()))
	}
	return fmt.Errorf("%s: %w", op, err)
}
