package funcexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

type emitArgs struct {
	What string `json:"what"`
}

// emits are texts a tool may return that the log cannot hold as they are:
// control characters that JSON escapes to six bytes each (66 MiB escaped),
// bytes that are not UTF-8, and an error text too long.
var emits = map[string]func() (string, error){
	"escaped": func() (string, error) { return strings.Repeat("\x01", 11<<20), nil },
	"binary":  func() (string, error) { return "ok \xff\xfe done", nil },
	"error":   func() (string, error) { return "", errors.New(strings.Repeat("é", polyloop.MaxObservationBytes)) },
}

func newEmitter(t *testing.T) *funcexec.Executor {
	t.Helper()
	e := funcexec.New()
	if err := funcexec.Register(e, "emit", "Returns a text.", polyloop.ReplaySafe,
		func(_ context.Context, a emitArgs) (string, error) { return emits[a.What]() }); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestObservationBounds: whatever a function returns, the observation is
// valid UTF-8 within polyloop.MaxObservationBytes, with the characters cut
// counted; and the run stores it and reads it back as the model saw it.
func TestObservationBounds(t *testing.T) {
	t.Parallel()
	e := newEmitter(t)
	for _, what := range []string{"binary", "error", "escaped"} {
		args, _ := json.Marshal(emitArgs{What: what})
		out, err := e.Execute(context.Background(), polyloop.Action{Tool: "emit", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Observation) > polyloop.MaxObservationBytes || !utf8.ValidString(out.Observation) {
			t.Errorf("%s: an observation of %d bytes (valid UTF-8: %t)", what, len(out.Observation), utf8.ValidString(out.Observation))
		}
		if (out.TruncatedChars > 0) != strings.Contains(out.Observation, "[output truncated: ") {
			t.Errorf("%s: %d characters truncated, and the note is %q", what, out.TruncatedChars, out.Observation[max(len(out.Observation)-60, 0):])
		}
		runAndReadBack(t, e, what)
	}
}

func runAndReadBack(t *testing.T, e *funcexec.Executor, what string) {
	t.Helper()
	args, _ := json.Marshal(emitArgs{What: what})
	model := scriptmodel.New(scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "emit", Args: args}}}, scriptmodel.Turn{Text: "done"})
	store := memstore.New()
	r := &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: e, Store: store}
	agent := polyloop.Agent{Name: "emit", Tools: e.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 3}}
	if _, err := r.Run(context.Background(), what, agent, polyloop.Task{Input: "go"}); err != nil {
		t.Fatalf("%s: Run: %v", what, err)
	}
	l, err := polyloop.ReadLog(context.Background(), store, what)
	if err != nil {
		t.Fatal(err)
	}
	step := l.Steps()[0]
	b, err := json.Marshal(step)
	if err != nil {
		t.Fatal(err)
	}
	var back polyloop.StepCompleted
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: the step record does not decode: %v", what, err)
	}
	live := step.Observation
	if got := back.Observation; got != live {
		t.Errorf("%s: the observation read back (%d bytes) differs from the one the model saw (%d bytes)", what, len(got), len(live))
	}
}
