package results

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Reporter writes a report somewhere.
type Reporter func(io.Writer) error

// Text returns a reporter for the human summary of rep: a header line naming
// the server, one aligned table row per run, one line per run with errors
// listing its error kinds (most frequent first), and a loud final warning when
// any run left counters with no TTL.
func Text(rep *Report) Reporter {
	return func(w io.Writer) error {
		var buf bytes.Buffer
		writeText(&buf, rep)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("text report: write: %w", err)
		}
		return nil
	}
}

// writeText renders rep into buf, which cannot fail to take it: the
// header, the table, then each section of notes, run by run.
func writeText(buf *bytes.Buffer, rep *Report) {
	targets := targetsOf(rep)
	if len(targets) > 1 {
		for _, t := range targets {
			fmt.Fprintf(buf, "target %s: %s\n", t.label, t.server)
		}
	} else {
		fmt.Fprintf(buf, "server: %s\n", rep.Server)
	}
	multi := len(targets) > 1
	writeTable(buf, rep, multi)
	if multi {
		writeByStrategy(buf, rep, targets)
	}
	for _, section := range textSections {
		var notes []note
		for _, r := range rep.Runs {
			label := r.Strategy + "/" + r.Client
			if multi {
				label = r.Target + ": " + label
			}
			var b bytes.Buffer
			section(&b, r, labelMark)
			for line := range strings.Lines(b.String()) {
				notes = addNote(notes, strings.TrimSuffix(line, "\n"), label)
			}
		}
		for _, n := range notes {
			writeNote(buf, strings.ReplaceAll(n.text, labelMark, cellsText(n.labels, len(rep.Runs))))
		}
	}
	var b bytes.Buffer
	writeImmortal(&b, rep, multi)
	writeOverAdmitted(&b, rep, multi)
	for line := range strings.Lines(b.String()) {
		writeNote(buf, strings.TrimSuffix(line, "\n"))
	}
}

// writeOverAdmitted ends the report with an alert when a run admitted more
// than the limit in one window of one key (the table's over), as
// writeImmortal does for keys with no TTL.
func writeOverAdmitted(buf *bytes.Buffer, rep *Report, multi bool) {
	var over []string
	for _, r := range rep.Runs {
		if r.OverAdmitted == nil || *r.OverAdmitted <= 0 {
			continue
		}
		label := r.Strategy + "/" + r.Client
		if multi {
			label = r.Target + ": " + label
		}
		over = append(over, fmt.Sprintf("%s let %d %s past the limit in one window of one key", label, *r.OverAdmitted, plural(*r.OverAdmitted, "request", "requests")))
	}
	if len(over) > 0 {
		fmt.Fprintf(buf, "OVER-ADMITTED: %s: the limiter let users through beyond what it allows.\n", strings.Join(over, "; "))
	}
}

// writeTable writes one aligned row per run.
func writeTable(buf *bytes.Buffer, rep *Report, multi bool) {
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	header := "strategy\tclient\tclients\tdecisions\tthr/s\tallowed\trejected\terrors\tp50\tp99\tp99.9\tmax\tkeys\timmortal\tttl>win\tover"
	if multi {
		header = "target\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, r := range rep.Runs {
		if multi {
			fmt.Fprintf(tw, "%s\t", r.Target)
		}
		keys, immortal, overWindow := r.Audit.figures()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Strategy, r.Client, r.Workers, r.Decisions,
			strconv.FormatFloat(r.ThroughputPerS, 'f', 0, 64),
			r.Allowed, r.Rejected, r.Errors,
			FormatUS(r.LatencyUS.P50), FormatUS(r.LatencyUS.P99), FormatUS(r.LatencyUS.P999), FormatUS(r.LatencyUS.Max),
			keys, immortal, overWindow, overText(r))
	}
	tw.Flush() // writes to a bytes.Buffer cannot fail
}

// textSections are the text report's notes after the table, in order:
// each writes what it has to say of one run, labelled label, or nothing.
var textSections = []func(buf *bytes.Buffer, r Run, label string){
	writePartial, writeOpenLoop, writeStages, writeErrors, writeAdmissionSample, writeFaults, writeCounts, writePerNode, writeClusterErrors, writeSaturation,
	writeVerdict, writeWholeServer, writeFieldAudit, writeLibraries, writeUserCodeGuard,
}

// writeUserCodeGuard says what confined a user strategy's code.
func writeUserCodeGuard(buf *bytes.Buffer, r Run, label string) {
	switch r.UserCodeGuard {
	case GuardStatic:
		fmt.Fprintf(buf, "%s user code confined by: the parse-time check alone (no temporary ACL user: see the log)\n", label)
	case GuardStaticACL:
		fmt.Fprintf(buf, "%s user code confined by: the parse-time check and a temporary ACL user (only the cell's commands, on its keys)\n", label)
	}
}

