package funcexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// TestAgentToolsCannotDrift runs agents on a funcexec executor through a
// Runner: an agent without tools gets the registered ones (and the replay
// policy they were registered with reaches the log); an agent whose tools
// were copied before the registration changed is refused.
func TestAgentToolsCannotDrift(t *testing.T) {
	t.Parallel()
	e, _ := newAdder(t)
	stale := e.ToolSpecs()
	funcexec.MustRegister(e, "echo", "Echo the query.", polyloop.ReplaySafe, func(_ context.Context, a queryArgs) (string, error) { return a.SQL, nil })
	store := memstore.New()
	runner := func() *polyloop.Runner {
		return &polyloop.Runner{Executor: e, Store: store, Parser: toolcallparser.New(toolcallparser.Options{}),
			Model: scriptmodel.New(scriptmodel.Call("c1", "echo", map[string]string{"sql": "select 1"}), scriptmodel.Turn{Text: "done"})}
	}
	if _, err := runner().Run(context.Background(), "r1", polyloop.Agent{Name: "a"}, polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	snap, _ := log.Snapshot()
	if len(snap.Tools) != 2 || snap.Tools[1].Name != "echo" {
		t.Fatalf("snapshot tools %+v, want the registered add and echo", snap.Tools)
	}
	for _, rec := range log.Records {
		if ai, ok := rec.Body.(*polyloop.ActionIntent); ok && ai.Replay != polyloop.ReplaySafe {
			t.Errorf("action intent records %s, want the registered replay_safe", ai.Replay)
		}
	}

	_, err := runner().Run(context.Background(), "r2", polyloop.Agent{Name: "a", Tools: stale}, polyloop.Task{Input: "t"})
	if !errors.Is(err, polyloop.ErrInvalidConfig) || !strings.Contains(err.Error(), `offers tool "echo"`) {
		t.Fatalf("Run with stale tools: %v, want ErrInvalidConfig naming echo", err)
	}
}
