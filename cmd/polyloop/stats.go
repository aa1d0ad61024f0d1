package main

import (
	"github.com/polyloop/polyloop/internal/runstats"
)

// The statistics are the shared ones (internal/runstats), which polyloop
// view draws too.
type (
	groupStats = runstats.Group
	dist       = runstats.Dist
)

// stopReasons in the order statistics print them.
var stopReasons = runstats.StopReasons

// computeStats groups runs (by "agent", "hash", or "" for one group "all")
// and summarizes each group, in order of first appearance.
var computeStats = runstats.Compute
