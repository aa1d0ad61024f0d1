package sweep_test

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/toolcallparser"
)

type noTools struct{}

func (noTools) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted}, nil
}

// A sweep of one agent, whose scripted model always answers 4, over three
// tasks and two epochs, scored by exact match.
func ExampleSweep_Run() {
	ctx := context.Background()
	agent := &sweep.Agent{
		Agent:    polyloop.Agent{Name: "fours", Limits: polyloop.Limits{MaxSteps: 3}},
		Model:    scriptmodel.New(scriptmodel.Reply("4")),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: noTools{},
	}
	tasks := sweep.TaskList{
		{ID: "a", Input: "2+2?", Target: []string{"4"}},
		{ID: "b", Input: "3+1?", Target: []string{"4"}},
		{ID: "c", Input: "1+1?", Target: []string{"2"}},
	}
	s, err := sweep.New(sweep.Definition{Name: "arith", Agents: []*sweep.Agent{agent}, Tasks: tasks, Epochs: 2,
		Scorers: []sweep.Scorer{sweep.Exact("exact", sweep.MatchOptions{})}})
	if err != nil {
		panic(err)
	}
	store := memstore.New()
	res, err := s.Run(ctx, sweep.RunOptions{Store: store})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d of %d outcomes settled, %d runs\n", res.Progress.Done, res.Progress.Total, res.Progress.Runs)
	st, err := sweep.ComputeStats(ctx, store, "arith", sweep.StatsOptions{By: sweep.ByAgent})
	if err != nil {
		panic(err)
	}
	a := st.Groups[0].Accuracy
	fmt.Printf("%s: accuracy %.3f ± %.3f over %d outcomes of %d tasks\n", st.Groups[0].Group, a.Mean, *a.SE, a.N, a.Clusters)
	fmt.Printf("pass@2 %.3f\n", st.Groups[0].PassAtK[1].Mean)
	// Output:
	// 6 of 6 outcomes settled, 6 runs
	// fours: accuracy 0.667 ± 0.333 over 6 outcomes of 3 tasks
	// pass@2 0.667
}
