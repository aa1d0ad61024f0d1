package polyloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// Workload W (issue 10): each step, one scripted reply of about 200
// characters with one tool call noop {"i": step, "note": ~50 chars}; noop
// returns a fixed ~100-character string; call S+1 answers. Replay-safe tool,
// native tool calls.
var (
	wText   = strings.Repeat("I will call the noop tool to make progress. ", 5)[:200]
	wNote   = strings.Repeat("a note of fifty characters ", 2)[:50]
	wResult = strings.Repeat("noop result ", 9)[:100]
)

func workloadW(steps int) *scriptmodel.Client {
	turns := make([]scriptmodel.Turn, 0, steps+1)
	for i := 1; i <= steps; i++ {
		args, _ := json.Marshal(map[string]any{"i": i, "note": wNote})
		turns = append(turns, scriptmodel.Turn{Text: wText,
			ToolCalls: []polyloop.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "noop", Args: args}},
			Usage:     &polyloop.Usage{InputTokens: 100, OutputTokens: 60}})
	}
	return scriptmodel.New(append(turns, scriptmodel.Turn{Text: "final answer", Usage: &polyloop.Usage{InputTokens: 100, OutputTokens: 5}})...)
}

type noopExec struct{}

func (noopExec) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: wResult}, nil
}

var wAgent = polyloop.Agent{Name: "w", Tools: []polyloop.ToolSpec{{Name: "noop", Replay: polyloop.ReplaySafe,
	Parameters: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"note":{"type":"string"}}}`)}}}

// BenchmarkLoop measures the library's own time per step on workload W with
// the in-memory store: ns/op and allocs/op are per step.
func BenchmarkLoop(b *testing.B) {
	for _, steps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("S=%d", steps), func(b *testing.B) {
			model := workloadW(steps)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: noopExec{}, Store: memstore.New()}
				b.StartTimer()
				res, err := r.Run(context.Background(), "w", wAgent, polyloop.Task{Input: "run workload W"})
				if err != nil || res.Totals.Steps != steps+1 {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(steps+1)), "ns/step")
		})
	}
}
