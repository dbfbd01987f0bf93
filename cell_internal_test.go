package rlbench

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/saturation"
	"github.com/rlbench/rlbench/target"
)

// TestSaturationNeedsOneServer checks that the self-check is left out when
// the readings come from another server process behind the same address
// (a Sentinel master failed over by hand: the admin connection follows it)
// and kept when they come from the same one.
func TestSaturationNeedsOneServer(t *testing.T) {
	t.Parallel()
	at := time.Now()
	reading := func(runID string, cpu time.Duration, when time.Duration) target.ServerSamples {
		return target.ServerSamples{Addrs: []string{"FailoverClient"}, Samples: []saturation.Sample{{At: at.Add(when), ServerCPU: cpu, ServerRunID: runID, ProcessCPUs: 1}}}
	}
	c := &cell{}
	same := &measurement{connected: reading("a", 0, 0), before: reading("a", 0, 0), after: reading("a", time.Second, 2*time.Second)}
	if c.saturation(same, 1) == nil {
		t.Errorf("saturation(one server) = nil; want a report")
	}
	failedOver := &measurement{connected: reading("a", 0, 0), before: reading("a", 0, 0), after: reading("b", time.Second, 2*time.Second)}
	if r := c.saturation(failedOver, 1); r != nil {
		t.Errorf("saturation(another server after the load) = %+v; want nil", *r)
	}
}
