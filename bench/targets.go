package bench

import (
	"fmt"
	"slices"
)

// The goals of the issue that sets PolyLoop's performance figures (twice
// the best peer on each, close to the disk's floor). Each is set at a
// standard size: S=DefaultSteps for the single-run, floor-ratio, resume,
// memory and bytes figures, and TargetConcurrency runs of
// DefaultConcurrentSteps for throughput. A figure carries its goal when it
// was measured at the goal's own size, whatever the other sizes of the
// report.

// goal is one row of the table: what is measured and the bound its
// median should meet.
type goal struct {
	row   string
	op    string
	value float64
}

var (
	goalMemoryTime = goal{"in-memory µs/step, S=1000", "<=", 4} // issue 36 (was 5, issue 25)
	// goalFloorRatio bounds a durable run's time per step over two floors
	// (two commits per step): fsync for SQLite, the commit round trip for
	// PostgreSQL.
	goalFloorRatio       = goal{"durable µs/step ÷ (2 × floor)", "<=", 1.5}
	goalThroughputSQLite = goal{"64 runs × 50 steps, steps/s", ">=", 30000}
	goalThroughputPG     = goal{"64 runs × 50 steps, steps/s", ">=", 8000}
	goalResume           = goal{"resume, process start → first new model call, 1000-step log", "<=", 15}
	goalPeakRSS          = goal{"peak RSS, `polyloop run`-style process, S=1000", "<=", TargetPeakRSSBytes / 1e6}
	goalBytes            = goal{"bytes stored per step (encoded records)", "<=", 1024}
	goalCommits          = goal{"commits per step", "==", 2}
)

// goalRows are the rows of the table, in its order.
var goalRows = []string{
	goalMemoryTime.row, goalFloorRatio.row, goalThroughputSQLite.row, goalResume.row,
	goalPeakRSS.row, goalBytes.row, goalCommits.row,
}

// goalRank is the place of a row in the table (past its end for
// another).
func goalRank(row string) int {
	if i := slices.Index(goalRows, row); i >= 0 {
		return i
	}
	return len(goalRows)
}

// TargetConcurrency is the number of concurrent runs the throughput goal is
// set for.
const TargetConcurrency = 64

// TargetPeakRSSBytes is the peak-RSS goal: 25 MB, decimal (25×10⁶ bytes).
const TargetPeakRSSBytes = 25e6

// figureTargets attaches goals when they apply.
type figureTargets struct{ on bool }

func (t figureTargets) apply(f Figure, g goal) Figure {
	if !t.on {
		return f
	}
	f = f.withTarget(g.op, g.value)
	f.Target.Goal = g.row
	return f
}

// targetsAt: the goals of figures of runs of steps steps apply at
// S=DefaultSteps.
func targetsAt(steps int) figureTargets { return figureTargets{on: steps == DefaultSteps} }

// concurrencyTargetsAt: the throughput goal applies to TargetConcurrency
// runs of DefaultConcurrentSteps steps.
func concurrencyTargetsAt(runs, steps int) figureTargets {
	return figureTargets{on: runs == TargetConcurrency && steps == DefaultConcurrentSteps}
}

// concurrencyGoal is the throughput goal of a store.
func concurrencyGoal(spec storeSpec) (goal, bool) {
	switch spec.kind {
	case kindSQLite:
		return goalThroughputSQLite, true
	case kindPostgres:
		return goalThroughputPG, true
	}
	return goal{}, false
}

// targetNotes say which goals a report cannot show or judge.
func targetNotes(o Options) []string {
	var notes []string
	if o.Steps != DefaultSteps {
		notes = append(notes, fmt.Sprintf("S=%d is not the standard S=%d: the single-run, floor-ratio, resume, memory and bytes goals are not shown",
			o.Steps, DefaultSteps))
	}
	if o.ConcurrentSteps != DefaultConcurrentSteps || !slices.Contains(o.Concurrency, TargetConcurrency) {
		notes = append(notes, fmt.Sprintf("no %d concurrent runs of S=%d: the throughput goal is not shown",
			TargetConcurrency, DefaultConcurrentSteps))
	}
	if o.Reps < MinRepsForVerdict {
		notes = append(notes, fmt.Sprintf("%d repetitions: goals are shown without a verdict (n<%d)",
			o.Reps, MinRepsForVerdict))
	}
	return notes
}
