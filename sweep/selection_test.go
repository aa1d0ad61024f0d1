package sweep

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/polyloop/polyloop/memstore"
)

// ids reads the ids a source yields.
func ids(t *testing.T, src TaskSource) []string {
	t.Helper()
	if _, err := src.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := src.Tasks(context.Background(), func(t Task) error { out = append(out, t.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSelection(t *testing.T) {
	t.Parallel()
	all := numberTasks(10)
	if got := ids(t, Select(all, Selection{IDs: []string{"t7", "t2", "t9"}})); !slices.Equal(got, []string{"t2", "t7", "t9"}) {
		t.Errorf("--tasks t7,t2,t9: %v, want the file's order", got)
	}
	if got := ids(t, Select(all, Selection{Limit: 3})); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
		t.Errorf("--limit 3: %v", got)
	}
	a := ids(t, Select(all, Selection{Shuffle: true, Seed: 7}))
	b := ids(t, Select(all, Selection{Shuffle: true, Seed: 7}))
	c := ids(t, Select(all, Selection{Shuffle: true, Seed: 8}))
	if !slices.Equal(a, b) || slices.Equal(a, c) || slices.Equal(a, ids(t, all)) || len(a) != 10 {
		t.Errorf("shuffled: seed 7 %v and %v, seed 8 %v", a, b, c)
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	want := ids(t, all)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Errorf("shuffled %v: not a permutation", a)
	}
	// The first three of the shuffled order, whatever tasks the file adds
	// after them: the ones whose keys are smallest stay chosen unless a
	// new one's is smaller.
	first := ids(t, Select(all, Selection{Shuffle: true, Seed: 7, Limit: 3}))
	if !slices.Equal(first, a[:3]) {
		t.Errorf("--shuffle --seed 7 --limit 3: %v, want %v", first, a[:3])
	}
	more := ids(t, Select(numberTasks(12), Selection{Shuffle: true, Seed: 7}))
	if more = slices.DeleteFunc(more, func(id string) bool { return id == "t11" || id == "t12" }); !slices.Equal(more, a) {
		t.Errorf("two tasks added: %v, want the others in the order %v", more, a)
	}
	_, err := Select(all, Selection{IDs: []string{"t2", "nope", "t99"}}).Check(context.Background())
	if !errors.Is(err, ErrUnknownTasks) || err.Error() != `sweep: the selection names tasks the task file does not hold (tasks (10 in memory)): "nope", "t99"` {
		t.Errorf("unknown ids: %v", err)
	}
}

// A shuffled selection larger than a window reads the source once per
// window and yields every task once, in order.
func TestSelectionWindows(t *testing.T) {
	defer func(w int) { selectWindow = w }(selectWindow)
	selectWindow = 7
	src := &countingSource{TaskList: numberTasks(30)}
	got := ids(t, Select(src, Selection{Shuffle: true, Seed: 1}))
	selectWindow = 1000
	want := ids(t, Select(numberTasks(30), Selection{Shuffle: true, Seed: 1}))
	if !slices.Equal(got, want) {
		t.Fatalf("by windows of 7: %v, at once: %v", got, want)
	}
	if src.reads != 1+5 { // the ids, then ceil(30/7) windows
		t.Errorf("%d reads of the source, want 6", src.reads)
	}
}

type countingSource struct {
	TaskList
	reads int
}

func (s *countingSource) Tasks(ctx context.Context, yield func(Task) error) error {
	s.reads++
	return s.TaskList.Tasks(ctx, yield)
}

// A sweep of a selection: its runs are the full sweep's runs of those
// tasks (same ids), running it again with the same selection does
// nothing, and a wider one runs only the tasks it adds.
func TestSweepOfASelection(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	run := func(sel Selection) Progress {
		t.Helper()
		s, err := New(Definition{Name: "sel", Agents: []*Agent{testAgent("a", &faultModel{})}, Tasks: Select(numberTasks(8), sel), Epochs: 2,
			Scorers: []Scorer{Exact("exact", MatchOptions{})}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(ctx, RunOptions{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return res.Progress
	}
	sel := Selection{Shuffle: true, Seed: 3, Limit: 3}
	if p := run(sel); p.Total != 6 || p.Done != 6 || p.Skipped != 0 {
		t.Fatalf("first run: %+v", p)
	}
	if p := run(sel); p.Total != 6 || p.Skipped != 6 {
		t.Fatalf("again: %+v, want every outcome found settled", p)
	}
	if p := run(Selection{Shuffle: true, Seed: 3, Limit: 5}); p.Total != 10 || p.Skipped != 6 || p.Done != 10 {
		t.Fatalf("two more tasks: %+v, want 4 new runs", p)
	}
	chosen := ids(t, Select(numberTasks(8), Selection{Shuffle: true, Seed: 3, Limit: 5}))
	smp, err := ReadSamples(ctx, store, "sel", SampleQuery{})
	if err != nil {
		t.Fatal(err)
	}
	full, _ := New(Definition{Name: "sel", Agents: []*Agent{testAgent("a", &faultModel{})}, Tasks: numberTasks(8), Epochs: 2})
	hash := full.Manifest().Agents[0].Hash
	for _, r := range smp.Rows {
		if !slices.Contains(chosen, r.Task) || r.RunID != RunID(CoordID("sel", hash, r.Task, r.Epoch), 1) {
			t.Errorf("run %s of task %s: not a run of the selection %v under the full sweep's id", r.RunID, r.Task, chosen)
		}
	}
	if len(smp.Rows) != 10 {
		t.Errorf("%d runs, want 10", len(smp.Rows))
	}
}
