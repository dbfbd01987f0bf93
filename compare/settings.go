package compare

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/workload"
)

// notSettings are the fields of a report's "config" that do not change
// what its runs measure: what ran and where (the cell's own strategy,
// client and target), names, credentials and bookkeeping. Every other
// field is a setting (Settings): "sequences" too, whose specs are the
// limiters themselves (two files whose "mine" sends other commands are not
// one cell), where "scripts" and "functions" name files.
var notSettings = []string{
	"strategies", "client_libs", "targets", "addr", "redis_server", "user", "db",
	"keep_keys", "start_at", "scripts", "functions", "allow_server_wide_faults",
	"workload.prefix", "workload.seed", "run_id", "script_timeout_ns",
}

// unset is the value of a setting that a file's config leaves out.
const unset = "-"

// Settings returns the file's settings: the fields of its "config" that
// change what a run measures, named as their flags are ("clients",
// "crash-rate", "duration", "window"), with their values as the flags take
// them ("200", "0.2", "10s", "1s"). It returns nil when the file records no
// config.
func (f *File) Settings() map[string]string {
	raw, ok := f.Fields["config"]
	if !ok {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil
	}
	out := map[string]string{}
	flattenSettings(out, "", obj)
	return out
}

// flattenSettings adds the settings of obj, whose fields are under path
// ("" or "workload."), to out.
func flattenSettings(out map[string]string, path string, obj map[string]json.RawMessage) {
	for k, v := range obj {
		if slices.Contains(notSettings, path+k) {
			continue
		}
		var sub map[string]json.RawMessage
		if json.Unmarshal(v, &sub) == nil && sub != nil {
			flattenSettings(out, path+k+".", sub)
			continue
		}
		name, value := setting(k, v)
		out[excerpt.Printable(name)] = excerpt.Printable(value)
	}
}

// setting names the config field k as its flag does and formats its value
// v: durations in nanoseconds ("_ns") and whole seconds ("_s") as
// durations, faults as --fault takes them, strings bare, the rest as JSON.
func setting(k string, v json.RawMessage) (name, value string) {
	name = strings.ReplaceAll(k, "_", "-")
	var n float64
	numeric := json.Unmarshal(v, &n) == nil
	switch base, unit := cutUnit(k); {
	case numeric && unit == "ns":
		return strings.ReplaceAll(base, "_", "-"), time.Duration(n).String()
	case numeric && unit == "s":
		return strings.ReplaceAll(base, "_", "-"), (time.Duration(n) * time.Second).String()
	case k == "rate_per_s":
		return "rate", string(v)
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return name, s
	}
	if k == "faults" {
		if text, ok := faultsText(v); ok {
			return name, text
		}
	}
	if k == "stages" {
		if text, ok := stagesText(v); ok {
			return name, text
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, v) != nil {
		return name, string(v)
	}
	return name, compact.String()
}

// cutUnit splits "duration_ns" into "duration" and "ns", "window_s" into
// "window" and "s"; unit is "" for other names.
func cutUnit(k string) (base, unit string) {
	for _, u := range []string{"ns", "s"} {
		if b, ok := strings.CutSuffix(k, "_"+u); ok && k != "rate_per_s" {
			return b, u
		}
	}
	return k, ""
}

// faultsText is a config's faults as --fault takes them, comma-separated:
// "stall@2s:500ms,kill-clients@5s", "latency@0s:5.5s:20~5". A fault with
// a field that faults.Fault does not know is not shown this way (false):
// the compact JSON then keeps every parameter apart.
func faultsText(v json.RawMessage) (string, bool) {
	var fs []faults.Fault
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if dec.Decode(&fs) != nil {
		return "", false
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	if len(parts) == 0 {
		return "none", true
	}
	return strings.Join(parts, ","), true
}

// stagesText is a config's stages as --stages takes them:
// "10s:100,30s:1000".
func stagesText(v json.RawMessage) (string, bool) {
	var ss []workload.Stage
	if json.Unmarshal(v, &ss) != nil {
		return "", false
	}
	return workload.StagesText(ss), true
}

// differingSettings returns the names of the settings whose values are not
// the same in every file that records a config, sorted, and each file's
// values of them (nil for a file that records none).
func differingSettings(files []*File) (names []string, values []map[string]string) {
	values = make([]map[string]string, len(files))
	var recorded []map[string]string
	for i, f := range files {
		values[i] = f.Settings()
		if values[i] != nil {
			recorded = append(recorded, values[i])
		}
	}
	all := map[string]bool{}
	for _, s := range recorded {
		for k := range s {
			all[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		first, ok := recorded[0][k]
		if !ok {
			first = unset
		}
		for _, s := range recorded[1:] {
			v, ok := s[k]
			if !ok {
				v = unset
			}
			if v != first {
				names = append(names, k)
				break
			}
		}
	}
	return names, values
}

// SettingsValue is the value of the setting name in file fi, for a
// table: unset ("-") when the file's config leaves it out, "?" when the
// file records no config.
func (c *Comparison) SettingsValue(name string, fi int) string {
	values := c.settings[fi]
	if values == nil {
		return "?"
	}
	if v, ok := values[name]; ok {
		return v
	}
	return unset
}

// SettingsLabel tells the runs of file fi apart from those of files with
// other settings: the differing settings with the file's values,
// "clients=200 crash-rate=0"; "" when none differs or the file records no
// config.
func (c *Comparison) SettingsLabel(fi int) string {
	if len(c.Settings) == 0 || c.settings[fi] == nil {
		return ""
	}
	parts := make([]string, len(c.Settings))
	for i, n := range c.Settings {
		parts[i] = n + "=" + c.SettingsValue(n, fi)
	}
	return strings.Join(parts, " ")
}
