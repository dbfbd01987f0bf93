package redisserver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dirPrefix starts the name of every private server's temporary directory:
// "rlbench-redis-PID-RANDOM", PID being the process that started it.
const dirPrefix = "rlbench-redis-"

// RemoveStaleDirs removes the temporary directories of private servers
// whose starting process no longer runs: a process killed with SIGKILL
// cannot Close its servers (which Pdeathsig stops), and leaves their
// directories behind. Directories of running processes, of other users,
// and those named otherwise are left alone. It returns the directories it
// removed.
func RemoveStaleDirs() []string {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*-*"))
	var removed []string
	for _, dir := range matches {
		pid, ok := dirOwner(filepath.Base(dir))
		if !ok || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// dirOwner reads the process id in a directory name "rlbench-redis-PID-RANDOM".
func dirOwner(name string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, dirPrefix)
	if !ok {
		return 0, false
	}
	pidText, random, ok := strings.Cut(rest, "-")
	if !ok || random == "" {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}
