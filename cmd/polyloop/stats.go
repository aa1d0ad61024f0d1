package main

import (
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
)

// The statistics are the shared ones (internal/runstats), which polyloop
// view draws too.
type (
	groupStats = runstats.Group
	dist       = runstats.Dist
	runSummary = polyloop.RunSummary
)

// stopReasons in the order statistics print them.
var stopReasons = runstats.StopReasons

// computeStats groups runs (by "agent", "snapshot", or "" for one group
// "all"; "hash" needs the runs' agent hashes: runstats.KeyBy) and
// summarizes each group, in order of first appearance.
func computeStats(runs []runSummary, by string) []*groupStats {
	return runstats.Compute(runs, runstats.KeyBy(by, nil))
}
