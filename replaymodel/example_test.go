package replaymodel_test

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/replaymodel"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// Record a run, then replay its model replies with a stricter parser: no
// model is called the second time.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	agent := polyloop.Agent{Name: "reader", Tools: []polyloop.ToolSpec{{Name: "read"}}}
	task := polyloop.Task{Input: "How long is notes.txt?"}

	recorder := &polyloop.Runner{
		Model: scriptmodel.New(
			scriptmodel.Call("c1", "read", map[string]string{"path": "notes.txt"}),
			scriptmodel.Reply("12 lines."),
		),
		Parser: toolcallparser.New(toolcallparser.Options{}), Executor: fileExec{}, Store: store,
	}
	if _, err := recorder.Run(ctx, "recorded", agent, task); err != nil {
		panic(err)
	}

	log, err := polyloop.ReadLog(ctx, store, "recorded")
	if err != nil {
		panic(err)
	}
	client, err := replaymodel.New(log, replaymodel.Options{})
	if err != nil {
		panic(err)
	}
	replayer := &polyloop.Runner{
		Model:  client,
		Parser: toolcallparser.New(toolcallparser.Options{RequireAction: true}), Executor: fileExec{}, Store: store,
	}
	res, err := replayer.Run(ctx, "replayed", agent, task)
	if err != nil {
		panic(err)
	}
	replayed, _ := polyloop.ReadLog(ctx, store, "replayed")
	results := replayed.ModelResults()
	fmt.Println(res.StopReason)
	fmt.Println(results[len(results)-1].Failure.Message)
	// Output:
	// llm_error
	// replaymodel: no recorded reply: recorded run "recorded" has no model result for step 3 (it has 2)
}
