package results

import (
	"bytes"
	"strings"
	"testing"
)

// TestTextAdmissionSample checks that the summary says which keys a
// sampled run's over-admission figures cover, and only for that run.
func TestTextAdmissionSample(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	rep.Runs[0].AdmissionKeysTracked = 10000
	var buf bytes.Buffer
	if err := Text(rep)(&buf); err != nil {
		t.Fatalf("Text(report)(w) = %v; want nil", err)
	}
	out := buf.String()
	r := rep.Runs[0]
	want := r.Strategy + "/" + r.Client + " over and the window-span figure cover keys {0} to {9999} only (10000 keys"
	if got := strings.Count(out, "window-span figure cover keys"); got != 1 || !strings.Contains(out, want) {
		t.Errorf("Text(report with runs[0].admission_keys_tracked 10000) has %d coverage lines; want one containing %q:\n%s", got, want, out)
	}
}

// TestTextAdmissionSampleNoOver checks that the coverage line of a sampled
// run with no over figure (not a fixed window) names only the window-span
// figure.
func TestTextAdmissionSampleNoOver(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	rep.Runs[0].AdmissionKeysTracked = 10000
	rep.Runs[0].OverAdmitted = nil
	var buf bytes.Buffer
	if err := Text(rep)(&buf); err != nil {
		t.Fatalf("Text(report)(w) = %v; want nil", err)
	}
	out := buf.String()
	r := rep.Runs[0]
	want := r.Strategy + "/" + r.Client + " the window-span figure covers keys {0} to {9999} only (10000 keys"
	if !strings.Contains(out, want) || strings.Contains(out, "over and the window-span") {
		t.Errorf("Text(report with no over figure, 10000 keys tracked) lacks %q or names over:\n%s", want, out)
	}
}
