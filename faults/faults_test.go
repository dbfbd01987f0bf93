package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want faults.Fault
		err  bool
	}{
		{"script flush", "script-flush@10s", faults.Fault{Kind: faults.ScriptFlush, At: 10 * time.Second}, false},
		{"restart", "restart@1m", faults.Fault{Kind: faults.Restart, At: time.Minute}, false},
		{"stall", "stall@10s:500ms", faults.Fault{Kind: faults.Stall, At: 10 * time.Second, Arg: 500 * time.Millisecond}, false},
		{"kill clients at 0", "kill-clients@0s", faults.Fault{Kind: faults.KillClients}, false},
		{"reshard", "reshard@2s", faults.Fault{Kind: faults.Reshard, At: 2 * time.Second}, false},
		{"reshard with a hold", "reshard@2s:1s", faults.Fault{Kind: faults.Reshard, At: 2 * time.Second, Arg: time.Second}, false},
		{"reshard with a bad hold", "reshard@2s:soon", faults.Fault{}, true},
		{"no time", "restart", faults.Fault{}, true},
		{"bad time", "restart@soon", faults.Fault{}, true},
		{"negative time", "restart@-1s", faults.Fault{}, true},
		{"stall without length", "stall@1s", faults.Fault{}, true},
		{"stall too short", "stall@1s:10us", faults.Fault{}, true},
		{"argument on restart", "restart@1s:2s", faults.Fault{}, true},
		{"unknown kind", "meteor@1s", faults.Fault{}, true},
		{"latency", "latency@1s:2s:50", faults.Fault{Kind: faults.Latency, At: time.Second, Arg: 2 * time.Second, LatencyMS: 50}, false},
		{"latency with jitter", "latency@1s:2s:50~10", faults.Fault{Kind: faults.Latency, At: time.Second, Arg: 2 * time.Second, LatencyMS: 50, JitterMS: 10}, false},
		{"reply loss", "reply-loss@1s:2s:0.05", faults.Fault{Kind: faults.ReplyLoss, At: time.Second, Arg: 2 * time.Second, P: 0.05}, false},
		{"partition", "partition@1s:2s", faults.Fault{Kind: faults.Partition, At: time.Second, Arg: 2 * time.Second}, false},
		{"reset", "reset@1s", faults.Fault{Kind: faults.Reset, At: time.Second}, false},
		{"latency without ms", "latency@1s:2s", faults.Fault{}, true},
		{"latency without length", "latency@1s", faults.Fault{}, true},
		{"latency in a duration", "latency@1s:2s:50ms", faults.Fault{}, true},
		{"latency jitter above it", "latency@1s:2s:50~60", faults.Fault{}, true},
		{"latency of 0", "latency@1s:2s:0", faults.Fault{}, true},
		{"reply loss above 1", "reply-loss@1s:2s:1.5", faults.Fault{}, true},
		{"reply loss of 0", "reply-loss@1s:2s:0", faults.Fault{}, true},
		{"reply loss without p", "reply-loss@1s:2s", faults.Fault{}, true},
		{"partition with more", "partition@1s:2s:3", faults.Fault{}, true},
		{"partition too short", "partition@1s:10us", faults.Fault{}, true},
		{"reset with an argument", "reset@1s:2s", faults.Fault{}, true},
		{"split brain", "split-brain@2s:5s", faults.Fault{Kind: faults.SplitBrain, At: 2 * time.Second, Arg: 5 * time.Second}, false},
		{"split brain without length", "split-brain@2s", faults.Fault{}, true},
		{"split brain too short", "split-brain@2s:500ms", faults.Fault{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := faults.Parse(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v, error %t", tc.in, got, err, tc.want, tc.err)
			}
			if err == nil && got.String() != tc.in && tc.name != "restart" && tc.name != "kill clients at 0" {
				t.Errorf("Parse(%q).String() = %q; want the input back", tc.in, got.String())
			}
		})
	}
	if _, err := faults.Parse("meteor@1s"); err == nil || !strings.Contains(err.Error(), "kill-clients") {
		t.Errorf("Parse(unknown kind) error = %v; want it to list the accepted kinds", err)
	}
}

