package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// stage is one FROM of a Dockerfile and the instructions after it.
type stage struct {
	from         string
	instructions []string // "RUN ...", "USER ...", joined across line continuations
}

// readDockerfile splits the Dockerfile at path into its stages.
func readDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keyword, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(keyword) {
		case "FROM":
			stages = append(stages, stage{from: strings.Fields(rest)[0]})
		default:
			if len(stages) == 0 {
				t.Fatalf("%s: %q before the first FROM", path, line)
			}
			s := &stages[len(stages)-1]
			s.instructions = append(s.instructions, strings.ToUpper(keyword)+" "+strings.TrimSpace(rest))
		}
	}
	return stages
}

// last returns the stage's last instruction of keyword, without it; "" if none.
func (s stage) last(keyword string) string {
	out := ""
	for _, in := range s.instructions {
		if k, rest, _ := strings.Cut(in, " "); k == keyword {
			out = rest
		}
	}
	return out
}

// TestDockerfile checks the image the docs describe (docs/output.md, "On
// Kubernetes"): a static binary, built by the Dockerfile's own command and
// checked as an ELF file; run as a user that is not root; on a base with
// the shell that deploy/kubernetes/merge.yaml's step runs in.
func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages; want a build stage and a runtime stage", len(stages))
	}
	final := stages[len(stages)-1]
	t.Run("non-root user", func(t *testing.T) {
		user := final.last("USER")
		name, _, _ := strings.Cut(user, ":")
		if user == "" || name == "0" || name == "root" {
			t.Errorf("final stage USER = %q; want a user that is not root", user)
		}
	})
	t.Run("entrypoint", func(t *testing.T) {
		if ep := final.last("ENTRYPOINT"); ep != `["rlbench"]` {
			t.Errorf("ENTRYPOINT %s; want [\"rlbench\"]", ep)
		}
		if cp := final.last("COPY"); !strings.HasSuffix(cp, " /usr/local/bin/rlbench") {
			t.Errorf("final stage COPY %q; want the binary in /usr/local/bin (on PATH, for merge.yaml's sh -c)", cp)
		}
	})
	t.Run("a shell for the merge step", func(t *testing.T) {
		if base := final.from; base == "scratch" || strings.Contains(base, "distroless") {
			t.Errorf("final stage FROM %s has no /bin/sh; merge.yaml runs its step with /bin/sh -c", base)
		}
	})
	t.Run("static binary", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds rlbench with the Dockerfile's flags (-trimpath: a build of its own, minutes on a cold cache)")
		}
		build := ""
		for _, s := range stages[:len(stages)-1] {
			for _, in := range s.instructions {
				if strings.HasPrefix(in, "RUN ") && strings.Contains(in, "go build") {
					build = strings.TrimPrefix(in, "RUN ")
				}
			}
		}
		if !strings.HasPrefix(build, "CGO_ENABLED=0 ") {
			t.Fatalf("build command %q; want CGO_ENABLED=0 go build (no libc to link)", build)
		}
		// The Dockerfile's own command, with its output in a temporary
		// directory, run from the repository's root (its COPY . .).
		bin := filepath.Join(t.TempDir(), "rlbench")
		cmdline := regexp.MustCompile(`-o \S+`).ReplaceAllString(build, "-o "+bin)
		cmd := exec.Command("sh", "-c", cmdline)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmdline, err, out)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: the binary names a dynamic loader (PT_INTERP): not static", cmdline)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("%s: the binary needs %v (%v); want none", cmdline, libs, err)
		}
	})
}
