package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/rlbench/rlbench/clients"
)

// runVersion is `rlbench --version`: the module's version, the commit it
// was built from, the Go version and each client library's version, as
// the build recorded them (runtime/debug.ReadBuildInfo).
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return badInput(fmt.Errorf("unexpected argument %q", args[0]))
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	if _, err := io.WriteString(stdout, versionText(bi)); printed(err) != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// versionText is what rlbench --version prints for the build bi.
func versionText(bi *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rlbench %s\n", orUnknown(bi.Main.Version))
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += " (with uncommitted changes)"
		}
		if at := settings["vcs.time"]; at != "" {
			rev += ", committed " + at
		}
		fmt.Fprintf(&b, "commit %s\n", rev)
	} else {
		b.WriteString("commit unknown (the build recorded none: built outside a git checkout, or with -buildvcs=false)\n")
	}
	fmt.Fprintf(&b, "go %s %s/%s\n", orUnknown(bi.GoVersion), runtime.GOOS, runtime.GOARCH)
	versions := map[string]string{}
	for _, m := range bi.Deps {
		versions[m.Path] = m.Version
		if m.Replace != nil {
			versions[m.Path] = m.Replace.Version
		}
	}
	for _, name := range clients.Names {
		module := clients.Modules[name]
		fmt.Fprintf(&b, "%s %s %s\n", name, module, orUnknown(versions[module]))
	}
	return b.String()
}

// orUnknown is s, or "unknown" when it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
