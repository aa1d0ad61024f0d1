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
