package replaymodel_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/replaymodel"
)

// kitLog is a recorded run whose step 1 answers polylooptest's default
// request; task changes the recorded task, fail records a failure instead
// of the reply, noResult leaves the call without a result.
func kitLog(task string, fail, noResult bool) polyloop.RunLog {
	req := polylooptest.DefaultRequest()
	snap := polyloop.Snapshot{Agent: "kit", System: req.Messages[0].Content, Task: polyloop.Task{Input: task}, Model: req.Params}
	result := &polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: &polyloop.ModelReply{
		Text: "Hello.", Usage: polyloop.Usage{InputTokens: 12, OutputTokens: 2}, Model: "gpt-test", Attempts: 1,
	}}
	if fail {
		result.Reply, result.Failure = nil, &diag.Diagnostic{Type: "*errors.errorString", Message: "HTTP 500"}
	}
	bodies := []polyloop.RecordBody{
		&polyloop.RunStarted{RunID: "kit-rec", Snapshot: snap, SnapshotHash: "sha256:kit"},
		&polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
	}
	if !noResult {
		bodies = append(bodies, result)
	}
	return logOf("kit-rec", bodies...)
}

func kitClient(log polyloop.RunLog) func(testing.TB) polyloop.ModelClient {
	return func(t testing.TB) polyloop.ModelClient {
		c, err := replaymodel.New(log, replaymodel.Options{Match: replaymodel.MatchExact})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// TestContract runs the ModelClient contract kit. It is not parallel: the
// kit counts goroutines. A replay never blocks, so the in-flight
// cancellation checks have no hanging client and are skipped.
func TestContract(t *testing.T) {
	hello := polylooptest.DefaultRequest().Messages[1].Content
	polylooptest.TestModelClient(t, polylooptest.ModelClientHarness{
		New: kitClient(kitLog(hello, false, false)),
		Failing: map[string]func(testing.TB) polyloop.ModelClient{
			"recorded_failure": kitClient(kitLog(hello, true, false)),
			"diverged":         kitClient(kitLog("another task", false, false)),
			"exhausted":        kitClient(kitLog(hello, false, true)),
		},
	})
}
