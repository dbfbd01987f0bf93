// Package kubernetes holds the manifests that run rlbench generators on a
// Kubernetes cluster; its test checks what can be checked without one.
package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// readJobs returns the Jobs among the YAML documents of file, decoded
// strictly (decodeManifests), as the Kubernetes API types.
func readJobs(t *testing.T, file string) []*batchv1.Job {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(t, data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var jobs []*batchv1.Job
	for _, obj := range objs {
		if j, ok := obj.(*batchv1.Job); ok {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// rlbenchFlags returns the flags rlbench --help lists.
func rlbenchFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rlbench")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/rlbench").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	return flags
}

func TestGeneratorsJob(t *testing.T) {
	jobs := readJobs(t, "generators.yaml")
	if len(jobs) != 1 {
		t.Fatalf("generators.yaml has %d Jobs; want 1", len(jobs))
	}
	j := jobs[0]
	if m, n, p := j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism; m == nil || *m != batchv1.IndexedCompletion ||
		n == nil || *n < 1 || p == nil || *p != *n {
		t.Errorf("generators Job spec = %+v; want an Indexed Job running every generator at once", j.Spec)
	}
	c := j.Spec.Template.Spec.Containers[0]
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	for _, want := range []string{"JOB_COMPLETION_INDEX", "REDIS_ADDR", "START_AT", "REDISCLI_AUTH"} {
		if !strings.Contains(" "+strings.Join(env, " ")+" ", " "+want+" ") {
			t.Errorf("generator env = %v; want %s", env, want)
		}
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--start-at=$(START_AT)", "--prefix=rlbench:gen$(JOB_COMPLETION_INDEX):", "--json=/results/gen-$(JOB_COMPLETION_INDEX).json", "--addr=$(REDIS_ADDR)"} {
		if !strings.Contains(args, want) {
			t.Errorf("generator args %q lack %q", args, want)
		}
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/results" {
		t.Errorf("generator volume mounts = %+v; want /results", c.VolumeMounts)
	}
	known := rlbenchFlags(t)
	for _, a := range c.Args {
		name := strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")
		if !known[name] {
			t.Errorf("generator arg %q: rlbench --help has no --%s", a, name)
		}
	}
}

func TestMergeJob(t *testing.T) {
	jobs := readJobs(t, "merge.yaml")
	if len(jobs) != 1 {
		t.Fatalf("merge.yaml has %d Jobs; want 1", len(jobs))
	}
	c := jobs[0].Spec.Template.Spec.Containers[0]
	script := strings.Join(c.Args, " ")
	for _, want := range []string{"rlbench merge /results/gen-*.json -o /results/all.json", "rlbench report /results/all.json -o /results/report.html"} {
		if !strings.Contains(script, want) {
			t.Errorf("merge step %q lacks %q", script, want)
		}
	}
}
