package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/excerpt"
)

// Probe connects to the server at addr with password (may be empty) and
// database db, PINGs it and reads INFO server. Errors name the address, for
// example "connect to 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection
// refused".
func Probe(ctx context.Context, addr, password string, db int) (Info, error) {
	fields, err := infoServer(ctx, addr, password, db)
	if err != nil {
		return Info{}, err
	}
	return infoFromFields(fields), nil
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
	return ParseInfo(text), nil
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

// ParseInfo reads an INFO reply into its fields: "name:value" lines, with
// the "# Section" headers and blank lines left out.
func ParseInfo(text string) map[string]string {
	fields := make(map[string]string)
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// infoFromFields builds an Info from INFO server fields.
func infoFromFields(fields map[string]string) Info {
	info := Info{Name: "redis", Version: fields["redis_version"], RedisVersion: fields["redis_version"]}
	if v, ok := fields["valkey_version"]; ok {
		info.Name = "valkey"
		info.Version = v
	}
	return info
}

// VersionAtLeast reports whether the dotted version have is at least want,
// comparing part by part as numbers: VersionAtLeast("7.0.15", "7.0.0") is
// true, VersionAtLeast("6.2.16", "7.0.0") is false. Missing parts count as 0,
// a leading "v" and anything after a part's leading digits (as in "7.2.0-rc1")
// are ignored.
func VersionAtLeast(have, want string) bool {
	h, w := versionParts(have), versionParts(want)
	for i := 0; i < max(len(h), len(w)); i++ {
		var a, b int
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return a > b
		}
	}
	return true
}

// versionParts returns the numeric value of each dot-separated part of v.
func versionParts(v string) []int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ".")
	nums := make([]int, len(parts))
	for i, part := range parts {
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(part[:end])
		if err != nil {
			n = 0 // no digits, or too many: treat as 0
		}
		nums[i] = n
		if end < len(part) {
			// A suffix such as "-rc1" ends the comparable version.
			return nums[:i+1]
		}
	}
	return nums
}
