package clients

import (
	"context"
	"crypto/tls"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
)

// TestPipelinedOptionFields checks that every field of pipelinedOption and
// pipelinedSentinel reaches rueidis' and valkey-go's ClientOption under its
// name (setFields), each with its value: a field renamed or retyped in
// either client panics here rather than in a run.
func TestPipelinedOptionFields(t *testing.T) {
	t.Parallel()
	dial := func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) { return nil, nil }
	opt := pipelinedOption{
		InitAddress: []string{"a:1", "b:2"}, Username: "u", Password: "p", TLSConfig: &tls.Config{ServerName: "s"},
		SelectDB: 3, ClientName: "n", DisableCache: true, DisableAutoPipelining: true, AlwaysPipelining: true,
		PipelineMultiplex: 4, RingScaleEachConn: 12, MaxFlushDelay: time.Millisecond, DisableRetry: true,
		ConnWriteTimeout: time.Second, Dialer: net.Dialer{Timeout: time.Minute}, ForceSingleClient: true, DialCtxFn: dial,
	}
	sentinel := pipelinedSentinel{MasterSet: "m", Username: "su", Password: "sp", TLSConfig: &tls.Config{ServerName: "t"}}
	var r rueidis.ClientOption
	setFields(&r, opt)
	setFields(&r.Sentinel, sentinel)
	var v valkey.ClientOption
	setFields(&v, opt)
	setFields(&v.Sentinel, sentinel)
	for _, tc := range []struct {
		name     string
		opt, sen reflect.Value
	}{
		{"rueidis", reflect.ValueOf(r), reflect.ValueOf(r.Sentinel)},
		{"valkey-go", reflect.ValueOf(v), reflect.ValueOf(v.Sentinel)},
	} {
		for _, src := range []reflect.Value{reflect.ValueOf(opt), reflect.ValueOf(sentinel)} {
			dst := tc.opt
			if src.Type() == reflect.TypeFor[pipelinedSentinel]() {
				dst = tc.sen
			}
			for i := range src.NumField() {
				name := src.Type().Field(i).Name
				got, want := dst.FieldByName(name), src.Field(i)
				if got.Kind() == reflect.Func {
					if got.Pointer() != want.Pointer() {
						t.Errorf("%s: %s.%s is not the function set", tc.name, dst.Type().Name(), name)
					}
					continue
				}
				if !reflect.DeepEqual(got.Interface(), want.Interface()) {
					t.Errorf("%s: %s.%s = %v; want %v", tc.name, dst.Type().Name(), name, got, want)
				}
			}
		}
	}
}
