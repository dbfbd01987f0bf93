package audit

import (
	"time"
)

// Findings are the counts of one audit, of one node or of all. Keys
// includes every key counted elsewhere, and Keys = WithTTL + Immortal +
// Vanished + ExpiringByFields + Changed.
type Findings struct {
	// Matched is the number of keys SCAN returned that matched (under the
	// prefix), each time it returned them: Keys, and the keys Options.Dedup
	// left out as seen before. 0 means the audit looked at nothing.
	Matched int64 `json:"matched"`
	// Keys is the number of keys examined: returned by SCAN (and under
	// the prefix), each read with PTTL.
	Keys int64 `json:"keys"`
	// WithTTL is the number of keys that had a TTL.
	WithTTL int64 `json:"with_ttl"`
	// Immortal is the number of keys with no TTL (PTTL -1).
	Immortal int64 `json:"immortal"`
	// Vanished is the number of keys that had expired or been deleted
	// between SCAN and PTTL (PTTL -2).
	Vanished int64 `json:"vanished"`
	// TTLOverMax is the number of keys whose PTTL exceeded Options.MaxTTL;
	// 0 without MaxTTL.
	TTLOverMax int64 `json:"ttl_over_max"`
	// TTL is the distribution of the keys that had a TTL.
	TTL Buckets `json:"ttl_distribution"`
	// LockedOut is the number of immortal string counters whose value was
	// at or above Options.Limit: users locked out for good. 0 without Limit.
	LockedOut int64 `json:"locked_out"`
	// Fixed is the number of immortal keys Options.FixTTL gave a TTL.
	Fixed int64 `json:"fixed"`
	// FixSkipped is the number of immortal keys Options.FixTTL left alone
	// because they had gained a TTL since their PTTL was read. Immortal =
	// Fixed + FixSkipped + FixLeftOut + FixRecords after a fix.
	FixSkipped int64 `json:"fix_skipped"`
	// FixLeftOut is the number of immortal keys Options.FixTTL (or its
	// dry run) left out because they lie under a live run's claim
	// (Report.Claims): that run's keys, mid-measurement.
	FixLeftOut int64 `json:"fix_left_out"`
	// FixRecords is the number of immortal keys Options.FixTTL (or its
	// dry run) left out because they are a run's records of an ACL user
	// or a library (keyspace.ObjectKey), which rlbench cleanup needs.
	FixRecords int64 `json:"fix_records,omitempty"`
	// Changed is the number of keys that had no TTL when their PTTL was
	// read and were another type, or gone, when the audit read them next:
	// a hash the field audit found replaced or deleted (FieldFindings.
	// HashesChanged), a key Options.FixTTL found so (never given a TTL).
	// Immortal does not count them.
	Changed int64 `json:"changed"`
	// WouldFix is the number of immortal keys a dry run would have given
	// a TTL.
	WouldFix int64 `json:"would_fix"`
	// Deleted is the number of keys UNLINK deleted (Options.Unlink).
	Deleted int64 `json:"deleted"`
	// Types counts keys per type, with Options.Types; nil otherwise.
	Types map[string]*TypeCount `json:"types,omitempty"`
	FieldFindings
	// StaleFindings split the immortal keys by their window, with
	// Options.WindowStamp; nil otherwise.
	*StaleFindings
}

