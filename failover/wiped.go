package failover

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/results"
)

// ErrServerRestarted is returned, wrapped, by Wiped when a cell's server
// restarted during it (INFO run_id changed between its connection and the
// end of its load) with no restart fault asked for: its counters started
// again from zero, so the cell's figures do not measure the limiter. The
// other cells still run; the run fails.
var ErrServerRestarted = errors.New("the server restarted during the cell")

// ErrCountersWiped is returned, wrapped, by Wiped when a cell's counters
// went below the increments its clients were told of (lost increments)
// with no fault asked for that loses increments: another client deleted
// them, the server evicted them, or it restarted unseen. The other cells
// still run; the run fails.
var ErrCountersWiped = errors.New("the server's counters went below what the clients were told")

// Wiped returns ErrServerRestarted, wrapped with restarted (which servers,
// their run_ids: saturation.Probe.Restarted), when restarted is not "",
// or ErrCountersWiped when lost has lost increments; and says so in lost's
// Error. It returns nil when neither, and when one of fs explains it: a
// restart, a failover, a sentinel-failover or a split-brain.
func Wiped(fs []faults.Fault, restarted string, lost *results.LostIncrements) error {
	if slices.ContainsFunc(fs, func(f faults.Fault) bool {
		return f.Kind == faults.Restart || f.Kind == faults.Failover || f.Kind == faults.SentinelFailover || f.Kind == faults.SplitBrain
	}) {
		return nil
	}
	var err error
	switch {
	case restarted != "":
		err = fmt.Errorf("%w: %s: its counters started again from zero, so the cell's allowed, over-admitted and lost-increment figures do not measure the limiter", ErrServerRestarted, restarted)
	case lost != nil && lost.Increments > 0:
		err = fmt.Errorf("%w: %d increments lost on %d keys, with no fault asked for that loses any: another client deleted the counters, the server evicted them (maxmemory), or it restarted between two readings", ErrCountersWiped, lost.Increments, lost.Keys)
	default:
		return nil
	}
	if lost != nil {
		lost.Error = err.Error()
	}
	return err
}