// TestInject checks each fault's effect on a real server.
func TestInject(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	ctx := context.Background()

	t.Run("script-flush", func(t *testing.T) {
		sha, err := admin.ScriptLoad(ctx, "return 1").Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := faults.Inject(ctx, faults.Fault{Kind: faults.ScriptFlush}, faults.Subject{Admin: admin, Capabilities: private}); err != nil {
			t.Fatalf("Inject(script-flush) error: %v", err)
		}
		if ok := admin.ScriptExists(ctx, sha).Val(); len(ok) != 1 || ok[0] {
			t.Errorf("SCRIPT EXISTS after script-flush = %v; want [false]", ok)
		}
	})

	t.Run("kill-clients kills only the named", func(t *testing.T) {
		named := redis.NewClient(&redis.Options{Addr: srv.Addr(), ClientName: "rlbench-victim", PoolSize: 1})
		defer named.Close()
		other := redis.NewClient(&redis.Options{Addr: srv.Addr(), ClientName: "bystander", PoolSize: 1})
		defer other.Close()
		namedID, otherID := named.ClientID(ctx).Val(), other.ClientID(ctx).Val()
		if namedID == 0 || otherID == 0 {
			t.Fatal("CLIENT ID failed")
		}
		detail, err := faults.Inject(ctx, faults.Fault{Kind: faults.KillClients}, faults.Subject{Admin: admin, ClientName: "rlbench-victim", Capabilities: private})
		if err != nil || detail != "killed 1 connections" {
			t.Errorf("Inject(kill-clients) = %q, %v; want \"killed 1 connections\"", detail, err)
		}
		// go-redis notices the closed connection and dials a new one.
		if id := named.ClientID(ctx).Val(); id == namedID {
			t.Errorf("named client's CLIENT ID after kill-clients = %d; want a new connection", id)
		}
		if id := other.ClientID(ctx).Val(); id != otherID {
			t.Errorf("bystander's CLIENT ID after kill-clients = %d; want %d (untouched)", id, otherID)
		}
	})

	t.Run("stall", func(t *testing.T) {
		if _, err := faults.Inject(ctx, faults.Fault{Kind: faults.Stall, Arg: 300 * time.Millisecond}, faults.Subject{Admin: admin, Capabilities: private}); err != nil {
			t.Fatalf("Inject(stall) error: %v", err)
		}
		start := time.Now()
		if err := admin.Incr(ctx, redistest.Prefix(t)+"k").Err(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("INCR during a 300ms stall took %v; want it held back", d)
		}
	})

	t.Run("restart without a private server", func(t *testing.T) {
		_, err := faults.Inject(ctx, faults.Fault{Kind: faults.Restart}, faults.Subject{Admin: admin})
		if err == nil || !strings.Contains(err.Error(), "private server") {
			t.Errorf("Inject(restart) with no Restart = %v; want an error naming the private server", err)
		}
	})
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	ctx := context.Background()
	restarts := 0
	target := faults.Subject{Admin: admin, Capabilities: faults.Capabilities{Private: true}, Restart: func(ctx context.Context) error {
		restarts++
		return srv.Restart(ctx)
	}}
	stop := faults.Schedule(ctx, []faults.Fault{
		{Kind: faults.Restart, At: 100 * time.Millisecond},
		{Kind: faults.ScriptFlush, At: 20 * time.Millisecond},
		{Kind: faults.ScriptFlush, At: time.Hour}, // never due: cancelled by stop
	}, target)
	time.Sleep(600 * time.Millisecond)
	events := stop()
	if len(events) != 2 {
		t.Fatalf("Schedule gave %d events; want 2 (the third is not due): %+v", len(events), events)
	}
	if events[0].Fault != "script-flush@20ms" || events[1].Fault != "restart@100ms" {
		t.Errorf("events = %+v; want script-flush then restart, in time order", events)
	}
	for _, e := range events {
		if e.Error != "" {
			t.Errorf("event %s error = %s; want none", e.Fault, e.Error)
		}
	}
	if restarts != 1 {
		t.Errorf("restarts = %d; want 1", restarts)
	}
	// The first command after the restart may meet the dropped connection;
	// go-redis retries it on a new one.
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after restart = %v; want the server back", err)
	}
}

func TestEventKind(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"restart@2s", "stall@1s:500ms", "failover@1s", "reshard@2s:1s", "kill-clients@3s"} {
		p, err := faults.Parse(f)
		if err != nil {
			t.Fatalf("Parse(%q) error = %v", f, err)
		}
		if got, want := (faults.Event{Fault: p.String()}).Kind(), p.Kind; got != want {
			t.Errorf("Event{Fault: %q}.Kind() = %q; want %q", p.String(), got, want)
		}
	}
}

// private is the capabilities of a server the test started itself.
var private = faults.Capabilities{Private: true}