// writeFieldAudit writes the field audit of a run whose counters are hash
// fields: the table's keys are its hashes.
func writeFieldAudit(buf *bytes.Buffer, r Run, label string) {
	a := r.Audit
	if a.Fields == 0 && a.ImmortalFields == 0 && a.HashesExpired == 0 {
		return
	}
	fmt.Fprintf(buf, "%s hash fields: %d examined, %d with no TTL, %d with a TTL over the window; %d of %d hashes with a field with no TTL, %d with every field expired\n",
		label, a.Fields, a.ImmortalFields, a.FieldTTLOverWindow, a.Immortal, a.Keys, a.HashesExpired)
}

func writeAdmissionSample(buf *bytes.Buffer, r Run, label string) {
	n := r.AdmissionKeysTracked
	switch {
	case n <= 0:
	case r.OverAdmitted == nil: // not a fixed window: no over figure
		fmt.Fprintf(buf, "%s the window-span figure covers keys {0} to {%d} only (%d keys, a fixed sample; see package admission)\n", label, n-1, n)
	default:
		fmt.Fprintf(buf, "%s over and the window-span figure cover keys {0} to {%d} only (%d keys, a fixed sample; see package admission)\n", label, n-1, n)
	}
}

func writePartial(buf *bytes.Buffer, r Run, label string) {
	if r.Incomplete {
		fmt.Fprintf(buf, "%s did not finish: its figures cover only part of its load\n", label)
	}
	if r.Audit.Error != "" {
		fmt.Fprintf(buf, "%s AUDIT FAILED: %s: its keys were not counted, and may remain\n", label, r.Audit.Error)
	}
}

func writeOpenLoop(buf *bytes.Buffer, r Run, label string) {
	if r.OpenLoop == nil || r.Rate <= 0 {
		return
	}
	fmt.Fprintf(buf, "%s open loop at %s/s: latencies from each request's due time; from the send:", label, strconv.FormatFloat(r.Rate, 'f', -1, 64))
	if u := r.LatencyUncorrectedUS; u != nil {
		fmt.Fprintf(buf, " p50 %s, p99 %s, p99.9 %s, max %s", FormatUS(u.P50), FormatUS(u.P99), FormatUS(u.P999), FormatUS(u.Max))
	}
	buf.WriteByte('\n')
	if r.RateNote != "" {
		fmt.Fprintf(buf, "%s: %s\n", label, r.RateNote)
	}
}

func writeErrors(buf *bytes.Buffer, r Run, label string) {
	if r.Errors == 0 && len(r.ErrorKinds) == 0 {
		return
	}
	fmt.Fprintf(buf, "%s errors: %s\n", label, FormatErrorKinds(r.ErrorKinds, " "))
}

func writeFaults(buf *bytes.Buffer, r Run, label string) {
	if len(r.Faults) == 0 {
		return
	}
	for _, f := range r.Faults {
		what := f.Detail
		if f.Error != "" {
			what = "FAILED: " + f.Error
		}
		if f.FirstIncrements != nil && *f.FirstIncrements == 0 {
			what += "; no counter was created during it: it proves nothing of a first increment (docs/output.md)"
		}
		fmt.Fprintf(buf, "%s fault %s at %.2fs: %s\n", label, f.Fault, f.AtS, what)
	}
	fmt.Fprintf(buf, "%s per second (decisions/errors):", label)
	for _, sec := range r.PerSecond {
		fmt.Fprintf(buf, " %d/%d", sec.Decisions, sec.Errors)
	}
	buf.WriteByte('\n')
}

// writeCounts writes a failover's figures, after the faults, and the lost
// and phantom increments of every counter cell.
func writeCounts(buf *bytes.Buffer, r Run, label string) {
	buf.WriteString(r.Failover.Text(label))
	if l := r.LostIncrements; l != nil && l.Phantom > 0 {
		fmt.Fprintf(buf, "%s phantom increments: %s\n", label, phantomText(r, l.Phantom))
	}
}

// phantomText says what n phantom increments of r mean for its users: a
// client that sends a write again after a network error (go-redis with
// --retries) counts it twice; any client counts a request whose reply was
// lost after the server ran it, or whose client died (--crash-rate) after
// its increment, though the request failed.
func phantomText(r Run, n int64) string {
	requests, they := plural(n, "request", "requests"), plural(n, "it", "they")
	why := "the reply lost after the server ran it"
	if r.ErrorKinds["crashed"] > 0 {
		why = "the client died after the increment, or the reply was lost after the server ran it"
	}
	if r.Client == "go-redis" && strings.Contains(r.ClientOptions, "retries=") && !strings.Contains(r.ClientOptions, "retries=off") {
		return fmt.Sprintf("%d %s counted twice by the client's retries (or counted though %s failed): users rejected early", n, requests, they)
	}
	return fmt.Sprintf("%d %s counted though %s failed for %s users (%s): users rejected early", n, requests, they, plural(n, "its", "their"), why)
}

