package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/polyloop/polyloop/sweep/ledger"
)

// The sweep ledger (ledger.Ledger) in memory, beside the runs, under the
// store's lock.

var _ ledger.Ledger = (*Store)(nil)

// sweepTables are the ledger's tables.
type sweepTables struct {
	sweeps  map[string]ledger.Sweep
	entries map[string]ledger.Entry            // by run id
	scores  map[string]map[string]ledger.Score // by run id, then scorer
}

func (s *Store) tables() *sweepTables {
	if s.sweeps.sweeps == nil {
		s.sweeps = sweepTables{sweeps: map[string]ledger.Sweep{}, entries: map[string]ledger.Entry{},
			scores: map[string]map[string]ledger.Score{}}
	}
	return &s.sweeps
}

// PutSweep implements ledger.Ledger.
func (s *Store) PutSweep(ctx context.Context, sw ledger.Sweep) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sw.Manifest = slices.Clone(sw.Manifest)
	s.tables().sweeps[sw.Name] = sw
	return nil
}

// Sweep implements ledger.Ledger.
func (s *Store) Sweep(ctx context.Context, name string) (ledger.Sweep, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Sweep{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sw, ok := s.tables().sweeps[name]
	if !ok {
		return ledger.Sweep{}, fmt.Errorf("%w: %q", ledger.ErrNotFound, name)
	}
	sw.Manifest = slices.Clone(sw.Manifest)
	return sw, nil
}

// Sweeps implements ledger.Ledger.
func (s *Store) Sweeps(ctx context.Context) ([]ledger.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.tables()
	type sets struct{ tasks, agents map[string]bool }
	infos := map[string]*ledger.Info{}
	seen := map[string]sets{}
	for name, sw := range tb.sweeps {
		infos[name] = &ledger.Info{Name: name, UpdatedAt: sw.UpdatedAt}
		seen[name] = sets{map[string]bool{}, map[string]bool{}}
	}
	for _, e := range tb.entries {
		in, ok := infos[e.Sweep]
		if !ok {
			continue
		}
		in.Runs++
		in.Epochs = max(in.Epochs, e.Epoch)
		seen[e.Sweep].tasks[e.TaskID] = true
		seen[e.Sweep].agents[e.AgentHash] = true
	}
	out := make([]ledger.Info, 0, len(infos))
	for name, in := range infos {
		in.Tasks, in.Agents = len(seen[name].tasks), len(seen[name].agents)
		out = append(out, *in)
	}
	slices.SortFunc(out, func(a, b ledger.Info) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out, nil
}

// AddEntries implements ledger.Ledger.
func (s *Store) AddEntries(ctx context.Context, entries []ledger.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.tables()
	for _, e := range entries {
		if old, ok := tb.entries[e.RunID]; ok && !old.Equal(e) {
			return fmt.Errorf("%w: run %q", ledger.ErrConflict, e.RunID)
		}
	}
	for _, e := range entries {
		e.Task = slices.Clone(e.Task)
		tb.entries[e.RunID] = e
	}
	return nil
}

// Coords implements ledger.Ledger.
func (s *Store) Coords(ctx context.Context, sweep string, coords []string) ([]ledger.State, error) {
	want := map[string]bool{}
	for _, c := range coords {
		want[c] = true
	}
	out, err := s.states(ctx, func(e ledger.Entry) bool { return e.Sweep == sweep && want[e.Coord] })
	slices.SortFunc(out, func(a, b ledger.State) int {
		if c := cmp.Compare(a.Coord, b.Coord); c != 0 {
			return c
		}
		return cmp.Compare(a.Attempt, b.Attempt)
	})
	return out, err
}

// Runs implements ledger.Ledger.
func (s *Store) Runs(ctx context.Context, runIDs []string) ([]ledger.State, error) {
	want := map[string]bool{}
	for _, id := range runIDs {
		want[id] = true
	}
	out, err := s.states(ctx, func(e ledger.Entry) bool { return want[e.RunID] })
	slices.SortFunc(out, func(a, b ledger.State) int { return cmp.Compare(a.RunID, b.RunID) })
	return out, err
}

// Page implements ledger.Ledger.
func (s *Store) Page(ctx context.Context, sweep, after string, limit int) ([]ledger.State, error) {
	out, err := s.states(ctx, func(e ledger.Entry) bool { return e.Sweep == sweep && e.RunID > after })
	slices.SortFunc(out, func(a, b ledger.State) int { return cmp.Compare(a.RunID, b.RunID) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// states returns the entries keep selects, with their states, unordered.
func (s *Store) states(ctx context.Context, keep func(ledger.Entry) bool) ([]ledger.State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.tables()
	var out []ledger.State
	for _, e := range tb.entries {
		if !keep(e) {
			continue
		}
		st := ledger.State{Entry: e}
		st.Task = slices.Clone(e.Task)
		if sum, ok := s.sums[e.RunID]; ok {
			c := *sum
			if c.Totals != nil {
				t := *c.Totals
				c.Totals = &t
			}
			st.Run = &c
		}
		for _, sc := range tb.scores[e.RunID] {
			st.Scores = append(st.Scores, sc)
		}
		slices.SortFunc(st.Scores, func(a, b ledger.Score) int { return cmp.Compare(a.Scorer, b.Scorer) })
		st.Scores, st.Failed = ledger.SplitScores(st.Scores)
		out = append(out, st)
	}
	return out, nil
}

// PutScores implements ledger.Ledger.
func (s *Store) PutScores(ctx context.Context, scores []ledger.Score) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.tables()
	for _, sc := range scores {
		byScorer := tb.scores[sc.RunID]
		if byScorer == nil {
			byScorer = map[string]ledger.Score{}
			tb.scores[sc.RunID] = byScorer
		}
		byScorer[sc.Scorer] = sc
	}
	return nil
}
