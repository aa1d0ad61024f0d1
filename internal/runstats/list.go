package runstats

import (
	"context"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/trajectory"
)

// Store is what List reads.
type Store interface {
	polyloop.Store
	polyloop.RunLister
}

// List lists the runs a filter selects, with the totals of unfinished runs
// computed from their logs (their summaries have none): only those logs
// are read.
func List(ctx context.Context, st Store, f polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	runs, err := st.ListRuns(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := FillTotals(ctx, st, runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// FillTotals sets the Totals of the runs that have none (unfinished runs)
// from their logs, and their Running: the live process that drives a run
// now (trajectory.Holder). What a running run's log holds at the tail
// without a result is under way, not of unknown outcome, and is left out
// of its unknown counts (trajectory.MarkRunning). Each log is folded as
// it is read, a chunk of rows at a time, keeping one step
// (trajectory.BuildPageStream): a page of the runs list holds no run's log.
func FillTotals(ctx context.Context, st polyloop.Store, runs []polyloop.RunSummary) error {
	for i := range runs {
		if runs[i].Totals != nil {
			continue
		}
		id := runs[i].RunID
		tr, err := trajectory.BuildPageStream(polyloop.StreamLog(ctx, st, id), trajectory.Page{Number: 1, Per: 1})
		if err != nil {
			return err
		}
		holder, err := trajectory.Holder(ctx, st, id)
		if err != nil {
			return err
		}
		if holder != nil {
			tr.MarkRunning(*holder)
		}
		t := tr.Totals
		runs[i].Totals, runs[i].Running = &t, holder
		runs[i].Awaiting = awaiting(tr.Awaiting)
	}
	return nil
}

// awaiting says what an unfinished run waits for (RunSummary.Awaiting),
// from the gates its log awaits (nil: none, or a log that does not fold).
func awaiting(s *polyloop.Suspension) string {
	if s == nil {
		return ""
	}
	switch {
	case len(s.Approvals) > 0 && len(s.Deliveries) > 0:
		return "approval+delivery"
	case len(s.Approvals) > 0:
		return "approval"
	case len(s.Deliveries) > 0:
		return "delivery"
	}
	return ""
}

// AgentHashes returns the agent configuration hash of each run
// (polyloop.Snapshot.AgentHash of the snapshot in force: RunStarted's, or
// a resume's override), by run id: it reads
// every run's log, since stores keep only the snapshot hash, folding each
// as it reads it (polyloop.ObserveStream: a chunk of rows at a time, no
// log held). A run whose log does not begin with a RunStarted the log's
// grammar accepts is absent.
func AgentHashes(ctx context.Context, st polyloop.Store, runs []polyloop.RunSummary) (map[string]string, error) {
	out := make(map[string]string, len(runs))
	for _, r := range runs {
		end, err := polyloop.ObserveStream(polyloop.StreamLog(ctx, st, r.RunID), nil)
		if err != nil {
			return nil, err
		}
		var first *polyloop.CorruptLogError
		if end.Records == 0 || errors.As(end.Break, &first) && first.Seq == 0 {
			continue
		}
		snap := end.Snapshot
		h, err := snap.AgentHash()
		if err != nil {
			return nil, fmt.Errorf("run %s: the agent configuration hash: %w", r.RunID, err)
		}
		out[r.RunID] = h
	}
	return out, nil
}
