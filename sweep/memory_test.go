package sweep

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sqlitestore"
)

// answerModel answers every task at once with its input.
type answerModel struct{}

func (answerModel) Describe() polyloop.Component { return polyloop.Component{Name: "answerModel"} }

func (answerModel) Complete(_ context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return polyloop.ModelReply{Text: req.Messages[len(req.Messages)-1].Content, Usage: polyloop.Usage{InputTokens: 3, OutputTokens: 1}}, nil
}

// bigTasks is a TaskSource of n tasks made as they are read: nothing of
// them is held.
type bigTasks int

func (n bigTasks) Check(ctx context.Context) (int, error) { return int(n), nil }
func (n bigTasks) Describe() string                       { return fmt.Sprintf("%d generated tasks", int(n)) }
func (n bigTasks) Tasks(ctx context.Context, yield func(Task) error) error {
	for i := range int(n) {
		s := strconv.Itoa(i)
		if err := yield(Task{ID: "t" + s, Input: s, Target: []string{s}}); err != nil {
			return err
		}
	}
	return nil
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMemoryFlat: over a 10,000-run sweep on SQLite the sweep's heap does
// not grow with the runs done: tasks are streamed, results not kept. The
// heap is read (after a collection) when 2,000 runs are done and when all
// are.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 runs: not in -short")
	}
	const runs = 10_000
	store, err := sqlitestore.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	agent := &Agent{Agent: polyloop.Agent{Name: "echo", Limits: polyloop.Limits{MaxSteps: 2}}, Model: answerModel{},
		Parser: finalParser{}, Executor: noExec{}}
	s, err := New(Definition{Name: "mem", Agents: []*Agent{agent}, Tasks: bigTasks(runs), Concurrency: 32,
		Scorers: []Scorer{Exact("exact", MatchOptions{})}})
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Int64
	var early, late uint64
	res, err := s.Run(context.Background(), RunOptions{Store: store, Events: func(ev Event) {
		if ev.Kind != EventRunScored {
			return
		}
		switch done.Add(1) {
		case runs / 5:
			early = heapInUse()
		case runs:
			late = heapInUse()
		}
	}})
	if err != nil || res.Progress.Done != runs {
		t.Fatalf("%+v, %v", res.Progress, err)
	}
	growth := int64(late) - int64(early)
	t.Logf("heap in use: %.2f MB after %d runs, %.2f MB after %d (%+d bytes, %.1f per run)",
		float64(early)/1e6, runs/5, float64(late)/1e6, runs, growth, float64(growth)/float64(runs-runs/5))
	// A run's result or summary is hundreds of bytes: kept for each of
	// 8,000 runs, megabytes. The bound leaves room for the collector's
	// noise (a few hundred kilobytes either way).
	if growth > 1<<20 {
		t.Errorf("the heap grew by %d bytes over %d runs: something is kept per run", growth, runs-runs/5)
	}
}

// finalParser makes every reply final.
type finalParser struct{}

func (finalParser) Parse(r polyloop.ModelReply) polyloop.Decision {
	return polyloop.Final{Answer: r.Text}
}
