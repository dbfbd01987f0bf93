package main

import (
	"reflect"
	"testing"

	"github.com/rlbench/rlbench"
)

// TestParseTargetFlag checks how each target flag's value becomes a
// rlbench.TargetSpec, and which values are refused.
func TestParseTargetFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		kind    targetKind
		want    rlbench.TargetSpec
		wantErr bool
	}{
		{name: "addr", in: "127.0.0.1:6379", kind: targetAddr, want: rlbench.TargetSpec{Addr: "127.0.0.1:6379"}},
		{name: "labelled addr", in: "prod=10.0.0.1:6379", kind: targetAddr, want: rlbench.TargetSpec{Label: "prod", Addr: "10.0.0.1:6379"}},
		{name: "redis-server path with @", in: "/opt/redis@7/bin/redis-server", kind: targetRedisServer, want: rlbench.TargetSpec{RedisServer: "/opt/redis@7/bin/redis-server"}},
		{name: "labelled redis-server", in: "7.2=/usr/bin/redis-server", kind: targetRedisServer, want: rlbench.TargetSpec{Label: "7.2", RedisServer: "/usr/bin/redis-server"}},
		{name: "cluster nodes", in: "c=a:1,b:2", kind: targetCluster, want: rlbench.TargetSpec{Label: "c", Cluster: []string{"a:1", "b:2"}}},
		{name: "managed cluster", in: "3x1", kind: targetManagedCluster, want: rlbench.TargetSpec{ManagedCluster: "3x1"}},
		{name: "empty addr", in: "", kind: targetAddr, wantErr: true},
		{name: "empty after a label", in: "x=", kind: targetRedisServer, wantErr: true},
		{name: "empty cluster node", in: "a:1,", kind: targetCluster, wantErr: true},
		{name: "URL", in: "redis://h:1", kind: targetAddr, wantErr: true},
		{name: "credentials", in: "u:p@h:1", kind: targetAddr, wantErr: true},
		{name: "credentials in a cluster node", in: "a:1,u:p@h:1", kind: targetCluster, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseTargetFlag(tc.in, tc.kind)
			if (err != nil) != tc.wantErr || !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseTargetFlag(%q, %d) = (%+v, %v); want (%+v, error: %t)", tc.in, tc.kind, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
