package bench

import (
	"fmt"
	"slices"
)

// The targets of the issue that defines W are set at its standard sizes:
// S=DefaultSteps for the single-run, resume, memory and bytes figures, and
// TargetConcurrency runs of DefaultConcurrentSteps for throughput. Each
// figure carries its target when it was measured at the target's own size,
// whatever the other sizes of the report.

// TargetConcurrency is the number of concurrent runs the throughput target
// is set for.
const TargetConcurrency = 64

// TargetPeakRSSBytes is the peak-RSS target: 20 MB, decimal (20×10⁶ bytes).
const TargetPeakRSSBytes = 20e6

// figureTargets attaches targets when they apply.
type figureTargets struct{ on bool }

func (t figureTargets) apply(f Figure, op string, value float64) Figure {
	if !t.on {
		return f
	}
	return f.withTarget(op, value)
}

// targetsAt: the targets of figures of runs of steps steps apply at
// S=DefaultSteps.
func targetsAt(steps int) figureTargets { return figureTargets{on: steps == DefaultSteps} }

// concurrencyTargetsAt: the throughput target applies to TargetConcurrency
// runs of DefaultConcurrentSteps steps.
func concurrencyTargetsAt(runs, steps int) figureTargets {
	return figureTargets{on: runs == TargetConcurrency && steps == DefaultConcurrentSteps}
}

// concurrencyTarget is the throughput target of a store, in steps per
// second.
func concurrencyTarget(spec storeSpec) (float64, bool) {
	switch spec.kind {
	case kindSQLite:
		return 10000, true
	case kindPostgres:
		return 5000, true
	}
	return 0, false
}

// targetNotes say which targets a report cannot show or judge.
func targetNotes(o Options) []string {
	var notes []string
	if o.Steps != DefaultSteps {
		notes = append(notes, fmt.Sprintf("S=%d is not the standard S=%d: the single-run, resume, memory and bytes targets are not shown",
			o.Steps, DefaultSteps))
	}
	if o.ConcurrentSteps != DefaultConcurrentSteps || !slices.Contains(o.Concurrency, TargetConcurrency) {
		notes = append(notes, fmt.Sprintf("no %d concurrent runs of S=%d: the throughput target is not shown",
			TargetConcurrency, DefaultConcurrentSteps))
	}
	if o.Reps < MinRepsForVerdict {
		notes = append(notes, fmt.Sprintf("%d repetitions: targets are shown without a verdict (n<%d)",
			o.Reps, MinRepsForVerdict))
	}
	return notes
}
