package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/serverinfo"
)

// Probe connects to the server at addr with password (may be empty) and
// database db, PINGs it and reads INFO server. Errors name the address, for
// example "connect to 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection
// refused".
func Probe(ctx context.Context, addr, password string, db int) (serverinfo.Info, error) {
	fields, err := infoServer(ctx, addr, password, db)
	if err != nil {
		return serverinfo.Info{}, err
	}
	return serverinfo.FromFields(fields), nil
}

// infoServer PINGs addr and returns the fields of INFO server.
func infoServer(ctx context.Context, addr, password string, db int) (map[string]string, error) {
	// A plain TCP dial first, so that an unreachable address fails at once
	// with the dial error, without go-redis's dial retries and their log lines.
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	conn.Close()
	rdb := connection.Admin{Settings: connection.Settings{Password: password, DB: db}, PoolSize: 1, FailFast: true}.PlainClient(addr)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		if isAuthError(err) {
			return nil, fmt.Errorf("connect to %s: %w: the server said %q", addr, ErrAuth, excerpt.Text(err.Error()))
		}
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	text, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, fmt.Errorf("info server on %s: %w", addr, err)
	}
	return serverinfo.Parse(text), nil
}

// ErrAuth is returned, wrapped, when a server refused the password or the
// user: the address is right, the credentials are not.
var ErrAuth = errors.New("authentication failed")

// isAuthError reports whether err is a server's refusal of the credentials
// (or of their absence).
func isAuthError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"WRONGPASS", "NOAUTH", "invalid password", "invalid username-password", "without any password configured"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
