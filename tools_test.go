package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// listingExec is testExec that knows its tools (a polyloop.ToolLister).
type listingExec struct {
	*testExec
	specs []polyloop.ToolSpec
}

func (e listingExec) ToolSpecs() []polyloop.ToolSpec {
	return append([]polyloop.ToolSpec(nil), e.specs...)
}

var listedTools = []polyloop.ToolSpec{
	{Name: "echo", Description: "echo text", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`), Replay: polyloop.ReplaySafe},
	{Name: "send", Description: "send a message", Replay: polyloop.NeverReplay},
}

func listingRunner(store polyloop.Store, turns ...scriptmodel.Turn) *polyloop.Runner {
	return &polyloop.Runner{Model: scriptmodel.New(turns...), Parser: testParser{},
		Executor: listingExec{testExec: newTestExec(), specs: listedTools}, Store: store}
}

// TestAgentToolsComeFromTheExecutor leaves Agent.Tools out with an executor
// that lists its tools: the snapshot holds the executor's tools, and the
// action intent records the replay policy the executor gives (replay_safe),
// not the never_replay of an unknown tool.
func TestAgentToolsComeFromTheExecutor(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	r := listingRunner(store, call(1, "echo", map[string]string{"text": "hi"}), scriptmodel.Turn{Text: "done"})
	agent := polyloop.Agent{Name: "lister"}
	if _, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	snap, _ := log.Snapshot()
	if len(snap.Tools) != 2 || snap.Tools[0].Name != "echo" || snap.Tools[1].Name != "send" {
		t.Fatalf("snapshot tools %+v, want the executor's echo and send", snap.Tools)
	}
	var intent *polyloop.ActionIntent
	for _, rec := range log.Records {
		if ai, ok := rec.Body.(*polyloop.ActionIntent); ok {
			intent = ai
		}
	}
	if intent == nil || intent.Replay != polyloop.ReplaySafe {
		t.Fatalf("action intent %+v, want replay_safe from the executor's echo", intent)
	}
	// Resume with the agent as given (no tools) agrees with the stored
	// snapshot: the tools are filled in the same way.
	if _, err := r.Resume(context.Background(), "r", agent); err != nil {
		t.Fatalf("Resume: %v", err)
	}
}

// TestAgentToolsThatDisagreeAreRefused gives Agent.Tools that differ from the
// executor's in each possible way: Run and Resume refuse with
// ErrInvalidConfig, name each disagreement, and write nothing.
func TestAgentToolsThatDisagreeAreRefused(t *testing.T) {
	t.Parallel()
	echo, send := listedTools[0], listedTools[1]
	extra := polyloop.ToolSpec{Name: "extra"}
	safeSend := send
	safeSend.Replay = polyloop.ReplaySafe
	otherDesc := echo
	otherDesc.Description = "repeat text"
	otherSchema := echo
	otherSchema.Parameters = json.RawMessage(`{"type":"object","properties":{"text":{"type":"integer"}}}`)
	tests := []struct {
		name  string
		tools []polyloop.ToolSpec
		want  []string
	}{
		{"missing from the agent", []polyloop.ToolSpec{echo}, []string{`the executor offers tool "send", which Agent.Tools leaves out`}},
		{"unknown to the executor", []polyloop.ToolSpec{echo, send, extra}, []string{`tool "extra" is in Agent.Tools, but the executor does not offer it`}},
		{"replay policy", []polyloop.ToolSpec{echo, safeSend}, []string{`tool "send": replay policy replay_safe in Agent.Tools, never_replay in the executor`}},
		{"description", []polyloop.ToolSpec{otherDesc, send}, []string{`tool "echo": the description differs`}},
		{"schema", []polyloop.ToolSpec{otherSchema, send}, []string{`tool "echo": the parameter schema differs`}},
		{"several", []polyloop.ToolSpec{otherDesc, extra}, []string{`tool "echo": the description differs`, `tool "extra" is in Agent.Tools`, `offers tool "send"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memstore.New()
			r := listingRunner(store, scriptmodel.Turn{Text: "done"})
			agent := polyloop.Agent{Name: "a", Tools: tt.tools}
			_, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "t"})
			checkRefused(t, "Run", err, tt.want)
			if log, _ := polyloop.ReadLog(context.Background(), store, "r"); !log.Empty() {
				t.Errorf("Run wrote %d records for a refused agent", len(log.Records))
			}
			_, err = r.Resume(context.Background(), "r", agent)
			checkRefused(t, "Resume", err, tt.want)
			_, err = r.Fork(context.Background(), "src", 0, "f", agent)
			checkRefused(t, "Fork", err, tt.want)
		})
	}
}

func checkRefused(t *testing.T, op string, err error, want []string) {
	t.Helper()
	if !errors.Is(err, polyloop.ErrInvalidConfig) {
		t.Fatalf("%s: %v, want ErrInvalidConfig", op, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: the error does not say %q:\n%v", op, w, err)
		}
	}
}

// TestAgentToolsThatAgreeAreAccepted gives the executor's tools with the
// schema spaced and ordered differently and the replay policy left to its
// default: they agree.
func TestAgentToolsThatAgreeAreAccepted(t *testing.T) {
	t.Parallel()
	echo, send := listedTools[0], listedTools[1]
	echo.Parameters = json.RawMessage(`{ "properties": {"text": {"type": "string"}}, "type": "object" }`)
	send.Replay = ""
	r := listingRunner(memstore.New(), scriptmodel.Turn{Text: "done"})
	res, err := r.Run(context.Background(), "r", polyloop.Agent{Name: "a", Tools: []polyloop.ToolSpec{send, echo}}, polyloop.Task{Input: "t"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run: %+v, %v", res, err)
	}
}

// TestEmptyAgentNameIsRefused: every run is listed under its agent's name.
func TestEmptyAgentNameIsRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "  "} {
		store := memstore.New()
		r := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Turn{Text: "done"}), Parser: testParser{}, Executor: newTestExec(), Store: store}
		_, err := r.Run(context.Background(), "r", polyloop.Agent{Name: name}, polyloop.Task{Input: "t"})
		if !errors.Is(err, polyloop.ErrInvalidConfig) || !strings.Contains(err.Error(), "Agent.Name is empty") {
			t.Errorf("Run with name %q: %v, want ErrInvalidConfig saying Agent.Name is empty", name, err)
		}
		if log, _ := polyloop.ReadLog(context.Background(), store, "r"); !log.Empty() {
			t.Errorf("Run with name %q wrote %d records", name, len(log.Records))
		}
		_, err = r.Resume(context.Background(), "r", polyloop.Agent{Name: name})
		if !errors.Is(err, polyloop.ErrInvalidConfig) {
			t.Errorf("Resume with name %q: %v, want ErrInvalidConfig", name, err)
		}
		_, err = r.Fork(context.Background(), "src", 0, "f", polyloop.Agent{Name: name})
		if !errors.Is(err, polyloop.ErrInvalidConfig) {
			t.Errorf("Fork with name %q: %v, want ErrInvalidConfig", name, err)
		}
	}
}