func writePerNode(buf *bytes.Buffer, r Run, label string) {
	if len(r.AuditPerNode) == 0 {
		return
	}
	fmt.Fprintf(buf, "%s keys per master:", label)
	for _, addr := range slices.Sorted(maps.Keys(r.AuditPerNode)) {
		a := r.AuditPerNode[addr]
		fmt.Fprintf(buf, " %s %d (%d immortal)", addr, a.Keys, a.Immortal)
	}
	buf.WriteByte('\n')
}

func writeClusterErrors(buf *bytes.Buffer, r Run, label string) {
	if r.ClusterErrors == nil {
		return
	}
	fmt.Fprintf(buf, "%s cluster replies (nodes' errorstats):", label)
	for _, k := range ClusterErrorKinds {
		fmt.Fprintf(buf, " %s %d", k, r.ClusterErrors[k])
	}
	buf.WriteByte('\n')
}

// writeSaturation writes the run's load line: the verdict's first word
// (client-bound, server-bound), then Saturation.Load; the verdict's reading
// is writeVerdict's note.
func writeSaturation(buf *bytes.Buffer, r Run, label string) {
	s := r.Saturation
	if s == nil {
		return
	}
	fmt.Fprintf(buf, "%s load: ", label)
	if bound, _, _ := strings.Cut(s.Verdict, ":"); bound != "" {
		buf.WriteString(bound + "; ")
	}
	buf.WriteString(s.Load() + "\n")
}

// writeVerdict writes the saturation verdict in full, which the cells
// that share it share.
func writeVerdict(buf *bytes.Buffer, r Run, label string) {
	if s := r.Saturation; s != nil && s.Verdict != "" {
		fmt.Fprintf(buf, "%s %s\n", label, s.Verdict)
	}
}

// writeWholeServer says of a server rlbench did not start that its CPU per
// decision is the whole server's: other clients' commands are in it.
func writeWholeServer(buf *bytes.Buffer, r Run, label string) {
	if s := r.Saturation; s != nil && s.ServerCPUPerDecisionUS > 0 && r.Server != nil && !r.Server.Managed {
		fmt.Fprintf(buf, "%s server CPU per decision: the whole server's CPU, other clients' commands count too\n", label)
	}
}

// writeImmortal ends the report with a loud warning when a run left keys
// with no TTL: users locked out forever for a fixed-window counter that
// does not heal, leaked keys for a strategy whose keys get a TTL again
// (Cell.ImmortalKeysLeak), and keys that no TTL was ever meant for
// (Run.ImmortalByDesign).
func writeImmortal(buf *bytes.Buffer, rep *Report, multi bool) {
	var lockedOut, leaked, byDesign, stale, hashed []string
	for _, r := range rep.Runs {
		label := r.Strategy + "/" + r.Client
		if multi {
			label = r.Target + ": " + label
		}
		if r.Audit.Stale != nil && *r.Audit.Stale > 0 {
			stale = append(stale, fmt.Sprintf("%s left %d %s of ended windows with no TTL", label, *r.Audit.Stale, plural(*r.Audit.Stale, "key", "keys")))
		}
		if r.Audit.Stale == nil && r.Audit.Stamp != "" && r.Audit.Immortal > 0 {
			hashed = append(hashed, label)
		}
		n := r.Audit.Live()
		if n == 0 && r.Audit.ImmortalFields == 0 {
			continue
		}
		switch {
		case r.Audit.ImmortalFields > 0:
			lockedOut = append(lockedOut, fmt.Sprintf("%s left %d hash %s with no TTL, in %d %s", label,
				r.Audit.ImmortalFields, plural(r.Audit.ImmortalFields, "field", "fields"), n, plural(n, "hash", "hashes")))
		case r.ImmortalByDesign:
			byDesign = append(byDesign, fmt.Sprintf("%s left %d %s with no TTL", label, n, plural(n, "key", "keys")))
		case r.ImmortalKeysLeak:
			leaked = append(leaked, fmt.Sprintf("%s left %d %s with no TTL", label, n, plural(n, "key", "keys")))
		default:
			lockedOut = append(lockedOut, fmt.Sprintf("%s left %d %s with no TTL", label, n, plural(n, "counter", "counters")))
		}
	}
	if len(lockedOut) > 0 {
		fmt.Fprintf(buf, "IMMORTAL KEYS: %s: those users are locked out forever.\n", strings.Join(lockedOut, "; "))
	}
	// The full readings are in docs/output.md ("The closing lines").
	if len(leaked) > 0 {
		fmt.Fprintf(buf, "IMMORTAL KEYS: %s: leaked (nobody requested them again, which gives a TTL back; nothing will delete them).\n", strings.Join(leaked, "; "))
	}
	if len(byDesign) > 0 {
		fmt.Fprintf(buf, "IMMORTAL KEYS: %s: the strategy never sets a TTL, by design (nothing will delete them).\n", strings.Join(byDesign, "; "))
	}
	if len(stale) > 0 {
		fmt.Fprintf(buf, "STALE KEYS: %s: their window ended, so nobody is locked out, but nothing will delete them (leaked memory).\n", strings.Join(stale, "; "))
	}
	if len(hashed) > 0 {
		fmt.Fprintf(buf, "%s: the keys' names do not show their window, so the audit cannot tell stale immortal keys from live ones.\n",
			strings.Join(hashed, "; "))
	}
}

