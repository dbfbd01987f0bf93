package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The stamps of Options.WindowStamp: how a key's name holds its window.
// They are spelled as package strategies spells Info.Stamp.
const (
	// StampUnix: the window's start, in Unix seconds (envoy-ratelimit).
	StampUnix = "unix"
	// StampUnixMS: the window's start, in Unix milliseconds (kong).
	StampUnixMS = "unix-ms"
	// StampUnixNS: the window's start, in Unix nanoseconds (mennanov).
	StampUnixNS = "unix-ns"
	// StampIndex: the window's number, its start in Unix seconds divided
	// by the window (rack-attack).
	StampIndex = "index"
)

// Stamps are the values Options.WindowStamp accepts.
var Stamps = []string{StampUnix, StampUnixMS, StampUnixNS, StampIndex}

// DefaultStaleMemory is the command's Options.StaleMemory: how many stale
// keys it reads MEMORY USAGE of.
const DefaultStaleMemory = 100

// Errors of the stamped audit, returned, wrapped, by Scan and Validate.
var (
	// ErrInvalidWindowStamp: Options.WindowStamp is not one of Stamps.
	ErrInvalidWindowStamp = fmt.Errorf("window stamp must be one of %s", strings.Join(Stamps, ", "))
	// ErrInvalidWindow: Options.Window is not a whole number of seconds
	// >= 1 with WindowStamp, or is set without it.
	ErrInvalidWindow = errors.New("window must be a whole number of seconds >= 1, given with a window stamp (and only with one)")
	// ErrInvalidStaleMemory: Options.StaleMemory is outside 0..MaxSample,
	// or set without WindowStamp.
	ErrInvalidStaleMemory = fmt.Errorf("stale memory sample must be between 0 and %d, with a window stamp", MaxSample)
)

// validateStamp checks the stamped audit's options.
func (o Options) validateStamp() error {
	switch {
	case o.WindowStamp != "" && !slices.Contains(Stamps, o.WindowStamp):
		return fmt.Errorf("%w, got %q", ErrInvalidWindowStamp, o.WindowStamp)
	case (o.WindowStamp != "") != (o.Window != 0) || o.Window < 0 || o.Window%time.Second != 0:
		return fmt.Errorf("%w, got %s", ErrInvalidWindow, o.Window)
	case o.StaleMemory < 0 || o.StaleMemory > MaxSample || o.StaleMemory > 0 && o.WindowStamp == "":
		return fmt.Errorf("%w, got %d", ErrInvalidStaleMemory, o.StaleMemory)
	}
	return nil
}

// StaleFindings split the immortal keys of a stamped audit
// (Options.WindowStamp) by the window their name holds; nil, and left out
// of the JSON, without it. Stale + Unstamped <= Immortal: the other
// immortal keys are live.
type StaleFindings struct {
	// Stale is the number of immortal keys whose window, read from their
	// name, has ended when the audit read their PTTL: no limiter uses
	// them again, so nobody is locked out by them, and nothing will
	// delete them (leaked memory). LockedOut never counts them.
	Stale int64 `json:"stale"`
	// Unstamped is the number of immortal keys whose name holds no number
	// that can be a stamp (no digits, more than an int64, or a window
	// ending after the year 9999): counted as live, not stale.
	Unstamped int64 `json:"unstamped"`
	// StaleMemorySampled is the number of stale keys whose MEMORY USAGE
	// was read (Options.StaleMemory), StaleMemorySampleBytes their sum,
	// in bytes.
	StaleMemorySampled     int64 `json:"stale_memory_sampled,omitempty"`
	StaleMemorySampleBytes int64 `json:"stale_memory_sample_bytes,omitempty"`
	// StaleMemoryBytes is an estimate of the memory the stale keys hold,
	// in bytes: the sample's mean times Stale. 0 when nothing was
	// sampled.
	StaleMemoryBytes int64 `json:"stale_memory_bytes_est,omitempty"`
}

