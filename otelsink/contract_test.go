package otelsink_test

import (
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/polylooptest"
)

func TestEventSinkContract(t *testing.T) {
	var mu sync.Mutex
	recorders := map[polyloop.EventSink]*tracetest.SpanRecorder{}
	polylooptest.TestEventSink(t, polylooptest.SinkHarness{
		New: func(testing.TB) polyloop.EventSink {
			sink, sr := recorder(otelsink.Options{IncludeContent: true})
			mu.Lock()
			defer mu.Unlock()
			recorders[sink] = sr
			return sink
		},
		// NewFailing is not given: spans are exported asynchronously by the
		// SDK's span processor, whose failures go to otel's ErrorHandler;
		// Emit itself has no delivery step that can fail.
		Verify: func(_ testing.TB, sink polyloop.EventSink, emitted []polyloop.Event) error {
			mu.Lock()
			sr := recorders[sink]
			mu.Unlock()
			return verifySpans(sr, emitted)
		},
	})
}

// verifySpans checks that the events became invoke_agent, chat and
// execute_tool spans of the run, all ended (the stream ends in run_finished).
func verifySpans(sr *tracetest.SpanRecorder, emitted []polyloop.Event) error {
	if len(sr.Started()) != len(sr.Ended()) {
		return fmt.Errorf("%d spans started, %d ended", len(sr.Started()), len(sr.Ended()))
	}
	ops := map[string]int{}
	for _, s := range sr.Ended() {
		a := attrsOf(s)
		if got := a["polyloop.run_id"].AsString(); got != emitted[0].RunID {
			return fmt.Errorf("span %s has polyloop.run_id %q, want %q", s.Name(), got, emitted[0].RunID)
		}
		ops[a["gen_ai.operation.name"].AsString()]++
	}
	for _, op := range []string{"invoke_agent", "chat", "execute_tool"} {
		if ops[op] == 0 {
			return fmt.Errorf("no %s span among %v", op, names(sr.Ended()))
		}
	}
	return nil
}
