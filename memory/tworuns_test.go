package memory_test

import (
	"context"
	"errors"
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

// The same two runs in two processes (two Memories over one store): both
// pass their own pre-checks, and the store's compare-and-set refuses the
// second — a PersistenceError, by the seed, that stops its run. The resume
// reloads, and the write issued again meets the conflict. One commit.
func TestTwoProcessesSameKeyStaleBases(t *testing.T) {
	runs := memstore.New()
	wait := barrier(2)
	propose := func(ctx context.Context, step int) (string, error) {
		wait()
		return putting("k", `"mine"`), nil
	}
	wa := newWorld(t, runs, policies(memory.Fail, memory.Skip, memory.Skip), oneFinal(), propose)
	wb := newWorld(t, runs, policies(memory.Fail, memory.Skip, memory.Skip), oneFinal(), propose)
	wa.seed("seed", "k", `"first"`)
	if err := wb.memory.Reload(bg); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, w := range []*world{wa, wb} {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = w.run(bg, []string{"a", "b"}[i]) }()
	}
	wg.Wait()
	failed := -1
	for i, err := range errs {
		var pe *polyloop.PersistenceError
		switch {
		case err == nil:
		case errors.As(err, &pe) && errors.Is(err, memory.ErrBasisMismatch) && failed < 0:
			failed = i
		default:
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if failed < 0 {
		t.Fatal("both runs committed")
	}
	w, id := []*world{wa, wb}[failed], []string{"a", "b"}[failed]
	res, err := w.resume(bg, id)
	mustFinish(t, res, err)
	if op := w.ops(id)["1/memory.1"]; op.Outcome != polyloop.OpReceived {
		t.Fatalf("after the reload: %+v", op)
	}
	if h := wa.history("k"); len(h) != 2 {
		t.Fatalf("history %+v", h)
	}
}
