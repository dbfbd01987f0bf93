package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/results"
)

// prefixKey is the config key of a run's key prefix, which every part is
// expected to set apart and configDiff does not report.
const prefixKey = "workload.prefix"

// runIDKey is the config key of a run's id, which every generator has its
// own of.
const runIDKey = "run_id"

// flattenConfig flattens a report's config into dotted keys ("workload.clients")
// holding compact JSON values; arrays are values. A nil config gives nil.
func flattenConfig(config any) (map[string]string, error) {
	if config == nil {
		return nil, nil
	}
	data, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if err := flattenJSON(out, "", data); err != nil {
		return nil, err
	}
	return out, nil
}

func flattenJSON(out map[string]string, name string, data json.RawMessage) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) == nil && obj != nil {
		for k, v := range obj {
			key := k
			if name != "" {
				key = name + "." + k
			}
			if err := flattenJSON(out, key, v); err != nil {
				return err
			}
		}
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return err
	}
	out[name] = compact.String()
	return nil
}

// configDiff lists, sorted, the config keys whose values are not the same
// in every source (a key missing from one differs), the prefix and the run
// id (each generator's own) aside.
// Sources with no config are not compared.
func configDiff(srcs []*source) []string {
	var configs []map[string]string
	for _, s := range srcs {
		if s.config != nil {
			configs = append(configs, s.config)
		}
	}
	keys := map[string]bool{}
	for _, c := range configs {
		for k := range c {
			keys[k] = true
		}
	}
	var diff []string
	for k := range keys {
		if k == prefixKey || k == runIDKey {
			continue
		}
		v, ok := configs[0][k]
		for _, c := range configs[1:] {
			if w, has := c[k]; has != ok || w != v {
				diff = append(diff, k)
				break
			}
		}
	}
	slices.Sort(diff)
	return diff
}

// prefixGroups gives each source the index of the first source with the
// same key prefix: sources in one group audited the same keys. A source
// whose prefix is unknown is a group of its own.
func prefixGroups(srcs []*source) []int {
	groups := make([]int, len(srcs))
	for i, s := range srcs {
		groups[i] = i
		if s.prefix == "" {
			continue
		}
		for j := range i {
			if srcs[j].prefix == s.prefix {
				groups[i] = j
				break
			}
		}
	}
	return groups
}

// prefixNotes says which sources shared a prefix, and which had none known.
func prefixNotes(srcs []*source, groups []int) []string {
	var notes []string
	for g := range srcs {
		var names []string
		for i, s := range srcs {
			if groups[i] == g {
				names = append(names, s.name)
			}
		}
		if len(names) > 1 {
			notes = append(notes, fmt.Sprintf("%s used the same key prefix %q: they audited the same keys, so their audit counts once (the largest of theirs), and over_admitted and max_admitted_per_window_span are lower bounds (each saw only its own admissions)",
				strings.Join(names, ", "), srcs[g].prefix))
		}
	}
	for _, s := range srcs {
		if s.prefix == "" {
			notes = append(notes, fmt.Sprintf("%s has no %s in its config: its audit is added as if its keys were its own", s.name, prefixKey))
		}
	}
	return notes
}

// mergeAudits combines the parts' audits: the parts of one prefix group
// scanned the same keys, and overlap (the largest of each figure); the
// groups' keys are disjoint, and add up. parts[i] is of the source of
// groups[i].
func mergeAudits(parts []part, groups []int) results.Audits {
	byGroup := map[int]*results.Audits{}
	var order []int
	for i, p := range parts {
		g := groups[i]
		if a, ok := byGroup[g]; ok {
			a.Overlap(p.run.Audits)
			continue
		}
		a := p.run.Audits
		byGroup[g] = &a
		order = append(order, g)
	}
	out := *byGroup[order[0]]
	for _, g := range order[1:] {
		out.Add(*byGroup[g])
	}
	return out
}

