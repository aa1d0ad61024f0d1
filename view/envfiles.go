package view

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/internal/trajectory"
)

// envFilesShown bounds the paths the comparison lists; the rest are
// counted.
const envFilesShown = 200

// envFiles is the comparison's section on the runs' environments: the
// files that differ between them at the end of a step (envsnap.DiffRefs,
// what `polyloop diff --files` prints).
type envFiles struct {
	// Step is the step compared, Last the last step both runs have; Prev
	// and Next link to the comparison at the steps around ("" none).
	Step, Last int
	Prev, Next string
	// A and B are the snapshots compared ("" the image unchanged).
	A, B polyloop.EnvSnapshot
	// SameImage is false when the runs' images differ: the list then holds
	// only the paths their changes touch.
	SameImage bool
	// Changes are the first envFilesShown differences, More the rest's
	// number, Total all of them.
	Changes     []envsnap.Change
	More, Total int
	// Err says why the files could not be compared.
	Err string
}

// lastStep is the number of a trajectory's last step (0: none).
func lastStep(t *trajectory.Trajectory) int {
	if last := t.Last(); last != nil {
		return last.Step // the run's, whichever page Steps holds
	}
	return 0
}

// envFilesOf builds the section for two runs at the step the query's
// "step" names (default: the last step both have). Nil when the view has
// no snapshot store or either run has no environment; an error for a step
// parameter that is not one of both runs' steps.
func (s *Server) envFilesOf(ctx context.Context, ids [2]string, ts [2]*trajectory.Trajectory, q url.Values, link func(step int) string) (*envFiles, error) {
	if s.opts.Snapshots == nil {
		return nil, nil
	}
	var descs [2]*polyloop.EnvDescription
	for i, t := range ts {
		snap := t.Snapshot // the snapshot in force at the end of the log: the last override's, or the run's
		if n := len(t.Overrides); n > 0 {
			snap = t.Overrides[n-1].Snapshot
		}
		if snap.Environment == nil {
			return nil, nil
		}
		descs[i] = snap.Environment
	}
	f := &envFiles{Last: min(lastStep(ts[0]), lastStep(ts[1])), SameImage: descs[0].Image == descs[1].Image}
	f.Step = f.Last
	if v := q.Get("step"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > f.Last {
			return nil, fmt.Errorf("step=%q: expected a step both runs have, from 1 to %d", v, f.Last)
		}
		f.Step = n
	}
	if f.Step == 0 {
		f.Err = "the runs have no step in common yet"
		return f, nil
	}
	if f.Step > 1 {
		f.Prev = link(f.Step - 1)
	}
	if f.Step < f.Last {
		f.Next = link(f.Step + 1)
	}
	// Each run's log read again as far as the step (a chunk at a time).
	var refs [2]polyloop.EnvSnapshot
	for i, id := range ids {
		ref, err := polyloop.EnvSnapshotIn(polyloop.StreamLog(ctx, s.opts.Store, id), f.Step)
		if err != nil {
			s.opts.Logger.Error("view: environment files", "run", id, "step", f.Step, "err", err)
			f.Err = "the run's log could not be read again: " + err.Error()
			return f, nil
		}
		refs[i] = ref
	}
	f.A, f.B = refs[0], refs[1]
	changes, err := envsnap.DiffRefs(ctx, s.opts.Snapshots, f.A, f.B)
	if err != nil {
		s.opts.Logger.Error("view: environment files", "a", ids[0], "b", ids[1], "step", f.Step, "err", err)
		f.Err = "the snapshots could not be read: " + err.Error()
		return f, nil
	}
	f.Total = len(changes)
	if len(changes) > envFilesShown {
		f.More = len(changes) - envFilesShown
		changes = changes[:envFilesShown]
	}
	f.Changes = changes
	return f, nil
}
