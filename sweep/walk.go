package sweep

import (
	"context"

	"github.com/polyloop/polyloop/sweep/ledger"
)

// walk streams the tasks and, a chunk of coordinates at a time (every
// agent and epoch of whole tasks), reads their attempts from the ledger,
// plans each coordinate, records the new entries in bulk, and then calls
// each with every coordinate's decision and its attempts so far, in task
// order. It stops at the first error each returns.
func (s *Sweep) walk(ctx context.Context, store Store, each func(it item, prior []ledger.State) error) error {
	var chunk []item
	flush := func() error {
		err := s.planChunk(ctx, store, chunk, each)
		chunk = chunk[:0]
		return err
	}
	err := s.def.Tasks.Tasks(ctx, func(t Task) error {
		for _, a := range s.def.Agents {
			for epoch := 1; epoch <= s.def.Epochs; epoch++ {
				e, err := s.entry(a, t, epoch, 1)
				if err != nil {
					return err
				}
				chunk = append(chunk, item{d: decision{state: stateOf(e)}, t: t})
			}
		}
		if len(chunk) >= chunkSize {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return err
}

// planChunk plans the chunk's coordinates from the ledger, records the
// new entries, and calls each for every coordinate.
func (s *Sweep) planChunk(ctx context.Context, store Store, chunk []item, each func(item, []ledger.State) error) error {
	if len(chunk) == 0 {
		return nil
	}
	coords := make([]string, len(chunk))
	for i, it := range chunk {
		coords[i] = it.d.state.Coord
	}
	states, err := store.Coords(ctx, s.def.Name, coords)
	if err != nil {
		return err
	}
	byCoord := groupByCoord(states)
	changed := changedTasks(chunk, states)
	var fresh []ledger.Entry
	for i := range chunk {
		it := &chunk[i]
		prior := byCoord[it.d.state.Coord]
		if changed[it.t.ID] {
			it.d = decision{step: stepChanged, state: it.d.state}
			continue
		}
		it.d = s.plan(it.d.state.Entry, it.t, prior)
		if it.d.add {
			fresh = append(fresh, it.d.state.Entry)
		}
	}
	if err := store.AddEntries(ctx, fresh); err != nil {
		return err
	}
	for _, it := range chunk {
		if err := each(it, byCoord[it.d.state.Coord]); err != nil {
			return err
		}
	}
	return nil
}

// changedTasks names the tasks of the chunk that one of their attempts
// was given with other contents: the whole task is left alone, every agent
// and epoch of it, so that one task id never stands for two tasks.
func changedTasks(chunk []item, states []ledger.State) map[string]bool {
	digest := map[string]string{}
	for _, it := range chunk {
		digest[it.t.ID] = it.d.state.TaskDigest
	}
	changed := map[string]bool{}
	for _, st := range states {
		if d, ok := digest[st.TaskID]; ok && st.TaskDigest != d {
			changed[st.TaskID] = true
		}
	}
	return changed
}

// Pending is the planning half of Run, for a queue: it checks the tasks,
// records the manifest, and streams the coordinates as Run does —
// recording the entries of the attempts to start — and calls yield with
// the state of every run there is something to do for: a run to start
// (State.Run is nil), to resume (unfinished) or to score (finished,
// unscored). Each of those is a job "Execute(runID)"; an Outcome.Next is
// a new one, due after Outcome.Delay. Pending starts nothing itself.
func (s *Sweep) Pending(ctx context.Context, store Store, yield func(ledger.State) error) error {
	if _, err := s.def.Tasks.Check(ctx); err != nil {
		return err
	}
	if err := s.record(ctx, store); err != nil {
		return err
	}
	return s.walk(ctx, store, func(it item, _ []ledger.State) error {
		switch it.d.step {
		case stepStart, stepResume, stepScore:
			return yield(it.d.state)
		}
		return nil
	})
}