func TestCheck(t *testing.T) {
	t.Parallel()
	existing := faults.Capabilities{}
	consent := faults.Capabilities{ServerWideConsent: true}
	cluster := faults.Capabilities{Cluster: true}
	managed := faults.Capabilities{Cluster: true, Private: true}
	replicas := faults.Capabilities{Cluster: true, Private: true, Replicas: true}
	tests := []struct {
		fault string
		caps  faults.Capabilities
		want  string // a part of the error; "" for none
	}{
		{"script-flush@1s", private, ""},
		{"script-flush@1s", existing, "--allow-server-wide-faults"}, // another tenant's scripts
		{"script-flush@1s", consent, ""},
		{"stall@1s:10ms", existing, "acts on the whole server"}, // every client waits
		{"stall@1s:10ms", consent, ""},
		{"kill-clients@1s", existing, ""}, // only the run's own connections
		{"restart@1s", existing, "needs private servers"},
		{"restart@1s", consent, "needs private servers"}, // consent is for server-wide faults only
		{"restart@1s", private, ""},
		{"stall@1s:10ms", managed, "only failover and reshard are supported on a cluster"},
		{"failover@1s", cluster, "needs a private cluster with replicas"},
		{"failover@1s", managed, "needs a private cluster with replicas"},
		{"failover@1s", replicas, ""},
		{"reshard@1s", cluster, "needs a private cluster (--managed-cluster N)"},
		{"reshard@1s", managed, ""},
		{"reply-loss@1s:1s:0.1", existing, ""}, // the run's own connections only
		{"partition@1s:1s", private, ""},
		{"reset@1s", managed, "needs a single server"},
		{"latency@1s:1s:5", faults.Capabilities{Sentinel: true, Private: true, Replicas: true}, "needs a single server"},
		{"split-brain@1s:2s", private, "needs a private Sentinel set-up with replicas"},
		{"split-brain@1s:2s", replicas, "only failover and reshard are supported on a cluster"},
		{"split-brain@1s:2s", faults.Capabilities{Sentinel: true, Replicas: true}, "needs a private Sentinel set-up"}, // --sentinel: not rlbench's
		{"split-brain@1s:2s", faults.Capabilities{Sentinel: true, Private: true}, "R >= 1"},
		{"split-brain@1s:2s", faults.Capabilities{Sentinel: true, Private: true, Replicas: true}, ""},
	}
	for _, tc := range tests {
		f, err := faults.Parse(tc.fault)
		if err != nil {
			t.Fatal(err)
		}
		err = faults.Check(f, tc.caps)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%s, %+v) = %v; want nil", tc.fault, tc.caps, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%s, %+v) = %v; want an error containing %q", tc.fault, tc.caps, err, tc.want)
		}
	}
}

// TestServerWideFaultSaysWhom checks that a server-wide fault on a server
// rlbench did not start is refused without consent, and with it names the
// server in what it did.
func TestServerWideFaultSaysWhom(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	ctx := context.Background()
	flush := faults.Fault{Kind: faults.ScriptFlush}
	sha, err := admin.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := faults.Inject(ctx, flush, faults.Subject{Admin: admin, Server: srv.Addr()}); err == nil {
		t.Fatal("Inject(script-flush) on a server rlbench did not start, without consent = nil error; want a refusal")
	}
	if ok := admin.ScriptExists(ctx, sha).Val(); len(ok) != 1 || !ok[0] {
		t.Fatalf("SCRIPT EXISTS after a refused script-flush = %v; want [true] (untouched)", ok)
	}
	detail, err := faults.Inject(ctx, flush, faults.Subject{Admin: admin, Server: srv.Addr(), Capabilities: faults.Capabilities{ServerWideConsent: true}})
	if err != nil || !strings.Contains(detail, "every client of "+srv.Addr()) {
		t.Errorf("Inject(script-flush) with consent = %q, %v; want a detail naming %s", detail, err, srv.Addr())
	}
}

// TestStallSlices checks that a stall of 2.5 s is three pauses, renewed
// one after another with no command between them: a client that PINGs in
// a loop gets no answer until the whole stall has passed.
func TestStallSlices(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redistest.Client(t, srv)
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: -1, MaxRetries: -1, PoolSize: 1})
	defer probe.Close()
	const d = 2500 * time.Millisecond
	start := time.Now()
	detail, err := faults.Inject(t.Context(), faults.Fault{Kind: faults.Stall, Arg: d}, faults.Subject{Admin: admin, Capabilities: private})
	if err != nil {
		t.Fatalf("Inject(stall %s) error: %v", d, err)
	}
	if want := "clients paused for 2.5s (3 pauses"; !strings.HasPrefix(detail, want) {
		t.Errorf("Inject(stall %s) = %q; want it to start %q", d, detail, want)
	}
	if err := probe.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if answered := time.Since(start); answered < d-100*time.Millisecond {
		t.Errorf("a PING during a %s stall was answered %s after it began; want the whole stall held (no gap between its slices)", d, answered)
	}
}