// alignSeries sums the parts' per-second series on wall-clock seconds from
// origin: each part's second, which ends T seconds after the part's start,
// goes to the merged second (k-1, k] from origin that holds its midpoint.
// Merged second k ends at k, or at the latest part's end if sooner. Seconds
// no part has an entry in are left out, as a part's series leaves out none.
// The immortal count of a merged second combines each part's latest one
// (see combine); p50_us and p99_us are left 0, since
// percentiles cannot be added. parts[i] is of the source of groups[i].
func alignSeries(origin time.Time, parts []part, groups []int) []results.Second {
	type bucket struct {
		sec      results.Second
		immortal map[int]int64 // by part: its latest immortal count in the second
	}
	buckets := map[int64]*bucket{}
	lastEnd := math.Inf(-1)
	for i, p := range parts {
		offset := p.run.StartedAt.Sub(origin).Seconds()
		prev := 0.0
		for _, s := range p.run.PerSecond {
			k := int64(math.Floor(offset+(prev+s.T)/2)) + 1
			b := buckets[k]
			if b == nil {
				b = &bucket{sec: results.Second{T: float64(k)}, immortal: map[int]int64{}}
				buckets[k] = b
			}
			b.sec.Decisions += s.Decisions
			b.sec.Allowed += s.Allowed
			b.sec.Rejected += s.Rejected
			b.sec.Errors += s.Errors
			if s.Immortal != nil {
				b.immortal[i] = *s.Immortal
			}
			prev = s.T
		}
		if len(p.run.PerSecond) > 0 {
			lastEnd = max(lastEnd, offset+prev)
		}
	}
	ks := make([]int64, 0, len(buckets))
	for k := range buckets {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	out := make([]results.Second, 0, len(ks))
	latest := map[int]int64{} // by part, carried over the seconds
	for _, k := range ks {
		b := buckets[k]
		b.sec.T = min(b.sec.T, lastEnd)
		maps.Copy(latest, b.immortal)
		if len(latest) > 0 {
			n := combine(latest, groups)
			b.sec.Immortal = &n
		}
		out = append(out, b.sec)
	}
	return out
}

// combine adds values by part across prefix groups and takes the largest
// within one: parts that shared a prefix counted the same keys. values[i]
// is of the part of the source of groups[i].
func combine(values map[int]int64, groups []int) int64 {
	byGroup := map[int]int64{}
	for i, v := range values {
		byGroup[groups[i]] = max(byGroup[groups[i]], v)
	}
	var sum int64
	for _, v := range byGroup {
		sum += v
	}
	return sum
}

// mergeFaults lists every part's faults in time order, their times moved
// to seconds from origin and their detail led by the part's file.
func mergeFaults(origin time.Time, parts []part) []results.FaultEvent {
	var out []results.FaultEvent
	for _, p := range parts {
		offset := p.run.StartedAt.Sub(origin).Seconds()
		for _, e := range p.run.Faults {
			e.AtS += offset
			e.Detail = joinNote(p.src.name, e.Detail)
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b results.FaultEvent) int {
		switch {
		case a.AtS < b.AtS:
			return -1
		case a.AtS > b.AtS:
			return 1
		}
		return 0
	})
	return out
}

// serverNotes warns when a cell's parts did not plainly load one server:
// servers of another name or version, or private servers that each
// generator started for itself.
func serverNotes(key compare.Key, parts []part) []string {
	var notes []string
	name := func(s results.Server) string { return s.Name + " " + s.Version }
	if slices.ContainsFunc(parts, func(p part) bool { return name(p.server) != name(parts[0].server) }) {
		var list []string
		for _, p := range parts {
			list = append(list, p.server.Short()+" ("+p.src.name+")")
		}
		notes = append(notes, fmt.Sprintf("%s: the parts ran against different servers: %s", key, strings.Join(list, ", ")))
	}
	for _, p := range parts {
		if p.server.Managed {
			notes = append(notes, fmt.Sprintf("%s ran against a private server it started itself (%s): its parts did not load one server; give every generator the same --addr", p.src.name, p.server.Short()))
		}
	}
	return notes
}

// joinNote is "a: b", or whichever is not empty.
func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}

// intervals describes the parts' load phases, for ErrNoOverlap.
func intervals(parts []part) string {
	var list []string
	for _, p := range parts {
		list = append(list, fmt.Sprintf("%s from %s for %.3f s", p.src.name, p.run.StartedAt.UTC().Format(time.RFC3339Nano), p.run.DurationS))
	}
	return strings.Join(list, ", ")
}

// seconds converts a duration in seconds to a time.Duration, to the
// nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
