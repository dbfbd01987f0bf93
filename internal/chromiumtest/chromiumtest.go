// Package chromiumtest runs a page in headless Chromium for tests: it dumps
// the DOM after the page's scripts ran, or takes a screenshot.
//
// Chromium is Debian's chromium package; scripts/ensure-chromium.sh installs
// it (as root with apt-get) and scripts/report-test.sh calls it before the
// report tests. When no Chromium is found, Find fails the test under CI
// (the CI environment variable is set) and otherwise skips it with a loud
// message that says how to install it.
package chromiumtest

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// BinaryEnv names the environment variable that, if set, gives the path of
// the Chromium (or Chrome) binary to run.
const BinaryEnv = "RLBENCH_CHROMIUM"

// names are the binaries Find looks for on PATH, in order.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Timeout bounds one run of Chromium.
const Timeout = 60 * time.Second

// Find returns the Chromium binary: $RLBENCH_CHROMIUM, else the first of
// chromium, chromium-browser, google-chrome on PATH. Without one it fails
// tb when $CI is set and skips it loudly otherwise.
func Find(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(BinaryEnv); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "chromiumtest: NO CHROMIUM: the HTML report test needs headless Chromium to check that the charts are drawn.\n" +
		"Install it with scripts/ensure-chromium.sh (apt-get install -y chromium, as root), run scripts/report-test.sh, or set " + BinaryEnv + "=/path/to/chromium"
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip("SKIPPED LOUDLY: " + msg)
	return ""
}

// flags are the flags of every run: headless, and nothing that reaches the
// network or outlives the run.
var flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--hide-scrollbars", "--mute-audio",
}

// run runs Chromium on the page at path with extra flags and a profile of
// its own, and returns its stdout.
func run(tb testing.TB, path string, extra ...string) []byte {
	tb.Helper()
	bin := Find(tb)
	ctx, cancel := context.WithTimeout(tb.Context(), Timeout)
	defer cancel()
	args := append([]string{"--user-data-dir=" + tb.TempDir()}, flags...)
	args = append(args, extra...)
	args = append(args, "file://"+path)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("chromiumtest: %s %q: %v\nstderr (last %d bytes):\n%s", bin, args, err, len(stderr.b), stderr.b)
	}
	return out
}

// DumpDOM loads the page at path (absolute) and returns its DOM as HTML,
// serialised after the load event, once the page's scripts ran.
func DumpDOM(tb testing.TB, path string) string {
	tb.Helper()
	return string(run(tb, path, "--dump-dom"))
}

// Screenshot loads the page at path (absolute) in a window of width x height
// pixels and writes a PNG of it to png.
func Screenshot(tb testing.TB, path, png string, width, height int) {
	tb.Helper()
	run(tb, path, "--screenshot="+png, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		tb.Fatalf("chromiumtest: no screenshot at %s: %v", png, err)
	}
}

var (
	bodyTag = regexp.MustCompile(`(?is)<body\b([^>]*)>`)
	attr    = regexp.MustCompile(`([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>]+)))?`)
)

// BodyAttrs returns the attributes of the first <body> tag of dom, by name.
// An attribute without a value maps to "".
func BodyAttrs(dom string) (map[string]string, error) {
	m := bodyTag.FindStringSubmatch(dom)
	if m == nil {
		return nil, fmt.Errorf("chromiumtest: no <body> tag in the DOM (%d bytes)", len(dom))
	}
	attrs := map[string]string{}
	for _, a := range attr.FindAllStringSubmatch(m[1], -1) {
		attrs[a[1]] = html.UnescapeString(a[2] + a[3] + a[4])
	}
	return attrs, nil
}

// limitedBuffer keeps the last 8 KiB written to it.
type limitedBuffer struct{ b []byte }

const keep = 8 << 10

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > keep {
		l.b = l.b[len(l.b)-keep:]
	}
	return len(p), nil
}