// add adds o's counts to f, and estimates the memory again.
func (f *StaleFindings) add(o *StaleFindings) {
	if o == nil {
		return
	}
	f.Stale += o.Stale
	f.Unstamped += o.Unstamped
	f.StaleMemorySampled += o.StaleMemorySampled
	f.StaleMemorySampleBytes += o.StaleMemorySampleBytes
	f.estimate()
}

// estimate scales the memory sample to every stale key.
func (f *StaleFindings) estimate() {
	f.StaleMemoryBytes = 0
	if f.StaleMemorySampled > 0 {
		f.StaleMemoryBytes = int64(float64(f.StaleMemorySampleBytes) / float64(f.StaleMemorySampled) * float64(f.Stale))
	}
}

// maxStampUnix bounds the windows a stamp may name: 9999-12-31T23:59:59Z,
// beyond which a number is not taken for a stamp.
const maxStampUnix = 253402300799

// windowEnd returns when the window that key's name holds ends: its last
// run of digits read as stamp, of windows window long (whole seconds).
// ok is false when the name holds no such number.
func windowEnd(key, stamp string, window time.Duration) (end time.Time, ok bool) {
	stop := len(key)
	for stop > 0 && !isDigit(key[stop-1]) {
		stop--
	}
	start := stop
	for start > 0 && isDigit(key[start-1]) {
		start--
	}
	n, err := strconv.ParseInt(key[start:stop], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var begin time.Time
	switch w := int64(window / time.Second); stamp {
	case StampUnix:
		begin = time.Unix(n, 0)
	case StampUnixMS:
		begin = time.UnixMilli(n)
	case StampUnixNS:
		begin = time.Unix(0, n)
	case StampIndex:
		if n > maxStampUnix/w {
			return time.Time{}, false
		}
		begin = time.Unix(n*w, 0)
	default:
		return time.Time{}, false
	}
	if begin.Unix() > maxStampUnix-int64(window/time.Second) {
		return time.Time{}, false
	}
	return begin.Add(window), true
}

// stamped counts the batch's immortal keys (those the field audit left
// immortal) as stale or unstamped, or neither (live), by the clock now,
// marks the stale ones, and reads the memory of some (Options.StaleMemory).
func (a *auditor) stamped(ctx context.Context, n Node, nr *NodeReport) error {
	now := time.Now()
	for i := range a.immortal {
		k := &a.immortal[i]
		end, ok := windowEnd(k.key, a.o.WindowStamp, a.o.Window)
		switch {
		case !ok:
			nr.Unstamped++
			k.unstamped = true
		case !now.Before(end):
			nr.Stale++
			k.stale = true
		}
	}
	if a.o.StaleMemory > a.memorySampled {
		return a.staleMemory(ctx, n, nr)
	}
	return nil
}

// staleMemory reads the MEMORY USAGE of the batch's stale keys, one
// pipeline, until Options.StaleMemory keys of the audit have been read.
// A key gone in between, or a reply refused (a user without
// memory|usage), is left out of the sample.
func (a *auditor) staleMemory(ctx context.Context, n Node, nr *NodeReport) error {
	var stale []string
	for _, k := range a.immortal {
		if k.stale && a.memorySampled+len(stale) < a.o.StaleMemory {
			stale = append(stale, k.key)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	usage := make([]*redis.IntCmd, len(stale))
	cmds, err := a.read(ctx, n, &a.lat[2], func(pipe redis.Pipeliner) {
		for i, key := range stale {
			usage[i] = pipe.MemoryUsage(ctx, key)
		}
	})
	if err != nil && !allReplies(cmds) {
		return pipelineError(cmds, err)
	}
	a.memorySampled += len(stale)
	for _, u := range usage {
		if b, err := u.Result(); err == nil {
			nr.StaleMemorySampled++
			nr.StaleMemorySampleBytes += b
		}
	}
	return nil
}

// allReplies reports whether every command of a pipeline got a reply
// from the server (an error reply included): the pipeline's error is then
// a command's, not the connection's.
func allReplies(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			var rerr redis.Error
			if !errors.As(err, &rerr) {
				return false
			}
		}
	}
	return len(cmds) > 0
}
