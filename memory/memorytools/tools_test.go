package memorytools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memory/memorytools"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// toolRun is a run whose agent uses the memory tools, with no maintenance.
type toolRun struct {
	runs   *memstore.Store
	mem    *polylooptest.FaultyMemoryStore
	memory *memory.Memory
	runner *polyloop.Runner
	agent  polyloop.Agent
}

func newToolRun(t *testing.T, runs *memstore.Store, turns ...scriptmodel.Turn) *toolRun {
	t.Helper()
	tr := &toolRun{runs: runs, mem: polylooptest.NewFaultyMemoryStore(runs)}
	tr.restart(t, turns...)
	return tr
}

func (tr *toolRun) restart(t *testing.T, turns ...scriptmodel.Turn) {
	t.Helper()
	var err error
	if tr.memory, err = memory.New(tr.mem, memory.Options{Namespaces: []string{"notes"}}); err != nil {
		t.Fatal(err)
	}
	exec := funcexec.New()
	if err := memorytools.Register(exec, tr.memory); err != nil {
		t.Fatal(err)
	}
	tr.runner = &polyloop.Runner{Model: scriptmodel.New(turns...), Parser: toolcallparser.New(toolcallparser.Options{}), Executor: exec, Store: tr.runs}
	tr.agent = polyloop.Agent{Name: "tooler", Tools: exec.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 10}}
}

func observations(log polyloop.RunLog) []string {
	var out []string
	for _, s := range log.Steps() {
		if s.Outcome != nil {
			out = append(out, s.Observation)
		}
	}
	return out
}

func toolScript() []scriptmodel.Turn {
	return []scriptmodel.Turn{
		scriptmodel.Call("c1", "remember", map[string]any{"key": "user", "value": map[string]any{"name": "Ada"}}),
		scriptmodel.Call("c2", "recall", map[string]any{"key": "user"}),
		scriptmodel.Call("c3", "remember", map[string]any{"key": "user", "value": "stale", "version": 0}),
		scriptmodel.Call("c4", "forget", map[string]any{"key": "user"}),
		scriptmodel.Call("c5", "recall", map[string]any{}),
		scriptmodel.Reply("done"),
	}
}

// remember, recall and forget: what they say, what they write, and the
// provenance of each version (the run, step and action that wrote it). A
// write from a version that is no longer live is a conflict the model is
// told about; nothing is written.
func TestTools(t *testing.T) {
	tr := newToolRun(t, memstore.New(), toolScript()...)
	res, err := tr.runner.Run(bg, "r", tr.agent, polyloop.Task{Input: "x"})
	mustFinish(t, res, err)
	got := observations(mustLog(t, tr.runs, "r"))
	want := []string{
		"remembered notes/user (version 1)",
		`notes/user @1: {"name":"Ada"}`,
		"not written: memory: write \"r/a3\" conflicts: notes/user is at version 1, the basis expects 0; recall it and decide",
		"forgot notes/user (version 2)",
		"notes: nothing remembered",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	h, _ := tr.runs.EntryHistory(bg, "notes", "user")
	if len(h) != 2 || h[0].Provenance != (memory.Provenance{RunID: "r", Step: 1, CallID: "a1", WriteID: "r/a1"}) || !h[1].Deleted || h[1].Provenance.Step != 4 {
		t.Fatalf("history %+v", h)
	}
}

func mustLog(t *testing.T, s *memstore.Store, id string) polyloop.RunLog {
	t.Helper()
	l, err := polyloop.ReadLog(bg, s, id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The tools' writes are idempotent under replay: crash the run at every
// record, resume it in a new process — a replayed remember or forget finds
// its own earlier commit — and the memory holds each write once.
func TestToolsReplayIdempotent(t *testing.T) {
	ref := newToolRun(t, memstore.New(), toolScript()...)
	res, err := ref.runner.Run(bg, "r", ref.agent, polyloop.Task{Input: "x"})
	mustFinish(t, res, err)
	wantLog := mustLog(t, ref.runs, "r")
	wantHistory, _ := ref.runs.EntryHistory(bg, "notes", "user")
	for n := 1; n < len(wantLog.Records); n++ {
		for _, lostAck := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-ack-lost=%v", n, lostAck), func(t *testing.T) {
				runs := memstore.NewWithOptions(memstore.Options{CrashAfter: n})
				tr := newToolRun(t, runs, toolScript()...)
				if lostAck {
					runs.SetFaults(memstore.Options{})
					tr.mem.FailCommit(n%2+1, polylooptest.LoseAck) // the first or second write
				}
				if _, err := tr.runner.Run(bg, "r", tr.agent, polyloop.Task{Input: "x"}); err == nil {
					if lostAck {
						return // the fault fell after the run's last write
					}
					t.Fatal("the crash did not stop the run")
				}
				runs.SetFaults(memstore.Options{})
				tr.restart(t, toolScript()...)
				res, err := tr.runner.Resume(bg, "r", tr.agent)
				if errors.Is(err, polyloop.ErrRunNotFound) {
					res, err = tr.runner.Run(bg, "r", tr.agent, polyloop.Task{Input: "x"})
				}
				mustFinish(t, res, err)
				if err := polylooptest.CheckEquivalent(mustLog(t, runs, "r"), wantLog); err != nil {
					t.Fatal(err)
				}
				h, _ := runs.EntryHistory(bg, "notes", "user")
				if len(h) != len(wantHistory) {
					t.Fatalf("history %+v, want %+v", h, wantHistory)
				}
			})
		}
	}
}

// A Memory broken by a persistence failure makes the tools fail the run,
// not answer the model: a mechanism failure is never an observation.
func TestToolsPropagatePersistence(t *testing.T) {
	tr := newToolRun(t, memstore.New(),
		scriptmodel.Call("c1", "remember", map[string]any{"key": "a", "value": 1}),
		scriptmodel.Call("c2", "recall", map[string]any{"key": "a"}),
		scriptmodel.Reply("done"))
	tr.mem.FailCommit(1, polylooptest.FailBefore)
	_, err := tr.runner.Run(bg, "r", tr.agent, polyloop.Task{Input: "x"})
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
	log := mustLog(t, tr.runs, "r")
	if log.Records[len(log.Records)-1].Kind() != polyloop.KindActionIntent {
		t.Fatalf("log ends with %s: the failure became an outcome", log.Records[len(log.Records)-1].Kind())
	}
	// Resume reloads nothing here (the tools' Memory is not the agent's
	// view or maintainer): the host reloads it, then resumes.
	if err := tr.memory.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := tr.runner.Resume(bg, "r", tr.agent)
	mustFinish(t, res, err)
	if got := observations(mustLog(t, tr.runs, "r")); got[1] != "notes/a @1: 1" {
		t.Fatalf("observations %q", got)
	}
}

var bg = context.Background()

func mustFinish(t *testing.T, res polyloop.RunResult, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop %s", res.StopReason)
	}
}
