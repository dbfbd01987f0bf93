package audit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rlbench/rlbench/excerpt"
)

// Text returns a reporter that writes r as the summary `rlbench audit`
// prints: the counts, the TTL distribution, each node, the audit's own
// latency and the samples.
func Text(r Report) func(io.Writer) error {
	return func(w io.Writer) error {
		var b bytes.Buffer
		writeText(&b, r)
		_, err := w.Write(b.Bytes())
		return err
	}
}

func writeText(b *bytes.Buffer, r Report) {
	match := r.Match
	if match == "" {
		match = "*"
	}
	nodes := max(len(r.PerNode), 1)
	fmt.Fprintf(b, "audit of MATCH %s", match)
	if r.Type != "" {
		fmt.Fprintf(b, " TYPE %s", r.Type)
	}
	fmt.Fprintf(b, " on %d node(s): %s keys in %.2f s (%s keys/s, cap %s)\n",
		nodes, group(r.Keys), r.ElapsedS, group(int64(r.KeysPerS)), rateText(r.Settings.Rate))
	incomplete := 0
	for _, n := range r.PerNode {
		if !n.Complete {
			incomplete++
		}
	}
	switch {
	case r.Complete:
	case len(r.PerNode) > 1:
		fmt.Fprintf(b, "INCOMPLETE: %d of %d nodes not audited to the end (%s); the figures are what the audit saw\n", incomplete, nodes, r.Error)
	default:
		fmt.Fprintf(b, "INCOMPLETE: the audit stopped early (%s); the figures are what it saw before\n", r.Error)
	}
	row := func(label string, n int64, note string) {
		fmt.Fprintf(b, "  %-38s %13s  %s", label, group(n), note)
		b.Truncate(len(bytes.TrimRight(b.Bytes(), " ")))
		b.WriteString("\n")
	}
	row("keys examined", r.Keys, "")
	row("with a TTL", r.WithTTL, percent(r.WithTTL, r.Keys))
	row("immortal (no TTL)", r.Immortal, percent(r.Immortal, r.Keys))
	s := r.Settings
	if r.StaleFindings != nil {
		writeStale(row, r.Immortal, *r.StaleFindings, s)
	}
	row("vanished (-2)", r.Vanished, "")
	if s.MaxTTLS > 0 {
		row("TTL over "+(time.Duration(s.MaxTTLS*float64(time.Second))).String(), r.TTLOverMax, percent(r.TTLOverMax, r.Keys))
	}
	if s.Limit > 0 {
		note := ""
		if r.StaleFindings != nil {
			note = "live keys only: a stale key locks no one out"
		}
		row(fmt.Sprintf("locked out (immortal, value >= %d)", s.Limit), r.LockedOut, note)
	}
	writeFix(row, r)
	if s.Fields {
		writeFields(row, r.FieldFindings, s)
	}
	if r.Deleted > 0 {
		row("deleted (UNLINK)", r.Deleted, "")
	}
	b.WriteString("TTL distribution:")
	for i, n := range r.TTL.Counts() {
		fmt.Fprintf(b, " %s %s", BucketLabels[i], group(n))
	}
	b.WriteString("\n")
	writeTypes(b, r.Types)
	writeNodes(b, r.PerNode)
	c := r.Cost
	fmt.Fprintf(b, "audit latency: SCAN %s; PTTL pipeline %s", latencyText(c.Scan), latencyText(c.Pipeline))
	if c.Detail.N > 0 {
		fmt.Fprintf(b, "; detail pipeline %s", latencyText(c.Detail))
	}
	b.WriteString("\n")
	writeSamples(b, "immortal sample", r.ImmortalSample)
	writeSamples(b, "locked-out sample", r.LockedOutSample)
}

