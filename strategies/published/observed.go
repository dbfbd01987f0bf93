package published

// Observed gives, for each published strategy, the round trips its
// decisions were seen to send, as --list-strategies prints them. It is not
// written by hand: TestObservedCommands records them with a strategies.Tap
// on a private server and fails when they differ (go test -run
// TestObservedCommands -update rewrites this table).
var Observed = map[string]string{
	"redis_rate": "EVALSHA",
	"throttled":  "TIME+GET; SET NX; EXPIRE | TIME+GET; EVAL | TIME+GET",
	"ulule":      "EVALSHA",
}
