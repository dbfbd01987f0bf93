// Package results records and reports rlbench runs.
//
// A Recorder collects decisions from many concurrent workers: each worker
// records into one of a fixed number of shards, so there is no single lock on
// the hot path and memory stays bounded however many workers there are. At the
// end of a run, NewRun turns a Recorder into a Run (counters, throughput and a
// latency summary), and a Report groups the runs made against one server.
//
// Reporters write a Report somewhere: Text for the human summary, JSON for
// machines. Progress formats the live one-line progress display.
package results
