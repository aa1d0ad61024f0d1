package memory_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
)

// barrier lets n callers through once all n have arrived.
func barrier(n int) func() {
	var wg sync.WaitGroup
	wg.Add(n)
	return func() { wg.Done(); wg.Wait() }
}

// Two runs that share a Memory write the same key from the same stale
// basis — both proposers were shown the entry before either wrote: exactly
// one commits, the other meets a receivable conflict (received here by
// policy).
func TestTwoRunsSameKeyStaleBases(t *testing.T) {
	wait := barrier(2)
	w := newWorld(t, memstore.New(), policies(memory.Fail, memory.Skip, memory.Skip), oneFinal(), func(ctx context.Context, step int) (string, error) {
		wait() // both contexts are recorded: both bases say k@1
		return putting("k", `"mine"`), nil
	})
	w.seed("seed", "k", `"first"`)
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for _, id := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.run(bg, id)
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
	}
	done, conflicts := 0, 0
	for _, id := range []string{"a", "b"} {
		switch op := w.ops(id)["1/memory.1"]; {
		case op.Outcome == polyloop.OpDone:
			done++
		case op.Outcome == polyloop.OpReceived && string(op.Value) == `{"conflict":true}`:
			conflicts++
		default:
			t.Fatalf("run %s: memory operation %+v", id, op)
		}
	}
	if h := w.history("k"); done != 1 || conflicts != 1 || len(h) != 2 {
		t.Fatalf("%d commits, %d conflicts, history %+v", done, conflicts, h)
	}
}

// The same two runs in two processes (two Memories and two Views over one
// store), the second writing after the first committed: the second's
// pre-checks read the store, so its stale memory basis is a receivable
// conflict and its stale view basis a receivable rejection (both received
// here by policy) — not a PersistenceError. Both runs complete; one
// commit, one view version.
func TestTwoProcessesSameKeyStaleBases(t *testing.T) {
	runs := memstore.New()
	wait := barrier(2)
	committed := make(chan struct{})
	wa := newWorld(t, runs, policies(memory.Fail, memory.Skip, memory.Skip), oneFinal(), func(ctx context.Context, step int) (string, error) {
		wait() // both contexts are recorded: both bases say k@1, view 0
		return putting("k", `"mine"`), nil
	})
	wb := newWorld(t, runs, policies(memory.Fail, memory.Skip, memory.Skip), oneFinal(), func(ctx context.Context, step int) (string, error) {
		wait()
		<-committed // a's maintenance is done: its memory and view commits stand
		return putting("k", `"mine"`), nil
	})
	wa.seed("seed", "k", `"first"`)
	for _, r := range []interface{ Reload(context.Context) error }{wb.memory, wb.view} {
		if err := r.Reload(bg); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, w := range []*world{wa, wb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = w.run(bg, []string{"a", "b"}[i])
			if i == 0 {
				close(committed)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if op := wa.ops("a")["1/memory.1"]; op.Outcome != polyloop.OpDone {
		t.Fatalf("run a's memory operation %+v", op)
	}
	if op := wb.ops("b")["1/memory.1"]; op.Outcome != polyloop.OpReceived || string(op.Value) != `{"conflict":true}` {
		t.Fatalf("run b's memory operation %+v, want the conflict received", op)
	}
	if op := wb.ops("b")["1/view.1"]; op.Outcome != polyloop.OpReceived || !strings.Contains(string(op.Value), `"rejected":true`) {
		t.Fatalf("run b's view operation %+v, want the rejection received", op)
	}
	if h := wa.history("k"); len(h) != 2 {
		t.Fatalf("history %+v", h)
	}
	if v := wa.viewAt(); v.Version != 1 {
		t.Fatalf("the view is at version %d, want 1", v.Version)
	}
}