// writeStale writes the rows of a stamped audit: the immortal keys
// split by the window their name holds.
func writeStale(row func(label string, n int64, note string), immortal int64, f StaleFindings, s Settings) {
	window := (time.Duration(s.WindowS) * time.Second).String()
	row("  stale (window ended)", f.Stale, fmt.Sprintf("%s of immortal; the name's last number read as --window-stamp %s, windows of %s: leaked memory, nobody locked out",
		percent(f.Stale, immortal), s.WindowStamp, window))
	switch {
	case f.Stale == 0 || s.StaleMemory == 0:
	case f.StaleMemorySampled == 0:
		row("  stale memory", 0, "unknown: MEMORY USAGE answered for none of the keys asked (ACL: +memory|usage)")
	default:
		row("  stale memory, bytes (estimate)", f.StaleMemoryBytes, fmt.Sprintf("MEMORY USAGE of %s stale keys (%s bytes), scaled to %s",
			group(f.StaleMemorySampled), group(f.StaleMemorySampleBytes), group(f.Stale)))
	}
	row("  live (window not ended)", immortal-f.Stale, "")
	if f.Unstamped > 0 {
		row("    of which no stamp in the name", f.Unstamped, "no number that can be a window's start: counted live")
	}
}

// writeFields writes the field audit's rows.
func writeFields(row func(label string, n int64, note string), f FieldFindings, s Settings) {
	row("hashes (fields read)", f.Hashes, "")
	row("  expiring by their fields", f.ExpiringByFields, "no key TTL, a TTL on every field")
	row("  every field expired", f.HashesExpired, "")
	if f.HashesChanged > 0 {
		row("  changed (not a hash, or gone)", f.HashesChanged, "")
	}
	row("hash fields examined", f.Fields, "")
	row("  with a TTL", f.FieldsWithTTL, percent(f.FieldsWithTTL, f.Fields))
	row("  immortal fields (no TTL)", f.ImmortalFields, percent(f.ImmortalFields, f.Fields))
	row("  vanished (-2)", f.FieldsVanished, "")
	if s.MaxTTLS > 0 {
		row("  TTL over "+(time.Duration(s.MaxTTLS*float64(time.Second))).String(), f.FieldTTLOverMax, percent(f.FieldTTLOverMax, f.Fields))
	}
}

func writeTypes(b *bytes.Buffer, types map[string]*TypeCount) {
	if len(types) == 0 {
		return
	}
	names := make([]string, 0, len(types))
	for name := range types {
		names = append(names, name)
	}
	slices.Sort(names)
	b.WriteString("by type:")
	for _, name := range names {
		fmt.Fprintf(b, " %s %s (%s immortal)", name, group(types[name].Keys), group(types[name].Immortal))
	}
	b.WriteString("\n")
}

func writeNodes(b *bytes.Buffer, nodes []NodeReport) {
	if len(nodes) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	stamped := nodes[0].StaleFindings != nil
	header := "NODE\tDBSIZE\tKEYS\tIMMORTAL\t"
	if stamped {
		header += "STALE\t"
	}
	fmt.Fprintln(tw, header+"TTL OVER MAX\tLOCKED OUT\tCOMPLETE\t")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t", n.Addr, n.DBSize, n.Keys, n.Immortal)
		if stamped && n.StaleFindings != nil {
			fmt.Fprintf(tw, "%d\t", n.Stale)
		} else if stamped {
			fmt.Fprint(tw, "-\t")
		}
		fmt.Fprintf(tw, "%d\t%d\t%t\t\n", n.TTLOverMax, n.LockedOut, n.Complete)
	}
	tw.Flush()
}

// writeSamples writes a sample's rows, each key and value quoted and cut
// to excerpt.MaxBytes with its length: the table pads every row to its
// longest name.
func writeSamples(b *bytes.Buffer, title string, samples []Sample) {
	if len(samples) == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%d):\n", title, len(samples))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  KEY\tTYPE\tVALUE\tIDLE\tNODE\t")
	for _, s := range samples {
		value, idle := "-", "-"
		if s.Value != nil {
			value = excerpt.Quote(*s.Value)
		}
		if s.IdleS != nil {
			idle = (time.Duration(*s.IdleS) * time.Second).String()
		} else if s.IdleShared {
			idle = "shared"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", excerpt.Quote(s.Key), s.Type, value, idle, s.Node)
	}
	tw.Flush()
}