// FieldFindings are the counts of the field audit (Options.Fields); all 0
// without it, and then left out of the JSON. Fields = FieldsWithTTL +
// ImmortalFields + FieldsVanished.
type FieldFindings struct {
	// Hashes is the number of hashes whose fields were read.
	Hashes int64 `json:"hashes,omitempty"`
	// Fields is the number of hash fields examined: returned by HSCAN, each
	// read with HPTTL.
	Fields int64 `json:"fields,omitempty"`
	// FieldsWithTTL is the number of fields that had a TTL.
	FieldsWithTTL int64 `json:"fields_with_ttl,omitempty"`
	// ImmortalFields is the number of fields with no TTL (HPTTL -1).
	ImmortalFields int64 `json:"immortal_fields,omitempty"`
	// FieldsVanished is the number of fields that had expired or been
	// deleted between HSCAN and HPTTL (HPTTL -2).
	FieldsVanished int64 `json:"fields_vanished,omitempty"`
	// FieldTTLOverMax is the number of fields whose PTTL exceeded
	// Options.MaxTTL; 0 without MaxTTL.
	FieldTTLOverMax int64 `json:"field_ttl_over_max,omitempty"`
	// HashesExpired is the number of hashes whose fields had all expired
	// when they were read: HSCAN found none, or HPTTL found every one gone,
	// and the key was still a hash.
	HashesExpired int64 `json:"hashes_expired,omitempty"`
	// HashesChanged is the number of hashes (by their TYPE) that were
	// another type (WRONGTYPE) or gone when their fields were read, with
	// no live field seen: what they held is unknown. Those with no key TTL
	// count in Findings.Changed, not in Immortal or ExpiringByFields.
	HashesChanged int64 `json:"hashes_changed,omitempty"`
	// ExpiringByFields is the number of hashes with no key TTL whose every
	// field has a TTL (or is gone): not immortal, they go away with their
	// last field. Keys counts them; Immortal does not.
	ExpiringByFields int64 `json:"expiring_by_fields,omitempty"`
}

// add adds o's counts to f.
func (f *FieldFindings) add(o FieldFindings) {
	f.Hashes += o.Hashes
	f.Fields += o.Fields
	f.FieldsWithTTL += o.FieldsWithTTL
	f.ImmortalFields += o.ImmortalFields
	f.FieldsVanished += o.FieldsVanished
	f.FieldTTLOverMax += o.FieldTTLOverMax
	f.HashesExpired += o.HashesExpired
	f.HashesChanged += o.HashesChanged
	f.ExpiringByFields += o.ExpiringByFields
}

// TypeCount counts the keys of one type.
type TypeCount struct {
	// Keys is the number of keys of the type examined.
	Keys int64 `json:"keys"`
	// Immortal is how many of them had no TTL.
	Immortal int64 `json:"immortal"`
}

// Buckets is a distribution of TTLs in ranges a person reads at a glance.
// Each bucket holds the TTLs below its bound and at or above the previous
// bucket's.
type Buckets struct {
	// Under1s counts TTLs under 1 second.
	Under1s int64 `json:"lt_1s"`
	// Under10s counts TTLs from 1 s to under 10 s.
	Under10s int64 `json:"lt_10s"`
	// Under1m counts TTLs from 10 s to under 1 minute.
	Under1m int64 `json:"lt_1m"`
	// Under10m counts TTLs from 1 minute to under 10 minutes.
	Under10m int64 `json:"lt_10m"`
	// Under1h counts TTLs from 10 minutes to under 1 hour.
	Under1h int64 `json:"lt_1h"`
	// Under1d counts TTLs from 1 hour to under 1 day.
	Under1d int64 `json:"lt_1d"`
	// AtLeast1d counts TTLs of 1 day or more.
	AtLeast1d int64 `json:"ge_1d"`
}

// BucketLabels name the buckets of Buckets, in the order of Counts.
var BucketLabels = [7]string{"<1s", "<10s", "<1m", "<10m", "<1h", "<1d", ">=1d"}

// bucketBounds are the upper bounds of the first six buckets.
var bucketBounds = [6]time.Duration{time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour, 24 * time.Hour}

// Counts returns the buckets in the order of BucketLabels.
func (b Buckets) Counts() [7]int64 {
	return [7]int64{b.Under1s, b.Under10s, b.Under1m, b.Under10m, b.Under1h, b.Under1d, b.AtLeast1d}
}

// slots returns b's counters in the order of BucketLabels.
func (b *Buckets) slots() [7]*int64 {
	return [7]*int64{&b.Under1s, &b.Under10s, &b.Under1m, &b.Under10m, &b.Under1h, &b.Under1d, &b.AtLeast1d}
}

// add counts one TTL.
func (b *Buckets) add(ttl time.Duration) {
	slots := b.slots()
	for i, bound := range bucketBounds {
		if ttl < bound {
			*slots[i]++
			return
		}
	}
	*slots[6]++
}