// plural is one when n is 1, else many.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// overText is a run's over-admission for the table: "-" for a strategy
// that is not a fixed window.
func overText(r Run) string {
	if r.OverAdmitted == nil {
		return "-"
	}
	return strconv.FormatInt(*r.OverAdmitted, 10)
}

// reportTarget is one target of a report, in run order.
type reportTarget struct {
	label  string
	server Server
}

// targetsOf lists the targets of rep's runs, in run order. Runs written
// before targets existed count as one target, the report's server.
func targetsOf(rep *Report) []reportTarget {
	var out []reportTarget
	for _, r := range rep.Runs {
		if slices.ContainsFunc(out, func(t reportTarget) bool { return t.label == r.Target }) {
			continue
		}
		t := reportTarget{label: r.Target, server: rep.Server}
		if r.Server != nil {
			t.server = *r.Server
		}
		out = append(out, t)
	}
	return out
}

// writeByStrategy writes the matrix grouped so that differences read at a
// glance: one row per strategy x client, one group of columns per target
// (throughput, p99, immortal keys, over-admission).
func writeByStrategy(buf *bytes.Buffer, rep *Report, targets []reportTarget) {
	type key struct{ strategy, client string }
	var rows []key
	cells := map[key]map[string]Run{}
	for _, r := range rep.Runs {
		k := key{r.Strategy, r.Client}
		if cells[k] == nil {
			cells[k] = map[string]Run{}
			rows = append(rows, k)
		}
		cells[k][r.Target] = r
	}
	buf.WriteString("\nby strategy (thr/s, p99, immortal, over per target):\n")
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "strategy\tclient")
	for _, t := range targets {
		fmt.Fprintf(tw, "\t%s\t\t\t", t.label)
	}
	fmt.Fprintln(tw)
	for _, k := range rows {
		fmt.Fprintf(tw, "%s\t%s", k.strategy, k.client)
		for _, t := range targets {
			r, ok := cells[k][t.label]
			if !ok {
				fmt.Fprint(tw, "\t-\t-\t-\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%s/s\t%s\t%d\t%s", strconv.FormatFloat(r.ThroughputPerS, 'f', 0, 64), FormatUS(r.LatencyUS.P99), r.Audit.Immortal, overText(r))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// FormatErrorKinds lists error counts by kind as "kind=n", most frequent
// first, ties by name, joined by sep: "timeout=3 conn-reset=1".
func FormatErrorKinds(kinds map[string]int64, sep string) string {
	names := slices.Collect(maps.Keys(kinds))
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(kinds[b], kinds[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for i, k := range names {
		names[i] = k + "=" + strconv.FormatInt(kinds[k], 10)
	}
	return strings.Join(names, sep)
}

// FormatUS formats a latency given in microseconds: "183µs", "1.2ms",
// "45.3ms", "183ms", "2.50s".
func FormatUS(us float64) string {
	switch {
	case us < 999.5:
		return strconv.FormatFloat(us, 'f', 0, 64) + "µs"
	case us < 99_950:
		return strconv.FormatFloat(us/1e3, 'f', 1, 64) + "ms"
	case us < 999_500:
		return strconv.FormatFloat(us/1e3, 'f', 0, 64) + "ms"
	default:
		return strconv.FormatFloat(us/1e6, 'f', 2, 64) + "s"
	}
}

// JSON returns a reporter that writes rep as indented JSON, followed by a
// newline.
func JSON(rep *Report) Reporter {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("json report: encode: %w", err)
		}
		return nil
	}
}

// Progress formats the one-line live progress display, without a newline,
// e.g. "lua/rueidis  3s  41203/s  allowed 1234  rejected 40000  errors 0".
// elapsed is truncated to whole seconds and perSecond rounded to a whole
// number of decisions per second.
func Progress(label string, elapsed time.Duration, t Totals, perSecond float64) string {
	return fmt.Sprintf("%s  %s  %s/s  allowed %d  rejected %d  errors %d",
		label, elapsed.Truncate(time.Second), strconv.FormatFloat(perSecond, 'f', 0, 64),
		t.Allowed, t.Rejected, t.Errors)
}
