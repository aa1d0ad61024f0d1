package polyloop

import (
	"context"
	"errors"
	"fmt"
)

// ErrForkPoint is returned by Fork for a step it cannot fork at: a step the
// source has not completed (its actions of unknown outcome, or not run).
var ErrForkPoint = errors.New("polyloop: cannot fork at that step")

// Fork starts a new run, newID (empty: a new ULID), from run src as it stood
// at the end of step atStep (0: before its first step), and runs it under
// agent until it finishes. The new run's log starts with run_started naming
// its source (RunStarted.ForkedFrom: the source run, the step, the hash of
// the configuration in force at that step and, when agent differs from it,
// the fields that differ, and what the copies ran under), then holds copies
// of the source's records of steps 1 … atStep — the same bytes, seqs and
// times, read under the configuration they ran under — and goes on from
// step atStep+1 with agent's snapshot in force: the model sees a changed
// system prompt from the fork on. Nothing of the prefix runs again: no model call
// is paid for, no action repeats. The copies count in the source's totals
// only (Totals.CopiedSteps says how many steps were copied).
//
// The task is the source's. atStep must be a step whose record is in the
// source's log (ErrForkPoint otherwise: an open step, whose actions may be of
// unknown outcome, cannot be forked at). Errors as for Run; a source that
// does not exist is ErrRunNotFound. The new run's lease is held while it runs,
// as for Run.
func (r *Runner) Fork(ctx context.Context, src string, atStep int, newID string, agent Agent) (RunResult, error) {
	agent, err := r.prepare(ctx, agent)
	if err != nil {
		return RunResult{}, err
	}
	prefix, at, err := r.forkSource(ctx, src, atStep)
	if err != nil {
		return RunResult{}, err
	}
	if newID == "" {
		newID = NewRunID()
	}
	o, ctx, err := r.open(ctx, newID, false)
	if err != nil {
		return RunResult{RunID: newID}, err
	}
	defer o.close(ctx)
	if err := o.fresh(); err != nil {
		return RunResult{RunID: newID}, err
	}
	source := &RunSource{RunID: src, SnapshotHash: at.hash, AtStep: atStep, Copied: len(prefix),
		CopiedUnder: copiedUnder(at.started, len(prefix))}
	rs, err := r.started(newID, agent, at.snap.Task, &RunStarted{ForkedFrom: source})
	if err != nil {
		return RunResult{RunID: newID}, err
	}
	if b := rs.Body.(*RunStarted); b.SnapshotHash != at.hash {
		source.Fields = DiffSnapshots(at.snap, b.Snapshot)
	}
	return o.start(ctx, agent, append([]Record{rs}, prefix...)...)
}

// copiedUnder is what the first n records after the source's run_started
// ran under: the source's own copies' configurations, if it is a fork, then
// its own snapshot from its first own record on (a fork of an earlier
// version, without them, was folded under its own snapshot throughout).
func copiedUnder(src *RunStarted, n int) []CopiedConfig {
	if n == 0 {
		return nil
	}
	own := CopiedConfig{From: 1, SnapshotHash: src.SnapshotHash, Snapshot: src.Snapshot}
	var out []CopiedConfig
	if f := src.ForkedFrom; f != nil && len(f.CopiedUnder) > 0 {
		for _, c := range f.CopiedUnder {
			if c.From <= int64(n) {
				out = append(out, c)
			}
		}
		own.From = int64(f.Copied) + 1
	}
	if own.From <= int64(n) {
		out = append(out, own)
	}
	return out
}

// forkSource reads the source of a fork: its records after run_started up
// to the end of step atStep (forkPrefix), and its fold up to there.
func (r *Runner) forkSource(ctx context.Context, src string, atStep int) ([]Record, *logState, error) {
	log, err := ReadLog(ctx, r.Store, src)
	if err != nil {
		return nil, nil, persistenceError("read", src, err)
	}
	if log.Empty() {
		return nil, nil, fmt.Errorf("%w: %q", ErrRunNotFound, src)
	}
	log.RunID = src
	return forkPrefix(log, atStep)
}

// forkPrefix returns the source's records after run_started up to the end of
// step atStep, and the fold of the source up to there.
func forkPrefix(log RunLog, atStep int) ([]Record, *logState, error) {
	st := &logState{runID: log.RunID}
	if err := st.apply(log.Records[0]); err != nil {
		return nil, nil, err
	}
	if atStep == 0 {
		return nil, st, nil
	}
	for i, rec := range log.Records[1:] {
		if err := st.apply(rec); err != nil {
			return nil, nil, err
		}
		if sc, ok := rec.Body.(*StepCompleted); ok && sc.Step == atStep {
			return forkStepEnd(log, st, i+2, atStep)
		}
	}
	return nil, nil, fmt.Errorf("%w: run %q has no record of step %d (it ends in step %d, %s)", ErrForkPoint, log.RunID, atStep, st.step, st.plan().Action)
}

// forkStepEnd extends a fork's prefix, which ends with step atStep's record
// at index end-1 of log, over that step's maintenance: a fork copies the
// facts of the steps it keeps, and a maintenance whose write is in the
// memory must not run again under the fork's id. A step whose maintenance
// is open cannot be forked at.
func forkStepEnd(log RunLog, st *logState, end, atStep int) ([]Record, *logState, error) {
	for end < len(log.Records) && isMaintenanceOf(log.Records[end].Body, atStep) {
		if err := st.apply(log.Records[end]); err != nil {
			return nil, nil, err
		}
		end++
		if st.maint.done == atStep {
			break
		}
	}
	if st.maint.open {
		return nil, nil, fmt.Errorf("%w: run %q: step %d's maintenance is not done", ErrForkPoint, log.RunID, atStep)
	}
	return log.Records[1:end], st, nil
}

func isMaintenanceOf(b RecordBody, step int) bool {
	switch b := b.(type) {
	case *MaintenanceOp:
		return b.Step == step
	case *MaintenanceDone:
		return b.Step == step
	case *ChildReception:
		return b.Maintenance && b.Step == step
	}
	return false
}
