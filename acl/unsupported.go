package acl

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/strategies"
)

// Unsupported asks the server whether it can run strategy, as reg holds
// it (nil: the built-in strategies): whether it
// knows the commands that the strategy and its audit send beyond what
// every run sends (COMMAND INFO) and takes the options it needs (the
// probes of SupportedOptions, on key, a key under the run's prefix that
// does not exist; none when key is ""). It returns what the server lacks, e.g. ["HEXPIRE",
// "HTTL"] or ["EXPIRE ... NX"], or nil when it can run it. Any other
// failure (a connection error, a command the user may not send) is
// returned as an error, for the pre-flight check to report.
func Unsupported(ctx context.Context, rdb Doer, reg *strategies.Registry, key, strategy string) ([]string, error) {
	cmds, err := Commands(Needs{Strategies: []string{strategy}, Registry: reg})
	if err != nil {
		return nil, err
	}
	cmds = slices.DeleteFunc(cmds, func(c Command) bool {
		return c.Why != "strategy "+strategy && !slices.Contains(FieldAuditCommands, c)
	})
	var lacks []string
	_, err = Supported(ctx, rdb, cmds)
	if lacks, err = appendMissing(lacks, err); err != nil {
		return nil, err
	}
	if key == "" {
		return lacks, nil
	}
	err = SupportedOptions(ctx, rdb, key, Options([]string{strategy}))
	return appendMissing(lacks, err)
}

// appendMissing appends to lacks the commands or options that err, a
// *MissingError of a server that does not know them, names in upper case;
// any other error is returned as it is.
func appendMissing(lacks []string, err error) ([]string, error) {
	if err == nil {
		return lacks, nil
	}
	missing, ok := errors.AsType[*MissingError](err)
	if !ok || missing.Denied {
		return nil, err
	}
	for _, c := range missing.Commands {
		lacks = append(lacks, strings.ToUpper(strings.ReplaceAll(c, "|", " ")))
	}
	return lacks, nil
}
