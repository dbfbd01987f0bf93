package main

import "github.com/rlbench/rlbench"

// runFlags names the flag that sets each rlbench.Config field, for the
// library's *rlbench.UsageError, which names the field.
var runFlags = map[string]string{
	"Strategies":             "--strategy",
	"Clients":                "--client",
	"Limit":                  "--limit",
	"Window":                 "--window",
	"DB":                     "--db",
	"Password":               "--password",
	"OnError":                "--on-error",
	"FlushDelay":             "--rueidis-flush-delay",
	"AuditEvery":             "--audit-every",
	"Warmup":                 "--warmup",
	"Faults":                 "--fault",
	"Scripts":                "--script",
	"Functions":              "--function",
	"Targets.Addr":           "--addr",
	"Targets.RedisServer":    "--redis-server",
	"Targets.Cluster":        "--cluster",
	"Targets.ManagedCluster": "--managed-cluster",
	"Workload.Clients":       "--clients",
	"Workload.Keys":          "--keys",
	"Workload.KeyDist":       "--key-dist",
	"Workload.Requests":      "--requests",
	"Workload.Prefix":        "--prefix",
	"Workload.CrashRate":     "--crash-rate",
	"Workload.RacePause":     "--race-pause",
	"Workload.Rate":          "--rate",
	"Workload.Duration":      "--duration",
}

// verifyFlags names the flag that sets each verify.Config field.
var verifyFlags = map[string]string{
	"Strategies":  "--strategy",
	"Clients":     "--client",
	"Limit":       "--limit",
	"Window":      "--window",
	"Workers":     "--workers",
	"Addr":        "--addr",
	"DB":          "--db",
	"RedisServer": "--redis-server",
}

// usageMessage says what a *rlbench.UsageError says, with the flag that
// sets the field at fault in place of the field's name, as flags maps it.
func usageMessage(err *rlbench.UsageError, flags map[string]string) string {
	flag, ok := flags[err.Field]
	if !ok {
		flag = err.Field
	}
	return flag + ": " + err.Err.Error()
}
