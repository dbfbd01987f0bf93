package main

import "github.com/rlbench/rlbench"

// runFlags names the flag that sets each rlbench.Config field, for the
// library's *rlbench.UsageError, which names the field.
var runFlags = map[string]string{
	"Strategies":              "--strategy",
	"Clients":                 "--client",
	"Limit":                   "--limit",
	"Window":                  "--window",
	"Fields":                  "--fields",
	"Targets.Login.DB":        "--db",
	"Targets.Login.Username":  "--user",
	"Connection":              "",
	"PrivateTLS":              "--private-tls",
	"Targets.Sentinel":        "--sentinel",
	"Targets.ManagedSentinel": "--managed-sentinel",
	"OnError":                 "--on-error",
	"FlushDelay":              "--rueidis-flush-delay",
	"Retries":                 "--retries",
	"Connections":             "--connections",
	"DialTimeout":             "--dial-timeout",
	"ReadTimeout":             "--read-timeout",
	"WriteTimeout":            "--write-timeout",
	"AuditEvery":              "--audit-every",
	"Warmup":                  "--warmup",
	"ScriptTimeout":           "--script-timeout",
	"Faults":                  "--fault",
	"MinReplicas":             "--min-replicas",
	"MinReplicasMaxLag":       "--min-replicas-max-lag",
	"StartAt":                 "--start-at",
	"AllowServerWideFaults":   "--allow-server-wide-faults",
	"Targets.Addr":            "--addr",
	"Targets.URL":             "--url",
	"Targets.RedisServer":     "--redis-server",
	"Targets.Cluster":         "--cluster",
	"Targets.ManagedCluster":  "--managed-cluster",
	"Workload.Workers":        "--workers",
	"Workload.Keys":           "--keys",
	"Workload.KeyDist":        "--key-dist",
	"Workload.Requests":       "--requests",
	"Workload.Prefix":         "--prefix",
	"Workload.CrashRate":      "--crash-rate",
	"Workload.RacePause":      "--race-pause",
	"Workload.Rate":           "--rate",
	"Workload.Stages":         "--stages",
	"Workload.Duration":       "--duration",
}

// verifyFlags names the flag that sets each verify.Config field.
var verifyFlags = map[string]string{
	"Strategies":             "--strategy",
	"Clients":                "--client",
	"Limit":                  "--limit",
	"Window":                 "--window",
	"Workers":                "--workers",
	"Prefix":                 "--prefix",
	"ScriptTimeout":          "--script-timeout",
	"Connection":             "",
	"Target.Addr":            "--addr",
	"Target.RedisServer":     "--redis-server",
	"Target.Login.Username":  "--user",
	"Target.Login.DB":        "--db",
	"Target.Login.TLS":       "--tls",
	"Target.Cluster":         "--cluster",
	"Target.ManagedCluster":  "--managed-cluster",
	"Target.Sentinel":        "--sentinel",
	"Target.ManagedSentinel": "--managed-sentinel",
}

// usageMessage says what a *rlbench.UsageError says, with the flag that
// sets the field at fault in place of the field's name, as flags maps it.
func usageMessage(err *rlbench.UsageError, flags map[string]string) string {
	flag, ok := flags[err.Field]
	switch {
	case !ok:
		flag = err.Field
	case flag == "":
		// The error names its flag itself (connection.CheckError).
		return err.Err.Error()
	}
	return flag + ": " + err.Err.Error()
}
