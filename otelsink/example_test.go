package otelsink_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// A runner with an otelsink records one invoke_agent span per invocation,
// with a chat span per model call and an execute_tool span per action.
func Example() {
	rec := tracetest.NewSpanRecorder() // an application would use an exporter
	sink := otelsink.New(otelsink.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	r := &polyloop.Runner{
		Model:    scriptmodel.New(scriptmodel.Call("c1", "lookup", map[string]string{"k": "a"}), scriptmodel.Reply("42")),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: e2eExecutor{},
		Store:    memstore.New(),
		Sinks:    []polyloop.EventSink{sink},
	}
	agent := polyloop.Agent{Name: "demo", Tools: []polyloop.ToolSpec{{Name: "lookup"}},
		Model: polyloop.ModelParams{Model: "script-1"}}
	res, err := r.Run(context.Background(), "", agent, polyloop.Task{Input: "what is k?"})
	if err != nil {
		sink.EndRun(res.RunID, err) // no run_finished will come
	}
	for _, s := range rec.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// chat script-1
	// execute_tool lookup
	// chat script-1
	// invoke_agent demo
}