func latencyText(l Latency) string {
	if l.N == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s p99 %s max %s (%s)", us(l.P50US), us(l.P99US), us(l.MaxUS), group(l.N))
}

func us(v float64) string { return (time.Duration(v) * time.Microsecond).String() }

func rateText(rate float64) string {
	if rate <= 0 {
		return "none"
	}
	return group(int64(rate)) + "/s"
}

func percent(n, of int64) string {
	if of == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
}

// group writes n with a comma between groups of three digits.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// JSON returns a reporter that writes r as indented JSON, the file `rlbench
// audit --json` writes.
func JSON(r Report) func(io.Writer) error {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
}

// ErrNotAudit means a file is not an audit Report: its "tool" is not
// ReportTool.
var ErrNotAudit = errors.New("not an rlbench audit report")

// maxReportBytes bounds the audit file ReadReportFile reads.
const maxReportBytes = 64 << 20

// IsReportFile reports whether the JSON file at path is an audit Report,
// from its "tool" field. A file that cannot be read is not one.
func IsReportFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var env struct {
		Tool string `json:"tool"`
	}
	err = json.NewDecoder(bufio.NewReader(io.LimitReader(f, maxReportBytes))).Decode(&env)
	return err == nil && env.Tool == ReportTool
}

// ReadReportFile reads the audit Report at path. Every error names the file.
func ReadReportFile(path string) (Report, error) {
	var r Report
	f, err := os.Open(path)
	if err != nil {
		return r, fmt.Errorf("read audit report: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, maxReportBytes))
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s: read audit report: %w", path, err)
	}
	if r.Tool != ReportTool {
		return r, fmt.Errorf("%s: read audit report: %w", path, ErrNotAudit)
	}
	for _, samples := range [][]Sample{r.ImmortalSample, r.LockedOutSample} {
		for i := range samples {
			if err := samples[i].restore(); err != nil {
				return r, fmt.Errorf("%s: read audit report: %w", path, err)
			}
		}
	}
	return r, nil
}

// restore puts back the key and value that KeyB64 and ValueB64 hold.
func (s *Sample) restore() error {
	if s.KeyB64 != "" {
		key, err := base64.StdEncoding.DecodeString(s.KeyB64)
		if err != nil {
			return fmt.Errorf("key_b64: %w", err)
		}
		s.Key = string(key)
	}
	if s.ValueB64 != "" {
		value, err := base64.StdEncoding.DecodeString(s.ValueB64)
		if err != nil {
			return fmt.Errorf("value_b64: %w", err)
		}
		v := string(value)
		s.Value = &v
	}
	return nil
}

// writeFix writes the rows of a fix (Options.FixTTL) and of the keys
// that changed under it.
func writeFix(row func(string, int64, string), r Report) {
	s := r.Settings
	switch {
	case s.FixTTLS > 0 && s.DryRun:
		row(fmt.Sprintf("would fix (EXPIRE %d), dry run", s.FixTTLS), r.WouldFix, "")
	case s.FixTTLS > 0:
		row(fmt.Sprintf("fixed (EXPIRE %d, in one script)", s.FixTTLS), r.Fixed, "")
		row("left alone (gained a TTL)", r.FixSkipped, "")
	}
	if s.FixTTLS > 0 && (r.FixLeftOut > 0 || len(r.Claims) > 0) {
		row("left out: under a live run's claim", r.FixLeftOut, claimsText(r.Claims))
	}
	if s.FixTTLS > 0 && r.FixRecords > 0 {
		row("left out: a run's records of an ACL user or library", r.FixRecords, "rlbench cleanup finds the objects by them")
	}
	if r.Changed > 0 || s.FixTTLS > 0 && !s.DryRun {
		row("changed during the audit (type or gone)", r.Changed, "no TTL at PTTL, never given one")
	}
}

// claimsText names the prefixes of claims, quoted, the first three.
func claimsText(claims []Claim) string {
	var b strings.Builder
	b.WriteString("prefix ")
	for i, c := range claims {
		if i == 3 {
			fmt.Fprintf(&b, ", and %d more", len(claims)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(c.Prefix()))
	}
	return b.String()
}
