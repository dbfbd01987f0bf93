module github.com/rlbench/rlbench

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/RoaringBitmap/roaring/v2 v2.30.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/gomodule/redigo v1.9.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/spf13/pflag v1.1.0
	github.com/throttled/throttled/v2 v2.15.0
	github.com/ulule/limiter/v3 v3.11.2
	github.com/valkey-io/valkey-go v1.0.80
	github.com/yuin/gopher-lua v1.1.2
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
