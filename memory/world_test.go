package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// funcModel is a model client made of a function.
type funcModel struct {
	mu    sync.Mutex
	calls int
	fn    func(ctx context.Context, req polyloop.ModelRequest) (string, error)
}

func (m *funcModel) Describe() polyloop.Component { return polyloop.Component{Name: "funcModel"} }

func (m *funcModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	text, err := m.fn(ctx, req)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	return polyloop.ModelReply{Text: text, Usage: polyloop.Usage{InputTokens: 1, OutputTokens: 1}}, nil
}

var stepOfTask = regexp.MustCompile(`step (\d+) \(`)

// taskStep is the parent step a proposer's task is about.
func taskStep(req polyloop.ModelRequest) int {
	for _, m := range req.Messages {
		if sm := stepOfTask.FindStringSubmatch(m.Content); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			return n
		}
	}
	return 0
}

// seenModel is a scripted model that keeps what it was asked.
type seenModel struct {
	*scriptmodel.Client
	seen *requests
}

func (m *seenModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.seen.keep(req)
	return m.Client.Complete(ctx, req)
}

// requests keeps the messages of the main model's last request per step.
type requests struct {
	mu   sync.Mutex
	last map[int]string
}

func (r *requests) keep(req polyloop.ModelRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[int]string{}
	}
	b, _ := json.Marshal(req.Messages)
	r.last[req.Step] = string(b)
}

func (r *requests) get() map[int]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]string{}
	for k, v := range r.last {
		out[k] = v
	}
	return out
}

// world is one process's view of an agent with memory: the run store (which
// also holds the memory, through a fault injector), the entities, the
// maintainer and the runner. restart builds new entities over the same
// stores, as a new process would.
type world struct {
	t         *testing.T
	runs      *memstore.Store
	mem       *polylooptest.FaultyMemoryStore
	opts      memory.MaintainerOptions
	memory    *memory.Memory
	view      *memory.View
	runner    *polyloop.Runner
	agent     polyloop.Agent
	proposals *funcModel // the proposer's model
	main      polyloop.ModelClient
	seen      requests
	publish   func(context.Context, memory.Commit) error
	published int
}

// newWorld: the main agent runs script (its model answers turn i at step
// i+1); the proposer answers with propose(step); policies from opts.
func newWorld(t *testing.T, runs *memstore.Store, opts memory.MaintainerOptions, script []scriptmodel.Turn, propose func(ctx context.Context, step int) (string, error)) *world {
	t.Helper()
	w := &world{t: t, runs: runs, mem: polylooptest.NewFaultyMemoryStore(runs), opts: opts}
	w.proposals = &funcModel{fn: func(ctx context.Context, req polyloop.ModelRequest) (string, error) {
		return propose(ctx, taskStep(req))
	}}
	w.main = &seenModel{Client: scriptmodel.New(script...), seen: &w.seen}
	w.restart()
	return w
}

// restart builds the entities, the maintainer and the runner again.
func (w *world) restart() {
	t := w.t
	t.Helper()
	var err error
	publish := func(ctx context.Context, c memory.Commit) error {
		w.published++
		if w.publish != nil {
			return w.publish(ctx, c)
		}
		return nil
	}
	if w.memory, err = memory.New(w.mem, memory.Options{Namespaces: []string{"notes", "facts"}, Publish: publish}); err != nil {
		t.Fatal(err)
	}
	if w.view, err = memory.NewView(w.mem, memory.ViewOptions{Name: "shown", Memory: w.memory, Sources: []string{"notes"}}); err != nil {
		t.Fatal(err)
	}
	opts := w.opts
	opts.Memory, opts.View = w.memory, w.view
	opts.Proposer = polyloop.Child{Agent: polyloop.Agent{Name: "proposer", System: memory.DefaultProposerSystem, Limits: polyloop.Limits{MaxSteps: 1}},
		Runner: &polyloop.Runner{Model: w.proposals, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: funcexec.New(), Store: w.runs}}
	maint, err := memory.NewMaintainer(opts)
	if err != nil {
		t.Fatal(err)
	}
	exec := funcexec.New()
	funcexec.MustRegister(exec, "echo", "echo its text", polyloop.ReplaySafe, func(ctx context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	w.runner = &polyloop.Runner{Model: w.main, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: exec, Store: w.runs}
	w.agent = polyloop.Agent{Name: "agent", System: "You are a careful agent.", Tools: exec.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 10},
		Memory: &polyloop.AgentMemory{View: w.view, Maintainer: maint}}
}

func (w *world) run(ctx context.Context, id string) (polyloop.RunResult, error) {
	return w.runner.Run(ctx, id, w.agent, polyloop.Task{Input: "the task"})
}

func (w *world) resume(ctx context.Context, id string) (polyloop.RunResult, error) {
	return w.runner.Resume(ctx, id, w.agent)
}

func (w *world) log(id string) polyloop.RunLog {
	l, err := polyloop.ReadLog(context.Background(), w.runs, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return l
}

// ops returns the maintenance operations of a run by name ("memory.1"…).
func (w *world) ops(id string) map[string]*polyloop.MaintenanceOp {
	out := map[string]*polyloop.MaintenanceOp{}
	for _, r := range w.log(id).Records {
		if op, ok := r.Body.(*polyloop.MaintenanceOp); ok {
			out[fmt.Sprintf("%d/%s", op.Step, op.Name)] = op
		}
	}
	return out
}

// receptions returns the maintenance receptions of a run by child id.
func (w *world) receptions(id string) map[string]*polyloop.ChildReception {
	out := map[string]*polyloop.ChildReception{}
	for _, r := range w.log(id).Records {
		if rec, ok := r.Body.(*polyloop.ChildReception); ok && rec.Maintenance {
			out[rec.ChildRunID] = rec
		}
	}
	return out
}

// history is the store's history of notes/key.
func (w *world) history(key string) []memory.Entry {
	h, err := w.runs.EntryHistory(context.Background(), "notes", key)
	if err != nil {
		w.t.Fatal(err)
	}
	return h
}

// viewAt is the store's last version of the view.
func (w *world) viewAt() memory.ViewVersion {
	v, err := w.runs.LoadView(context.Background(), "shown")
	if err != nil {
		w.t.Fatal(err)
	}
	return v
}

// seed writes notes/key=value through the world's Memory, from the entry's
// live version.
func (w *world) seed(id, key, value string) {
	w.t.Helper()
	basis, err := w.memory.Basis(context.Background(), memory.EntryID{Namespace: "notes", Key: key})
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.memory.Apply(context.Background(), memory.Write{ID: id, Basis: basis,
		Ops: []memory.Op{{Kind: memory.OpPut, Namespace: "notes", Key: key, Value: json.RawMessage(value)}}}); err != nil {
		w.t.Fatal(err)
	}
}

// putting is a proposal that puts notes/key=value.
func putting(key, value string) string {
	return fmt.Sprintf(`{"memory": [{"op": "put", "namespace": "notes", "key": %q, "value": %s}]}`, key, value)
}

// oneFinal is a main script of one step that answers.
func oneFinal() []scriptmodel.Turn { return []scriptmodel.Turn{scriptmodel.Reply("done")} }
