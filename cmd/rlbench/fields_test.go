package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/verify"
)

// TestFieldFlagsNameRealFields checks that every key of the field-to-flag
// maps is a field of the Config it names, as a selector path through
// structs and slices' elements ("Targets.Login.DB"): a map entry of a
// field that is gone would never be used, and its flag never named.
func TestFieldFlagsNameRealFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags map[string]string
		of    func(field string) reflect.Type
	}{
		{"runFlags", runFlags, func(string) reflect.Type { return reflect.TypeFor[rlbench.Config]() }},
		{"verifyFlags", verifyFlags, func(string) reflect.Type { return reflect.TypeFor[verify.Config]() }},
	} {
		for field := range tc.flags {
			// Connection: the error names its flag itself; Targets.URL: a
			// target made from a URL (an Addr with the URL's Login).
			if field == "Connection" || field == "Targets.URL" {
				continue
			}
			if !hasField(tc.of(field), field) {
				t.Errorf("%s[%q]: no such field", tc.name, field)
			}
		}
	}
}

// hasField reports whether the selector path names a field of typ.
func hasField(typ reflect.Type, path string) bool {
	for name := range strings.SplitSeq(path, ".") {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return false
		}
		f, ok := typ.FieldByName(name)
		if !ok {
			return false
		}
		typ = f.Type
	}
	return true
}