// addAll adds o's counts to b.
func (b *Buckets) addAll(o Buckets) {
	for i, n := range o.Counts() {
		*b.slots()[i] += n
	}
}

// add adds o's counts to f.
func (f *Findings) add(o Findings) {
	f.Matched += o.Matched
	f.Keys += o.Keys
	f.WithTTL += o.WithTTL
	f.Immortal += o.Immortal
	f.Vanished += o.Vanished
	f.TTLOverMax += o.TTLOverMax
	f.TTL.addAll(o.TTL)
	f.LockedOut += o.LockedOut
	f.Fixed += o.Fixed
	f.FixSkipped += o.FixSkipped
	f.FixLeftOut += o.FixLeftOut
	f.FixRecords += o.FixRecords
	f.Changed += o.Changed
	f.WouldFix += o.WouldFix
	f.Deleted += o.Deleted
	f.FieldFindings.add(o.FieldFindings)
	if o.StaleFindings != nil {
		if f.StaleFindings == nil {
			f.StaleFindings = &StaleFindings{}
		}
		f.StaleFindings.add(o.StaleFindings)
	}
	for name, c := range o.Types {
		if f.Types == nil {
			f.Types = map[string]*TypeCount{}
		}
		t := f.Types[name]
		if t == nil {
			t = &TypeCount{}
			f.Types[name] = t
		}
		t.Keys += c.Keys
		t.Immortal += c.Immortal
	}
}

// Sample describes one immortal key.
type Sample struct {
	// Node is the address of the node that holds the key.
	Node string `json:"node,omitempty"`
	// Key is the key's name. Its JSON is the name as is when it is valid
	// UTF-8; otherwise each invalid byte is U+FFFD there, and KeyB64 holds
	// the name.
	Key string `json:"key"`
	// KeyB64 is the key's name in standard base64 (RFC 4648, padded) when
	// it is not valid UTF-8, "" otherwise; ReadReportFile restores Key
	// from it.
	KeyB64 string `json:"key_b64,omitempty"`
	// Type is the key's type ("string", "hash", ...), or "none" when it
	// vanished before it was described.
	Type string `json:"type"`
	// Value is the start of a string's value (at most 64 bytes), nil for
	// other types. When it is not valid UTF-8, ValueB64 holds it, as
	// KeyB64 holds Key.
	Value *string `json:"value,omitempty"`
	// ValueB64 is Value in standard base64 when it is not valid UTF-8.
	ValueB64 string `json:"value_b64,omitempty"`
	// IdleS is OBJECT IDLETIME, in seconds: how long since the key was
	// last read or written. Nil where the server does not track it (an
	// LFU maxmemory policy), where it is not the key's (IdleShared), and
	// for a hash under Options.Fields, whose fields the audit has just
	// read.
	IdleS *int64 `json:"idle_s,omitempty"`
	// IdleShared is set for a value that is one object shared by every key
	// that holds it (OBJECT REFCOUNT 2147483647: an integer from 0 to 9999
	// under no maxmemory or a policy other than LRU or LFU; without
	// permission for OBJECT REFCOUNT, any string holding such an integer):
	// OBJECT IDLETIME then tells that object's idle time (Redis 7.0: since
	// any of those keys was last read; 7.4: since it was last read, or the
	// server's start), not the key's, and IdleS is left out.
	IdleShared bool `json:"idle_shared,omitempty"`
}

// NodeReport is the Findings of one node.
type NodeReport struct {
	// Addr is the node's host:port, or "" when its client does not say.
	Addr string `json:"addr"`
	// DBSize is the node's DBSIZE when the audit started, -1 if unread
	// (Options.Sizes).
	DBSize int64 `json:"dbsize"`
	// Complete is false when the audit of this node did not finish.
	Complete bool `json:"complete"`
	Findings
}

// Latency summarizes the audit's own round trips of one kind, in
// microseconds, as the client saw them.
type Latency struct {
	// N is the number of round trips.
	N int64 `json:"n"`
	// P50US, P99US and MaxUS are percentiles of the round-trip time, in µs.
	P50US float64 `json:"p50_us"`
	P99US float64 `json:"p99_us"`
	MaxUS float64 `json:"max_us"`
}

