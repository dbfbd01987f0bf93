// Package serverinfo reads what a Redis-compatible server says of itself:
// the fields of an INFO reply, which server and version answers, and how
// versions compare. It imports nothing of rlbench's, so that the
// production paths (the pre-flight, the audit, redirections, saturation,
// verify) read INFO without the package that starts private servers.
package serverinfo

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Info describes a server, as reported by INFO server.
type Info struct {
	// Name is "redis" or "valkey" (a server reporting valkey_version).
	Name string
	// Version is the server's own version, for example "7.0.15"; for valkey
	// it is valkey_version.
	Version string
	// RedisVersion is the redis_version field as reported; valkey reports the
	// Redis version it is compatible with.
	RedisVersion string
}

// Parse reads an INFO reply into its fields: "name:value" lines, with
// the "# Section" headers and blank lines left out.
func Parse(text string) map[string]string {
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

// FromFields builds an Info from the fields of INFO server (Parse).
func FromFields(fields map[string]string) Info {
	info := Info{Name: "redis", Version: fields["redis_version"], RedisVersion: fields["redis_version"]}
	if v, ok := fields["valkey_version"]; ok {
		info.Name = "valkey"
		info.Version = v
	}
	return info
}

// Reader is the one method Read needs: every go-redis client has it.
type Reader interface {
	Info(ctx context.Context, sections ...string) *redis.StringCmd
}

// Read reads INFO server through a client the caller built (over TLS, as
// an ACL user, through Sentinel) and says what kind of server answers.
func Read(ctx context.Context, rdb Reader) (Info, error) {
	text, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return Info{}, fmt.Errorf("info server: %w", err)
	}
	return FromFields(Parse(text)), nil
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
