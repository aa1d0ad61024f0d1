package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

// chainScript: two actions and an answer; after each, the maintenance
// writes (step 2 also forgets what step 1 wrote) and the view follows.
func chainScript() []scriptmodel.Turn {
	return []scriptmodel.Turn{
		scriptmodel.Call("c1", "echo", map[string]string{"text": "one"}),
		scriptmodel.Call("c2", "echo", map[string]string{"text": "two"}),
		scriptmodel.Reply("done"),
	}
}

func chainProposal(_ context.Context, step int) (string, error) {
	switch step {
	case 2:
		return `{"memory": [{"op": "put", "namespace": "notes", "key": "k2", "value": "second"}, {"op": "delete", "namespace": "notes", "key": "k1"}]}`, nil
	default:
		return putting(fmt.Sprintf("k%d", step), fmt.Sprintf(`"learnt at %d"`, step)), nil
	}
}

func chainWorld(t *testing.T, runs *memstore.Store) *world {
	return newWorld(t, runs, policies(memory.Fail, memory.Fail, memory.Fail), chainScript(), chainProposal)
}

// handlerRuns counts the runs of the proposals' Succeeded handler.
type handlerRuns struct {
	mu sync.Mutex
	n  map[string]int
}

func watchHandlers(t *testing.T) *handlerRuns {
	h := &handlerRuns{n: map[string]int{}}
	memory.SetReceivedHook(func(id string) { h.mu.Lock(); h.n[id]++; h.mu.Unlock() })
	t.Cleanup(func() { memory.SetReceivedHook(nil) })
	return h
}

func (h *handlerRuns) get(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[id]
}

// commitLog counts the commits that reach the store, by write id.
type commitLog struct {
	polylooptest.MemoryStore
	mu     sync.Mutex
	writes map[string]int
}

func (c *commitLog) CommitWrite(ctx context.Context, w memory.Write) (memory.Commit, error) {
	c.mu.Lock()
	c.writes[w.ID]++
	c.mu.Unlock()
	return c.MemoryStore.CommitWrite(ctx, w)
}

func (c *commitLog) CommitView(ctx context.Context, w memory.ViewWrite) (memory.ViewVersion, error) {
	c.mu.Lock()
	c.writes[w.ID]++
	c.mu.Unlock()
	return c.MemoryStore.CommitView(ctx, w)
}

func (c *commitLog) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes[id]
}

type chainOutcome struct {
	log      polyloop.RunLog
	seen     map[int]string
	history  map[string][]memory.Entry
	view     memory.ViewVersion
	versions int
}

func outcomeOf(t *testing.T, w *world) chainOutcome {
	t.Helper()
	o := chainOutcome{log: w.log("r"), seen: w.seen.get(), history: map[string][]memory.Entry{}, view: w.viewAt()}
	for _, k := range []string{"k1", "k2", "k3"} {
		o.history[k] = w.history(k)
	}
	return o
}

// compare checks the resumed run against the uninterrupted one: the same
// records (apart from what a resume legitimately changes), every entry
// written exactly as often with the same write ids, the same view, and the
// model shown the same view at every step.
func (o chainOutcome) compare(t *testing.T, ref chainOutcome) {
	t.Helper()
	if err := polylooptest.CheckEquivalent(o.log, ref.log); err != nil {
		t.Fatal(err)
	}
	for k, h := range ref.history {
		got := o.history[k]
		if len(got) != len(h) {
			t.Fatalf("%s has %d versions, the uninterrupted run %d: a write was committed twice or lost", k, len(got), len(h))
		}
		for i := range h {
			if got[i].Provenance.WriteID != h[i].Provenance.WriteID || string(got[i].Value) != string(h[i].Value) {
				t.Fatalf("%s version %d: %+v, want %+v", k, i+1, got[i], h[i])
			}
		}
	}
	if o.view.Version != ref.view.Version || fmt.Sprint(o.view.Members) != fmt.Sprint(ref.view.Members) {
		t.Fatalf("view %+v, want %+v", o.view, ref.view)
	}
	for step, msgs := range ref.seen {
		if o.seen[step] != msgs {
			t.Fatalf("step %d: the model saw\n%s\nthe uninterrupted run's model saw\n%s", step, o.seen[step], msgs)
		}
	}
}