// Cost is what the audit cost the server, as the client measured it.
type Cost struct {
	// Scan is the latency of each SCAN.
	Scan Latency `json:"scan"`
	// Pipeline is the latency of each pipeline of PTTLs (with TYPE and
	// UNLINK where asked), one per SCAN batch, and of the field audit's
	// HSCAN and HPTTL pipelines (Options.Fields).
	Pipeline Latency `json:"pipeline"`
	// Detail is the latency of each pipeline that reads values, samples or
	// fixes immortal keys.
	Detail Latency `json:"detail"`
}

// Report is the outcome of Scan. Its JSON is the file `rlbench audit
// --json` writes.
type Report struct {
	// Tool is ReportTool, so that a reader can tell an audit file from a
	// load run's report.
	Tool string `json:"tool"`
	// Started is when the audit started, in UTC.
	Started time.Time `json:"started"`
	// Match is the SCAN MATCH pattern ("*" for every key; "" in a file
	// written before it said so).
	Match string `json:"match"`
	// Type is the SCAN TYPE filter, "" for none.
	Type string `json:"type,omitempty"`
	// Claims are the live runs' claims found before a fix
	// (Options.FixTTL): the keys under their prefixes were left out of
	// it (FixLeftOut).
	Claims []Claim `json:"claims,omitempty"`
	// Servers says which server each node was, in the order of the
	// nodes: address, db, version, run_id and role, as INFO said when the
	// node's audit began. A node whose INFO could not be read has only
	// its address.
	Servers []Server `json:"servers"`
	// Settings are the Options that shape the figures.
	Settings Settings `json:"settings"`
	// Complete is true when every node was scanned to the end.
	Complete bool `json:"complete"`
	// Error says why the audit stopped early; "" when Complete.
	Error string `json:"error,omitempty"`
	// ElapsedS is the audit's duration, in seconds.
	ElapsedS float64 `json:"elapsed_s"`
	// KeysPerS is Keys / ElapsedS.
	KeysPerS float64 `json:"keys_per_s"`
	// Findings are the totals over every node.
	Findings
	// PerNode holds each node's Findings, in the order the nodes were
	// given; omitted for a single node.
	PerNode []NodeReport `json:"audit_per_node,omitempty"`
	// Cost is the audit's own command latency.
	Cost Cost `json:"latency"`
	// ImmortalSample describes up to Options.Sample immortal keys.
	ImmortalSample []Sample `json:"immortal_sample"`
	// LockedOutSample describes up to Options.Sample locked-out counters.
	LockedOutSample []Sample `json:"locked_out_sample"`
}

// Settings are the Options recorded in a Report.
type Settings struct {
	// Count is the SCAN COUNT hint.
	Count int64 `json:"count"`
	// Rate is the cap in keys per second, 0 for none.
	Rate float64 `json:"rate"`
	// MaxTTLS is Options.MaxTTL in seconds, 0 for no check.
	MaxTTLS float64 `json:"max_ttl_s"`
	// Limit is Options.Limit, 0 for no check.
	Limit int64 `json:"limit"`
	// Sample is Options.Sample.
	Sample int `json:"sample"`
	// FixTTLS is Options.FixTTL in seconds, 0 for no fix.
	FixTTLS int64 `json:"fix_ttl_s"`
	// DryRun is Options.DryRun.
	DryRun bool `json:"dry_run"`
	// Fields is Options.Fields; left out when false.
	Fields bool `json:"fields,omitempty"`
	// WindowStamp is Options.WindowStamp, WindowS Options.Window in
	// seconds, StaleMemory Options.StaleMemory; left out when not set.
	WindowStamp string `json:"window_stamp,omitempty"`
	WindowS     int64  `json:"window_s,omitempty"`
	StaleMemory int    `json:"stale_memory_sample,omitempty"`
}

// ReportTool is the Tool of every audit Report.
const ReportTool = "rlbench audit"
