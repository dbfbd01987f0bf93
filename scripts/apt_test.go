// Package scripts holds the tests of the shell scripts beside them.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// aptState makes a private apt state under dir: package lists and cache
// of its own, no sources, and a copy of the system's dpkg status. An update
// then fetches nothing and the install of a package that is installed
// changes nothing, but both take apt's locks, at paths under dir. It
// returns the APT_CONFIG file.
func aptState(t *testing.T, dir string) string {
	t.Helper()
	status, err := os.ReadFile("/var/lib/dpkg/status")
	if err != nil {
		t.Skipf("no dpkg status: %v", err)
	}
	for _, d := range []string{"lists/partial", "dpkg/updates", "cache/archives/partial", "sources.list.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"dpkg/status": string(status), "dpkg/lock": "", "dpkg/lock-frontend": "", "lists/lock": "", "sources.list": "",
		"apt.conf": `Dir::State::Lists "` + dir + `/lists";
Dir::State::status "` + dir + `/dpkg/status";
Dir::Cache "` + dir + `/cache";
Dir::Etc::sourcelist "` + dir + `/sources.list";
Dir::Etc::sourceparts "` + dir + `/sources.list.d";
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "apt.conf")
}

// holdLock takes the write lock that apt takes (fcntl) on path, as another
// apt-get would; the returned func releases it.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatalf("lock %s: %v", path, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(release)
	return release
}

// watchedOutput collects a command's output and closes seen once it holds
// want.
type watchedOutput struct {
	want string
	seen chan struct{}
	mu   sync.Mutex
	text strings.Builder
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.text.String(), w.want)
	w.text.Write(p)
	if !had && strings.Contains(w.text.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}

// TestAptInstallWaitsForTheLocks is issue 22, item 17: scripts/rlbench.sh
// failed in 3 s when another process held the dpkg lock. apt_install
// (ensure-redis.sh) waits while another process holds the lock of the
// package lists (the update) or dpkg's (the install), and succeeds once it
// is released.
func TestAptInstallWaitsForTheLocks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("apt-get install needs root")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get")
	}
	tests := []struct {
		name, lock string
		waiting    string // on stderr once it waits
	}{
		{"update", "lists/lock", "apt-get update: waiting"},
		{"install", "dpkg/lock-frontend", "Waiting for cache lock"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			conf := aptState(t, dir)
			release := holdLock(t, filepath.Join(dir, tc.lock))
			cmd := exec.Command("bash", "-c", ". ./ensure-redis.sh && apt_install bash")
			cmd.Env = append(os.Environ(), "APT_CONFIG="+conf, "RLBENCH_APT_LOCK_TIMEOUT=120")
			out := &watchedOutput{want: tc.waiting, seen: make(chan struct{})}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-out.seen:
			case err := <-done:
				t.Fatalf("apt_install with %s held ended (%v) without waiting for it; output:\n%s", tc.lock, err, out)
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("apt_install did not say %q within 60 s; output:\n%s", tc.waiting, out)
			}
			release()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("apt_install after %s was released: %v; output:\n%s", tc.lock, err, out)
				}
			case <-time.After(120 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("apt_install did not end within 120 s of the release of %s", tc.lock)
			}
		})
	}
}
