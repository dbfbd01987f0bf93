package serverinfo

import "testing"

func TestParseValkey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Info
	}{
		{
			name: "redis",
			text: "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n",
			want: Info{Name: "redis", Version: "7.0.15", RedisVersion: "7.0.15"},
		},
		{
			name: "valkey reports its own version and a compat redis_version",
			text: "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n",
			want: Info{Name: "valkey", Version: "8.0.1", RedisVersion: "7.2.4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := FromFields(Parse(tc.text)); got != tc.want {
				t.Errorf("FromFields(Parse(%q)) = %+v; want %+v", tc.text, got, tc.want)
			}
		})
	}
}

func TestVersionAtLeast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		have, want string
		ok         bool
	}{
		{name: "newer patch", have: "7.0.15", want: "7.0.0", ok: true},
		{name: "older major", have: "6.2.16", want: "7.0.0", ok: false},
		{name: "equal", have: "7.0.0", want: "7.0.0", ok: true},
		{name: "numeric not lexical", have: "7.10.0", want: "7.9.0", ok: true},
		{name: "numeric not lexical, reversed", have: "7.9.0", want: "7.10.0", ok: false},
		{name: "missing parts count as zero", have: "7", want: "7.0.0", ok: true},
		{name: "missing parts in want", have: "7.0.1", want: "7", ok: true},
		{name: "missing part below want", have: "7.0", want: "7.0.1", ok: false},
		{name: "suffix ignored", have: "7.2.0-rc1", want: "7.2.0", ok: true},
		{name: "suffix ignored, still older", have: "7.1.9-rc3", want: "7.2", ok: false},
		{name: "leading v", have: "v8.0.1", want: "8.0.0", ok: true},
		{name: "empty have", have: "", want: "1.0", ok: false},
		{name: "empty want", have: "1.0", want: "", ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := VersionAtLeast(tc.have, tc.want); got != tc.ok {
				t.Errorf("VersionAtLeast(%q, %q) = %t; want %t", tc.have, tc.want, got, tc.ok)
			}
		})
	}
}
