package strategies

import (
	"runtime/debug"
	"strings"
)

// Origin says where the strategy's code comes from: "rlbench" for a
// built-in one, the file of a user strategy, or a published library's
// module and the version this binary was built with, e.g.
// "github.com/ulule/limiter/v3@v3.11.2" ("(devel)" when the build does not
// record it).
func (i Info) Origin() string {
	switch {
	case i.Source != "":
		return i.Source
	case i.Module == "":
		return "rlbench"
	}
	return i.Module + "@" + ModuleVersion(i.Module)
}

// ModuleVersion returns the version of module path in this build, from
// its build info, or "(devel)" when the build does not record it.
func ModuleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path != path {
				continue
			}
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return "(devel)"
}

// KeysText is Info.Keys, or "K" when it is empty: the keys one decision
// writes, in terms of its key K.
func (i Info) KeysText() string {
	if i.Keys == "" {
		return "K"
	}
	return i.Keys
}

// ClientsText is Info.Clients, comma-separated, or "all".
func (i Info) ClientsText() string {
	if i.Clients == nil {
		return "all"
	}
	return strings.Join(i.Clients, ",")
}
