// Package sweepview gives polyloop view the sweeps of a store: it
// implements view.Sweeps over the store's sweep ledger, so that the runs
// list shows each run's sweep, task, epoch, attempt and score, a run's
// page its scores with their explanations, and a sweep's page the
// statistics and samples table of polyloop stats --sweep and polyloop
// samples.
package sweepview

import (
	"context"
	"slices"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
	"github.com/polyloop/polyloop/view"
)

// Store is what the adapter reads: the runs (their logs, for the totals
// of unfinished runs) and the ledger.
type Store interface {
	polyloop.Store
	ledger.Ledger
}

// Sweeps implements view.Sweeps on a store. It is safe for concurrent use.
type Sweeps struct {
	store Store
}

// scorerOrder is each sweep's scorer names in its manifest's order, read
// once per call.
type scorerOrder map[string][]string

var _ view.Sweeps = (*Sweeps)(nil)

// New returns the sweeps of store for the view.
func New(store Store) *Sweeps { return &Sweeps{store: store} }

// List implements view.Sweeps.
func (s *Sweeps) List(ctx context.Context) ([]view.Sweep, error) {
	infos, err := s.store.Sweeps(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]view.Sweep, len(infos))
	for i, in := range infos {
		out[i] = view.Sweep{Name: in.Name, Runs: in.Runs, Tasks: in.Tasks, Agents: in.Agents, Epochs: in.Epochs}
	}
	return out, nil
}

// Annotate implements view.Sweeps.
func (s *Sweeps) Annotate(ctx context.Context, runIDs []string) (map[string]view.Annotation, error) {
	states, err := s.store.Runs(ctx, runIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]view.Annotation, len(states))
	order := scorerOrder{}
	for _, st := range states {
		a, err := s.annotation(ctx, order, st)
		if err != nil {
			return nil, err
		}
		out[st.RunID] = a
	}
	return out, nil
}

// Runs implements view.Sweeps: every run of the sweep that has a record,
// in the listing order, with the totals of the unfinished ones from their
// logs.
func (s *Sweeps) Runs(ctx context.Context, name string) ([]polyloop.RunSummary, map[string]view.Annotation, error) {
	var runs []polyloop.RunSummary
	anns := map[string]view.Annotation{}
	order := scorerOrder{}
	after := ""
	for {
		page, err := s.store.Page(ctx, name, after, 1000)
		if err != nil {
			return nil, nil, err
		}
		for _, st := range page {
			if st.Run == nil {
				continue
			}
			runs = append(runs, *st.Run)
			if anns[st.RunID], err = s.annotation(ctx, order, st); err != nil {
				return nil, nil, err
			}
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].RunID
	}
	slices.SortFunc(runs, func(a, b polyloop.RunSummary) int {
		switch {
		case a.Position().Before(b.Position()):
			return -1
		case b.Position().Before(a.Position()):
			return 1
		}
		return 0
	})
	if err := runstats.FillTotals(ctx, s.store, runs); err != nil {
		return nil, nil, err
	}
	return runs, anns, nil
}

// annotation is what the view shows of a run of a sweep: its scores in
// the order of the sweep's scorers, the first the one accuracy uses.
func (s *Sweeps) annotation(ctx context.Context, order scorerOrder, st ledger.State) (view.Annotation, error) {
	names, err := s.order(ctx, order, st.Sweep)
	if err != nil {
		return view.Annotation{}, err
	}
	a := view.Annotation{Sweep: st.Sweep, Task: st.TaskID, Epoch: st.Epoch, Attempt: st.Attempt}
	for _, name := range names {
		if i := slices.IndexFunc(st.Scores, func(sc ledger.Score) bool { return sc.Scorer == name }); i >= 0 {
			sc := st.Scores[i]
			a.Scores = append(a.Scores, view.Score{Scorer: name, Value: sc.Value, Explanation: sc.Explanation, GraderRunID: sc.GraderRunID})
		}
	}
	return a, nil
}

// order is the sweep's scorers' names, read from its manifest once per
// call.
func (s *Sweeps) order(ctx context.Context, order scorerOrder, name string) ([]string, error) {
	names, ok := order[name]
	if ok {
		return names, nil
	}
	m, err := sweep.ReadManifest(ctx, s.store, name)
	if err != nil {
		return nil, err
	}
	for _, sc := range m.Scorers {
		names = append(names, sc.Name)
	}
	order[name] = names
	return names, nil
}

// Stats implements view.Sweeps: sweep.ComputeStats.
func (s *Sweeps) Stats(ctx context.Context, name string, opts sweep.StatsOptions) (*sweep.Stats, error) {
	return sweep.ComputeStats(ctx, s.store, name, opts)
}

// Samples implements view.Sweeps: sweep.ReadSamples.
func (s *Sweeps) Samples(ctx context.Context, name string, q sweep.SampleQuery) (*sweep.Samples, error) {
	return sweep.ReadSamples(ctx, s.store, name, q)
}
