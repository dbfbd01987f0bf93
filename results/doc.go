// Package results records and reports rlbench runs. It is the data model
// every other package writes into or reads from, and imports none of them:
// no Redis client, none of rlbench's measuring packages.
//
// A Recorder collects decisions from many concurrent workers: each worker
// records into one of a fixed number of shards, so there is no single lock on
// the hot path and memory stays bounded however many workers there are. At the
// end of a cell, NewRun turns a Recorder into a Run's Load and Distribution;
// the other groups of a Run (see Run) come from the packages that measure
// them, and a Report groups the runs of one invocation.
//
// Reporters write a Report somewhere: Text for the human summary, JSON for
// machines, HGRM for HdrHistogram's plotter. Progress formats the live
// one-line progress display. ReadFile and ReadReport read a report back,
// bounded (MaxReportBytes) and checked (Validate): compare, merge, report
// and bench-peers all read through them.
package results