// recordedBefore lists what a crashed log already holds of the
// maintenance: the children received and the write ids of the operations
// recorded.
func recordedBefore(log polyloop.RunLog) (children, writes []string) {
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *polyloop.ChildReception:
			children = append(children, b.ChildRunID)
		case *polyloop.MaintenanceOp:
			if b.WriteID != "" {
				writes = append(writes, b.WriteID)
			}
		}
	}
	return children, writes
}

// Crash at every boundary of the maintenance chain — after every record of
// the run and of its proposer children, and at every commit of the memory
// and the view with its acknowledgement lost — then resume in a new
// process: no write committed twice, no handler that succeeded run again,
// and the view the model sees equal to the uninterrupted run's.
func TestCrashEveryBoundary(t *testing.T) {
	ref := chainWorld(t, memstore.New())
	res, err := ref.run(bg, "r")
	mustFinish(t, res, err)
	want := outcomeOf(t, ref)
	total := ref.runs.Len()
	if want.view.Version != 3 || len(want.history["k1"]) != 2 {
		t.Fatalf("the reference run is not the chain it should be: view %+v, k1 %+v", want.view, want.history["k1"])
	}

	resumeAndCompare := func(t *testing.T, runs *memstore.Store, w *world, cl *commitLog, handlers *handlerRuns) {
		t.Helper()
		crashed := w.log("r")
		children, writes := recordedBefore(crashed)
		handled := map[string]int{}
		for _, id := range children {
			handled[id] = handlers.get(id)
		}
		committed := map[string]int{}
		for _, id := range writes {
			committed[id] = cl.count(id)
		}
		w.restart() // a new process: new entities over the same stores
		if len(crashed.Records) == 0 {
			res, err = w.run(bg, "r")
		} else {
			res, err = w.resume(bg, "r")
		}
		mustFinish(t, res, err)
		for id, n := range handled {
			if handlers.get(id) != n {
				t.Errorf("the handler of %s, whose reception was recorded, ran again", id)
			}
		}
		for id, n := range committed {
			if cl.count(id) != n {
				t.Errorf("write %s, whose outcome was recorded, reached the store again", id)
			}
		}
		outcomeOf(t, w).compare(t, want)
	}

	for n := 1; n < total; n++ {
		t.Run(fmt.Sprintf("record-%d", n), func(t *testing.T) {
			handlers := watchHandlers(t)
			runs := memstore.NewWithOptions(memstore.Options{CrashAfter: n})
			w := chainWorld(t, runs)
			cl := &commitLog{MemoryStore: runs, writes: map[string]int{}}
			w.mem = polylooptest.NewFaultyMemoryStore(cl)
			w.restart()
			if _, err := w.run(bg, "r"); err == nil {
				t.Fatal("the crash did not stop the run")
			}
			runs.SetFaults(memstore.Options{})
			resumeAndCompare(t, runs, w, cl, handlers)
		})
	}
	for _, at := range []struct {
		view bool
		n    int
	}{{false, 1}, {false, 2}, {false, 3}, {true, 1}, {true, 2}, {true, 3}} {
		t.Run(fmt.Sprintf("commit-view=%v-%d", at.view, at.n), func(t *testing.T) {
			handlers := watchHandlers(t)
			runs := memstore.New()
			w := chainWorld(t, runs)
			cl := &commitLog{MemoryStore: runs, writes: map[string]int{}}
			w.mem = polylooptest.NewFaultyMemoryStore(cl)
			if at.view {
				w.mem.FailView(at.n, polylooptest.LoseAck)
			} else {
				w.mem.FailCommit(at.n, polylooptest.LoseAck)
			}
			w.restart()
			if _, err := w.run(bg, "r"); err == nil {
				t.Fatal("the lost acknowledgement did not stop the run")
			}
			resumeAndCompare(t, runs, w, cl, handlers)
		})
	}
}
