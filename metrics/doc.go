// Package metrics serves a run's live figures to Prometheus (rlbench
// --metrics-addr): each cell's decisions by outcome and error kind, its
// latency histogram (native, with classic buckets beside it), the
// decisions in flight, the periodic audit's immortal count, and the faults
// injected, as they happen.
//
// An Exporter reads each cell's results.Recorder when it is scraped, not
// when a decision is recorded: the recorder's hot path takes no lock and
// makes no allocation for it. What a scrape at the end of a cell reads is
// what the cell's results.Run counts.
package metrics
