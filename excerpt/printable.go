package excerpt

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s as it is when every rune of it prints (strconv.IsPrint:
// letters, marks, numbers, punctuation, symbols and the ASCII space) and it
// is valid UTF-8; else s quoted as strconv.Quote does, so that a string read
// from a file or a server (a strategy's name, a target's label) cannot move
// the cursor, clear the screen, set a terminal's title or start a line of
// its own: "lua\r\x1b[2J" becomes "\"lua\\r\\x1b[2J\"".
func Printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// Quote returns s quoted as strconv.Quote does, cut first as Text does:
// the first MaxBytes of a longer s, quoted, then " (N bytes)", so that a
// 1 MB key name is a line of a few hundred bytes.
func Quote(s string) string {
	if len(s) <= MaxBytes {
		return strconv.Quote(s)
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// PrintableAll replaces, in place, every string reachable from v (a pointer:
// through the exported fields of structs, pointers, slices, arrays,
// interfaces, and map keys and values) by Printable's form of it. The
// readers of reports for a terminal (compare, merge's summary) call it on
// what they read, so that every string they print is printable, not only
// those someone thought of.
func PrintableAll(v any) {
	printable(reflect.ValueOf(v))
}

func printable(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Interface {
			// The value an interface holds cannot be set: copy it, fix the
			// copy and put it back.
			c := reflect.New(v.Elem().Type()).Elem()
			c.Set(v.Elem())
			printable(c)
			if v.CanSet() {
				v.Set(c)
			}
			return
		}
		printable(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				printable(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes (a json.RawMessage): not text to print
		}
		for i := range v.Len() {
			printable(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(v.MapIndex(k))
			printable(val)
			key := reflect.New(v.Type().Key()).Elem()
			key.Set(k)
			printable(key)
			if !key.Equal(k) {
				v.SetMapIndex(k, reflect.Value{})
			}
			v.SetMapIndex(key, val)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(Printable(v.String()))
		}
	}
}
