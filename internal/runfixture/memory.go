package runfixture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

// MemoryRun is the id of the run Remembering writes by default.
const MemoryRun = "memory-1"

// ViewName is the name of the view of Remembering's agent.
const ViewName = "notes"

// MemoryStore holds runs, memories and views (memstore, sqlitestore and
// pgstore do).
type MemoryStore interface {
	polyloop.Store
	memory.Store
	memory.ViewStore
}

// Remembering writes run id (agent notetaker), an agent with a memory on
// st and a view of it, uninterrupted: step 1 echoes note, step 2 echoes it
// again, step 3 answers. After each step a proposer (a child run) is
// asked: after step 1 it proposes to remember note under notes/note (the
// view shows what is written: version 1); after step 2 it fails with
// "proposer down: NOTE" and the maintenance skips the proposal; after step
// 3 it proposes nothing. So step 2's and 3's model calls show view
// version 1, and every kind of maintenance record is in the log.
func Remembering(tb testing.TB, st MemoryStore, clock *Clock, id, note string) {
	tb.Helper()
	r, agent := rememberer(tb, st, clock, note)
	Run(tb, r, id, agent, "Take a note of "+note)
}

// RememberingCrashed writes run id as Remembering does, on a run store that
// crashes once it has accepted records records of the run (the memory and
// the proposer's runs are written to st as they come): the run is left
// unfinished, as a killed process leaves it.
func RememberingCrashed(tb testing.TB, st MemoryStore, clock *Clock, id, note string, records int) {
	tb.Helper()
	r, agent := rememberer(tb, st, clock, note)
	r.Store = &polylooptest.FaultyStore{Store: st, CrashAfter: records}
	if _, err := r.Run(context.Background(), id, agent, polyloop.Task{Input: "Take a note of " + note}); !errors.Is(err, polylooptest.ErrCrashed) {
		tb.Fatalf("run %s on a crashing store: %v, want a crash", id, err)
	}
}

// RememberingLong writes run id (agent notetaker) of steps steps, each an
// echo, then an answer; after each step the proposer remembers notes/last
// = "step N", so that each step's maintenance writes the memory and makes a
// view version, and each model call shows the one before it.
func RememberingLong(tb testing.TB, st MemoryStore, clock *Clock, id string, steps int) {
	tb.Helper()
	r, agent := maintained(tb, st, clock, func(step int) (scriptmodel.Turn, bool) {
		return scriptmodel.Reply(fmt.Sprintf(`{"memory": [{"op": "put", "namespace": "notes", "key": "last", "value": "step %d"}]}`, step)), true
	})
	turns := make([]scriptmodel.Turn, 0, steps+1)
	for i := range steps {
		turns = append(turns, Echo(fmt.Sprintf("c%d", i+1), fmt.Sprintf("observation of step %d: some output of a tool", i+1)))
	}
	r.Model = scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 0.000001}, append(turns, scriptmodel.Reply("noted"))...)
	agent.Limits.MaxSteps = steps + 1
	Run(tb, r, id, agent, "Take notes as you go")
}

// rememberer is Remembering's runner and agent.
func rememberer(tb testing.TB, st MemoryStore, clock *Clock, note string) (*polyloop.Runner, polyloop.Agent) {
	tb.Helper()
	value, err := json.Marshal(note)
	if err != nil {
		tb.Fatal(err)
	}
	turns := map[int]scriptmodel.Turn{
		1: scriptmodel.Reply(`{"memory": [{"op": "put", "namespace": "notes", "key": "note", "value": ` + string(value) + `}]}`),
		2: scriptmodel.Fail(errors.New("proposer down: " + note)),
		3: scriptmodel.Reply(`{"memory": []}`),
	}
	r, agent := maintained(tb, st, clock, func(step int) (scriptmodel.Turn, bool) { t, ok := turns[step]; return t, ok })
	r.Model = scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 0.000001}, Echo("c1", note), Echo("c2", note), scriptmodel.Reply("noted"))
	return r, agent
}

// maintained is a runner and an agent with a memory on st, a view of it,
// and a maintainer whose proposer answers with propose(the parent step).
func maintained(tb testing.TB, st MemoryStore, clock *Clock, propose proposerModel) (*polyloop.Runner, polyloop.Agent) {
	tb.Helper()
	mem, err := memory.New(st, memory.Options{Namespaces: []string{"notes"}})
	if err != nil {
		tb.Fatal(err)
	}
	view, err := memory.NewView(st, memory.ViewOptions{Name: ViewName, Memory: mem})
	if err != nil {
		tb.Fatal(err)
	}
	proposer := propose
	child := Runner(st, clock, 0.000001)
	child.Model = proposer
	maint, err := memory.NewMaintainer(memory.MaintainerOptions{Memory: mem, View: view, OnProposalFailure: memory.Skip,
		Proposer: polyloop.Child{Runner: child, Agent: polyloop.Agent{Name: "notetaker.proposer", System: memory.DefaultProposerSystem, Limits: polyloop.Limits{MaxSteps: 1}}}})
	if err != nil {
		tb.Fatal(err)
	}
	agent := Agent("notetaker", "You take notes.")
	agent.Memory = &polyloop.AgentMemory{View: view, Maintainer: maint}
	return Runner(st, clock, 0.000001), agent
}

// proposerModel answers a proposer by the parent step its task is about
// (false: no answer for that step).
type proposerModel func(step int) (scriptmodel.Turn, bool)

var parentStep = regexp.MustCompile(`step (\d+) \(`)

// Complete implements polyloop.ModelClient.
func (p proposerModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	step := 0
	for _, m := range req.Messages {
		if sm := parentStep.FindStringSubmatch(m.Content); sm != nil && m.Role == polyloop.RoleUser {
			step, _ = strconv.Atoi(sm[1])
			break
		}
	}
	turn, ok := p(step)
	if !ok {
		return polyloop.ModelReply{}, scriptmodel.ErrExhausted
	}
	return scriptmodel.New(turn).Complete(ctx, polyloop.ModelRequest{Step: 1, Messages: req.Messages})
}

// Describe implements polyloop.Describer.
func (proposerModel) Describe() polyloop.Component {
	return polyloop.Component{Name: "runfixture.proposerModel"}
}
