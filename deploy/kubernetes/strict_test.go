package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// strictDecoder decodes YAML into the real Kubernetes API types of the
// kinds the manifests use, refusing unknown and duplicate fields, as
// kubectl apply --validate=strict does.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
}

// decodeManifests decodes every YAML document of data strictly and returns
// the objects, or the first error.
func decodeManifests(t *testing.T, data []byte) ([]runtime.Object, error) {
	t.Helper()
	dec := strictDecoder(t)
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return objs, err
		}
		if onlyComments(doc) {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return objs, err
		}
		if gvk.Kind == "" {
			t.Fatalf("document without a kind:\n%s", doc)
		}
		objs = append(objs, obj)
	}
}

// onlyComments reports whether doc holds nothing but comments and blank
// lines.
func onlyComments(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// TestManifestsDecodeStrictly decodes deploy/kubernetes/*.yaml into
// k8s.io/api's types with unknown fields refused: a misspelled field, or one
// in the wrong place, fails here rather than on a cluster.
func TestManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		kinds []string
	}{
		{"generators.yaml", []string{"PersistentVolumeClaim", "Job"}},
		{"merge.yaml", []string{"Job"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeManifests(t, data)
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			var kinds []string
			for _, o := range objs {
				switch o := o.(type) {
				case *batchv1.Job:
					kinds = append(kinds, "Job")
					checkJob(t, tc.file, o)
				case *corev1.PersistentVolumeClaim:
					kinds = append(kinds, "PersistentVolumeClaim")
				default:
					t.Errorf("%s: unexpected object %T", tc.file, o)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("%s holds %v; want %v", tc.file, kinds, tc.kinds)
			}
		})
	}
}

// checkJob checks what docs/output.md and docs/metrics.md say of a Job:
// it runs as a non-root user's group (fsGroup), never restarts, and a
// generator serves its metrics on the port it declares.
func checkJob(t *testing.T, file string, j *batchv1.Job) {
	t.Helper()
	spec := j.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q; want Never (a rerun would load the server again)", file, spec.RestartPolicy)
	}
	if j.Name != "rlbench-generators" {
		return
	}
	c := spec.Containers[0]
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9464 {
		t.Errorf("%s: ports %+v; want one named metrics, 9464", file, c.Ports)
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--metrics-addr=:9464") {
		t.Errorf("%s: args %q lack --metrics-addr=:9464", file, c.Args)
	}
	if a := j.Spec.Template.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9464" {
		t.Errorf("%s: pod annotations %v; want prometheus.io/scrape true, port 9464", file, a)
	}
}

// TestMisspelledFieldFails proves the strict decoding catches what a
// loose one (yaml into a partial struct) would not: each
// case is a copy of a real manifest with one field misspelled or misplaced.
func TestMisspelledFieldFails(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("generators.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"misspelled pod field", "restartPolicy: Never", "restartPolcy: Never", `unknown field "spec.template.spec.restartPolcy"`},
		{"misspelled port field", "containerPort: 9464", "containerPrt: 9464", `unknown field "spec.template.spec.containers[0].ports[0].containerPrt"`},
		{"misspelled job field", "backoffLimit: 0", "backofLimit: 0", `unknown field "spec.backofLimit"`},
		{"a field in the wrong place", "      restartPolicy: Never", "      restartPolicy: Never\n      backoffLimit: 0", `unknown field "spec.template.spec.backoffLimit"`},
		{"a field twice", "      restartPolicy: Never", "      restartPolicy: Never\n      restartPolicy: Never", `key "restartPolicy" already set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !bytes.Contains(data, []byte(tc.old)) {
				t.Fatalf("generators.yaml has no %q to misspell", tc.old)
			}
			bad := bytes.Replace(data, []byte(tc.old), []byte(tc.new), 1)
			_, err := decodeManifests(t, bad)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decode of generators.yaml with %q = %v; want an error naming %s", tc.new, err, tc.want)
			}
		})
	}
}
