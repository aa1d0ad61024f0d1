package polyloop_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// A run that crashes after its first action, resumed from its log.
func ExampleRunner_Resume() {
	ctx := context.Background()
	store := memstore.NewWithOptions(memstore.Options{CrashAfter: 5}) // the store "dies" after 5 records
	runner := &polyloop.Runner{
		Model: scriptmodel.New(
			scriptmodel.Call("c1", "echo", map[string]string{"text": "hello"}),
			scriptmodel.Reply("said hello"),
		),
		Parser:   testParser{},
		Executor: newTestExec(),
		Store:    store,
	}
	agent := polyloop.Agent{Name: "example", Tools: []polyloop.ToolSpec{{Name: "echo", Replay: polyloop.ReplaySafe}}}

	_, err := runner.Run(ctx, "run-1", agent, polyloop.Task{Input: "say hello"})
	fmt.Println("crashed:", errors.Is(err, memstore.ErrCrashed))

	store.SetFaults(memstore.Options{}) // the store is back
	res, err := runner.Resume(ctx, "run-1", agent)
	if err != nil {
		panic(err)
	}
	fmt.Println("plan:", res.Plan.Action)
	fmt.Println("result:", res.StopReason, res.FinalAnswer, res.Totals.Steps, "steps")
	// Output:
	// crashed: true
	// plan: replay_action
	// result: completed said hello 2 steps
}

// PlanResume is a pure function of a log.
func ExamplePlanResume() {
	store := memstore.NewWithOptions(memstore.Options{CrashAfter: 2})
	runner := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("hi")), Parser: testParser{}, Executor: newTestExec(), Store: store}
	_, _ = runner.Run(context.Background(), "r", polyloop.Agent{Name: "a"}, polyloop.Task{Input: "t"})
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	plan, err := polyloop.PlanResume(log)
	fmt.Println(plan.Action, err)
	// Output:
	// retry_model_call <nil>
}
