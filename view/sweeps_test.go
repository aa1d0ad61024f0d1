package view_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/view"
)

// fakeSweeps is a sweep of three fixture runs: two epochs of task t1 and
// one of task t2, scored 1, 0 and 1.
type fakeSweeps struct{ st view.Store }

var sweepAnns = map[string]view.Annotation{
	runfixture.BatchRun:      {Sweep: "s1", Task: "t1", Epoch: 1, Attempt: 1, Scores: []view.Score{{Scorer: "exact", Value: 1}}},
	runfixture.ResumedRun:    {Sweep: "s1", Task: "t1", Epoch: 2, Attempt: 1, Scores: []view.Score{{Scorer: "exact", Value: 0}}},
	runfixture.OverriddenRun: {Sweep: "s1", Task: "t2", Epoch: 1, Attempt: 2, Scores: []view.Score{{Scorer: "exact", Value: 1}}},
}

func (f fakeSweeps) List(context.Context) ([]view.Sweep, error) {
	return []view.Sweep{{Name: "s1", Runs: 3, Tasks: 2, Agents: 2, Epochs: 2}}, nil
}

func (f fakeSweeps) Annotate(_ context.Context, ids []string) (map[string]view.Annotation, error) {
	out := map[string]view.Annotation{}
	for _, id := range ids {
		if a, ok := sweepAnns[id]; ok {
			out[id] = a
		}
	}
	return out, nil
}

func (f fakeSweeps) Runs(ctx context.Context, sweep string) ([]polyloop.RunSummary, map[string]view.Annotation, error) {
	all, err := runstats.List(ctx, f.st, polyloop.RunFilter{})
	var runs []polyloop.RunSummary
	for _, r := range all {
		if sweepAnns[r.RunID].Sweep == sweep {
			runs = append(runs, r)
		}
	}
	return runs, sweepAnns, err
}

func (f fakeSweeps) Stats(context.Context, string, sweep.StatsOptions) (*sweep.Stats, error) {
	return nil, errors.New("fakeSweeps has no statistics")
}

func (f fakeSweeps) Samples(context.Context, string, sweep.SampleQuery) (*sweep.Samples, error) {
	return nil, errors.New("fakeSweeps has no samples")
}

func TestSweepColumnsAndStatistics(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, view.Options{})
	s, err := view.New(view.Options{Store: st, Sweeps: fakeSweeps{st}})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, s, "/")
	contains(t, "runs list", body, "<th>sweep</th><th>task</th><th>score</th>", `<td>s1</td><td>t1 <span class="dim">e2</span></td>`, "try 2")
	body = mustGet(t, s, "/?sweep=s1")
	if got := pageIDs(body); len(got) != 3 || strings.Contains(body, runfixture.FailedRun) {
		t.Errorf("sweep filter: %q", got)
	}
	body = mustGet(t, s, "/stats?sweep=s1")
	// Mean 2/3; clustered SE: residual sums t1 −1/3, t2 +1/3, SE² = 2 · (2/9) / 9, SE = 2/9.
	contains(t, "sweep statistics", body, "Statistics of sweep s1", "accuracy <b>0.667</b> ± 0.222", "over 3 scored runs, 2 tasks")
	contains(t, "sweeps page", mustGet(t, s, "/sweeps"), `<b><a href="/sweep?name=s1">s1</a></b>: 3 runs (2 tasks × 2 epochs × 2 agents)`)
	contains(t, "run page", mustGet(t, s, "/run?id="+runfixture.ResumedRun), `sweep <a href="/sweep?name=s1">s1</a>, task t1, epoch 2, attempt 1`, "score exact = 0")
}
