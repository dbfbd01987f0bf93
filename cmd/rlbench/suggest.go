package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// didYouMean returns "; did you mean W?" for the candidate W closest to
// name when it is a likely typo of it (an edit distance of at most a third
// of name's length, or 1), or "" when none is.
func didYouMean(name string, candidates []string) string {
	best, bestDist := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		if d := editDistance(name, c); d > 0 && d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

// editDistance is the optimal-string-alignment distance between a and b:
// the insertions, deletions, substitutions and transpositions of adjacent
// bytes that turn one into the other.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range cur {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// unknownFlagError adds a did-you-mean to pflag's error for an unknown
// long flag of fs, or returns err as it is.
func unknownFlagError(fs *pflag.FlagSet, err error) error {
	nerr, ok := errors.AsType[*pflag.NotExistError](err)
	if !ok || nerr.GetSpecifiedShortnames() != "" {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, "--"+f.Name)
		}
	})
	if hint := didYouMean("--"+nerr.GetSpecifiedName(), names); hint != "" {
		return fmt.Errorf("%w%s", err, hint)
	}
	return err
}

// unknownCommand returns the error for a first argument that is no
// command but looks like a mistyped command name (audti), or nil. An
// argument that starts with "-" is only compared with the commands that
// are flags (--version): the load run's own flags are left to pflag.
func unknownCommand(arg string, cmds []command) error {
	flag := strings.HasPrefix(arg, "-")
	var names []string
	for _, c := range cmds[1:] {
		if c.name == arg {
			return nil
		}
		if strings.HasPrefix(c.name, "-") == flag {
			names = append(names, c.name)
		}
	}
	hint := didYouMean(arg, names)
	switch {
	case hint == "":
		return nil
	case flag:
		return badInputHelp(fmt.Errorf("unknown flag: %s%s", arg, hint))
	}
	return badInputHelp(fmt.Errorf("unknown command %q%s", arg, hint))
}
