package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

var bg = context.Background()

func newMemory(t *testing.T, s memory.Store, publish func(context.Context, memory.Commit) error) *memory.Memory {
	t.Helper()
	m, err := memory.New(s, memory.Options{Namespaces: []string{"notes", "facts"}, Publish: publish})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func put(id, key, value string, basis ...memory.Expect) memory.Write {
	return memory.Write{ID: id, Basis: basis, Ops: []memory.Op{{Kind: memory.OpPut, Namespace: "notes", Key: key, Value: json.RawMessage(value)}}}
}

func at(key string, v int64) memory.Expect {
	return memory.Expect{Namespace: "notes", Key: key, Version: v}
}

func value(t *testing.T, m *memory.Memory, key string) string {
	t.Helper()
	e, ok, err := m.Get(bg, "notes", key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "<absent>"
	}
	return string(e.Value)
}

func history(t *testing.T, s memory.Store, key string) []memory.Entry {
	t.Helper()
	h, err := s.EntryHistory(bg, "notes", key)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestApplyPutsAndVersions(t *testing.T) {
	s := memstore.New()
	m := newMemory(t, s, nil)
	c, err := m.Apply(bg, put("w1", "name", ` "Ada" `))
	if err != nil || len(c.Entries) != 1 || c.Entries[0].Version != 1 {
		t.Fatalf("Apply = %+v, %v", c, err)
	}
	if got := value(t, m, "name"); got != `"Ada"` {
		t.Fatalf("value %s (the stored value is compact JSON)", got)
	}
	if _, err := m.Apply(bg, memory.Write{ID: "w2", Basis: memory.Basis{at("name", 1)},
		Ops: []memory.Op{{Kind: memory.OpDelete, Namespace: "notes", Key: "name"}}}); err != nil {
		t.Fatal(err)
	}
	if got := value(t, m, "name"); got != "<absent>" {
		t.Fatalf("after delete: %s", got)
	}
	c, err = m.Apply(bg, put("w3", "name", `"Grace"`)) // absent again: basis 0
	if err != nil || c.Entries[0].Version != 3 {
		t.Fatalf("put after delete = %+v, %v (versions are never reused)", c, err)
	}
	h := history(t, s, "name")
	if len(h) != 3 || !h[1].Deleted || h[2].Provenance.WriteID != "w3" {
		t.Fatalf("history %+v", h)
	}
}

// Input validation is an ordinary error: nothing is checked or written, and
// the Memory keeps working.
func TestApplyInvalid(t *testing.T) {
	s := memstore.New()
	m := newMemory(t, s, nil)
	for name, w := range map[string]memory.Write{
		"no id":            {Ops: put("", "k", `1`).Ops},
		"not JSON":         put("w", "k", `{`),
		"namespace":        {ID: "w", Ops: []memory.Op{{Kind: memory.OpPut, Namespace: "secrets", Key: "k", Value: json.RawMessage(`1`)}}},
		"twice":            {ID: "w", Ops: append(put("w", "k", `1`).Ops, put("w", "k", `2`).Ops...)},
		"delete no basis":  {ID: "w", Ops: []memory.Op{{Kind: memory.OpDelete, Namespace: "notes", Key: "k"}}},
		"unknown op":       {ID: "w", Ops: []memory.Op{{Kind: "merge", Namespace: "notes", Key: "k"}}},
		"control in a key": put("w", "a\x00b", `1`),
	} {
		_, err := m.Apply(bg, w)
		var iv *memory.InvalidWriteError
		if !errors.As(err, &iv) || polyloop.MustPropagate(err) || memory.IsReceivable(err) {
			t.Errorf("%s: err = %v, want an InvalidWriteError", name, err)
		}
	}
	if _, err := m.Apply(bg, put("ok", "k", `1`)); err != nil {
		t.Fatalf("the Memory stopped working after invalid input: %v", err)
	}
}

// A stale basis found by the pre-commit check is a receivable conflict:
// nothing reaches the store, the basis is not swapped, the Memory works on.
func TestApplyStaleIsConflict(t *testing.T) {
	s := polylooptest.NewFaultyMemoryStore(memstore.New())
	m := newMemory(t, s, nil)
	if _, err := m.Apply(bg, put("w1", "k", `1`)); err != nil {
		t.Fatal(err)
	}
	_, err := m.Apply(bg, put("w2", "k", `2`)) // made from "absent"
	var ce *memory.ConflictError
	if !errors.As(err, &ce) || !memory.IsReceivable(err) || polyloop.MustPropagate(err) {
		t.Fatalf("err = %v, want a receivable ConflictError", err)
	}
	if len(ce.Stale) != 1 || ce.Stale[0].Expected != 0 || ce.Stale[0].Actual != 1 {
		t.Fatalf("stale %+v", ce.Stale)
	}
	if n, _ := s.Commits(); n != 1 {
		t.Fatalf("%d commits reached the store, want 1", n)
	}
	if got := value(t, m, "k"); got != "1" {
		t.Fatalf("value %s", got)
	}
	// A basis line on an entry the write does not touch is checked too.
	_, err = m.Apply(bg, memory.Write{ID: "w3", Basis: memory.Basis{at("k", 7)}, Ops: put("", "other", `1`).Ops})
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
}

// An empty batch is not nothing: its basis is checked, and nothing is
// committed either way.
func TestApplyEmptyBatchChecksBasis(t *testing.T) {
	s := polylooptest.NewFaultyMemoryStore(memstore.New())
	m := newMemory(t, s, nil)
	if _, err := m.Apply(bg, put("w1", "k", `1`)); err != nil {
		t.Fatal(err)
	}
	c, err := m.Apply(bg, memory.Write{ID: "empty-ok", Basis: memory.Basis{at("k", 1)}})
	if err != nil || len(c.Entries) != 0 {
		t.Fatalf("fresh empty batch: %+v, %v", c, err)
	}
	_, err = m.Apply(bg, memory.Write{ID: "empty-stale", Basis: memory.Basis{at("k", 0)}})
	var ce *memory.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("stale empty batch: %v, want a ConflictError", err)
	}
	if n, _ := s.Commits(); n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
}

// A persistence failure is a PersistenceError whose cause is the port's
// error; the Memory then refuses writes and current queries until it is
// reloaded, and after reload it holds the store's truth — with the commit
// lost, the old value; with the acknowledgement lost, the new one.
func TestPersistenceFailureThenReload(t *testing.T) {
	for _, tc := range []struct {
		fault polylooptest.MemoryFault
		after string
	}{
		{polylooptest.FailBefore, "1"},
		{polylooptest.LoseAck, "2"},
		{polylooptest.BreakContract, "2"},
	} {
		t.Run(map[polylooptest.MemoryFault]string{polylooptest.FailBefore: "lost", polylooptest.LoseAck: "ack lost", polylooptest.BreakContract: "contract"}[tc.fault], func(t *testing.T) {
			s := polylooptest.NewFaultyMemoryStore(memstore.New())
			m := newMemory(t, s, nil)
			if _, err := m.Apply(bg, put("w1", "k", `1`)); err != nil {
				t.Fatal(err)
			}
			s.FailCommit(1, tc.fault)
			_, err := m.Apply(bg, put("w2", "k", `2`, at("k", 1)))
			var pe *polyloop.PersistenceError
			if !errors.As(err, &pe) || memory.IsReceivable(err) {
				t.Fatalf("err = %v, want a PersistenceError", err)
			}
			if tc.fault == polylooptest.BreakContract && !errors.Is(err, memory.ErrPortContract) {
				t.Fatalf("err = %v, want ErrPortContract", err)
			}
			if tc.fault != polylooptest.BreakContract && !errors.Is(err, polylooptest.ErrInjected) {
				t.Fatalf("err = %v does not keep the port's error as its cause", err)
			}
			assertRefuses(t, m)
			if h, err := m.History(bg, "notes", "k"); err != nil || len(h) == 0 {
				t.Fatalf("History, which reads the store, refused: %v", err)
			}
			if err := m.Reload(bg); err != nil {
				t.Fatal(err)
			}
			if got := value(t, m, "k"); got != tc.after {
				t.Fatalf("after reload %s, want the store's %s", got, tc.after)
			}
			// The write issued again finds its own commit, or commits now:
			// either way the store holds one version 2, written once.
			c, err := m.Apply(bg, put("w2", "k", `2`, at("k", 1)))
			if err != nil || c.Entries[0].Version != 2 {
				t.Fatalf("re-issued write: %+v, %v", c, err)
			}
			if h := history(t, s, "k"); len(h) != 2 {
				t.Fatalf("history %+v: the write was committed twice", h)
			}
		})
	}
}

func assertRefuses(t *testing.T, m *memory.Memory) {
	t.Helper()
	var rr *memory.ReloadRequiredError
	_, _, err := m.Get(bg, "notes", "k")
	if !errors.As(err, &rr) || !polyloop.MustPropagate(err) {
		t.Fatalf("Get after a persistence failure: %v", err)
	}
	if _, err := m.List(bg, "notes"); !errors.As(err, &rr) {
		t.Fatalf("List after a persistence failure: %v", err)
	}
	if _, err := m.Basis(bg, memory.EntryID{Namespace: "notes", Key: "k"}); !errors.As(err, &rr) {
		t.Fatalf("Basis after a persistence failure: %v", err)
	}
	if _, err := m.Apply(bg, put("w9", "other", `9`)); !errors.As(err, &rr) {
		t.Fatalf("Apply after a persistence failure: %v", err)
	}
}

// Two Memories over one store (two processes): the pre-commit check reads
// the versions the write names from the store, so a basis stale against
// the store — an entry another Memory wrote, or deleted — is a receivable
// conflict, not a port failure; the Memory then holds the store's versions
// of those entries, works on, and a write from them commits.
func TestStaleAcrossMemoriesIsConflict(t *testing.T) {
	s := memstore.New()
	m1, m2 := newMemory(t, s, nil), newMemory(t, s, nil)
	for _, m := range []*memory.Memory{m1, m2} {
		if err := m.Reload(bg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m1.Apply(bg, put("a", "k", `"from 1"`)); err != nil {
		t.Fatal(err)
	}
	_, err := m2.Apply(bg, put("b", "k", `"from 2"`)) // made from "absent"
	var ce *memory.ConflictError
	if !errors.As(err, &ce) || !memory.IsReceivable(err) || len(ce.Stale) != 1 || ce.Stale[0].Actual != 1 {
		t.Fatalf("err = %v, want a receivable conflict: k is at version 1", err)
	}
	if got := value(t, m2, "k"); got != `"from 1"` {
		t.Fatalf("after the conflict m2 holds %s, want the store's version", got)
	}
	if _, err := m1.Apply(bg, memory.Write{ID: "del", Basis: memory.Basis{at("k", 1)},
		Ops: []memory.Op{{Kind: memory.OpDelete, Namespace: "notes", Key: "k"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = m2.Apply(bg, put("c", "k", `"from 2"`, at("k", 1)))
	if !errors.As(err, &ce) || ce.Stale[0].Actual != 0 {
		t.Fatalf("after the delete: %v, want a conflict: k is absent", err)
	}
	if got := value(t, m2, "k"); got != "<absent>" {
		t.Fatalf("after the delete m2 holds %s", got)
	}
	if c, err := m2.Apply(bg, put("d", "k", `"from 2"`)); err != nil || c.Entries[0].Version != 3 {
		t.Fatalf("a write from the store's versions: %+v, %v", c, err)
	}
}

// A compare-and-set refused inside the port is the port's failure, never a
// receivable conflict: here another writer commits between the Memory's
// pre-check and its commit.
func TestCASInsidePortIsPersistence(t *testing.T) {
	inner := memstore.New()
	s := &racingStore{Store: inner}
	m := newMemory(t, s, nil)
	s.race = func() {
		if _, err := newMemory(t, inner, nil).Apply(bg, put("other", "k", `"other"`)); err != nil {
			t.Error(err)
		}
	}
	_, err := m.Apply(bg, put("mine", "k", `"mine"`))
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) || !errors.Is(err, memory.ErrBasisMismatch) || memory.IsReceivable(err) {
		t.Fatalf("err = %v, want a PersistenceError from the port's refusal", err)
	}
	assertRefuses(t, m)
	if err := m.Reload(bg); err != nil {
		t.Fatal(err)
	}
	_, err = m.Apply(bg, put("mine", "k", `"mine"`)) // now the pre-check sees it
	var ce *memory.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("after reload: %v, want the conflict", err)
	}
}

// racingStore runs race once, at its first commit, before committing.
type racingStore struct {
	*memstore.Store
	race func()
}

func (s *racingStore) CommitWrite(ctx context.Context, w memory.Write) (memory.Commit, error) {
	if r := s.race; r != nil {
		s.race = nil
		r()
	}
	return s.Store.CommitWrite(ctx, w)
}

// A read of the pre-commit check that fails is a PersistenceError, and
// leaves the Memory working: nothing was written.
func TestPreCheckReadFailure(t *testing.T) {
	s := polylooptest.NewFaultyMemoryStore(memstore.New())
	m := newMemory(t, s, nil)
	if _, err := m.Apply(bg, put("w1", "k", `1`)); err != nil {
		t.Fatal(err)
	}
	s.FailLoads(true)
	_, err := m.Apply(bg, put("w2", "k", `2`, at("k", 1)))
	var pe *polyloop.PersistenceError
	var rr *memory.ReloadRequiredError
	if !errors.As(err, &pe) || errors.As(err, &rr) || memory.IsReceivable(err) {
		t.Fatalf("err = %v, want a PersistenceError", err)
	}
	s.FailLoads(false)
	if got := value(t, m, "k"); got != "1" {
		t.Fatalf("k = %s", got)
	}
	if _, err := m.Apply(bg, put("w2", "k", `2`, at("k", 1))); err != nil {
		t.Fatalf("the Memory stopped working: %v", err)
	}
}

// A PersistenceError the port returns keeps its identity.
func TestPortPersistenceErrorKept(t *testing.T) {
	own := &polyloop.PersistenceError{Op: "adapter's own", Err: errors.New("x")}
	m := newMemory(t, ownErrStore{Store: memstore.New(), err: own}, nil)
	_, err := m.Apply(bg, put("w", "k", `1`))
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) || pe != own {
		t.Fatalf("err = %v, want the port's own PersistenceError", err)
	}
}

type ownErrStore struct {
	*memstore.Store
	err error
}

func (s ownErrStore) CommitWrite(context.Context, memory.Write) (memory.Commit, error) {
	return memory.Commit{}, s.err
}

// A failed publication after the commit: the commit stands and is
// installed, the error is a PublicationError (not a persistence failure),
// the Memory works on, and nothing is written or published again.
func TestPublicationFailure(t *testing.T) {
	s := memstore.New()
	published := 0
	m := newMemory(t, s, func(context.Context, memory.Commit) error { published++; return errors.New("bus down") })
	c, err := m.Apply(bg, put("w1", "k", `1`))
	var pub *polyloop.PublicationError
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pub) || errors.As(err, &pe) || !polyloop.MustPropagate(err) || memory.IsReceivable(err) {
		t.Fatalf("err = %v, want a PublicationError", err)
	}
	if len(c.Entries) != 1 || c.Entries[0].Version != 1 {
		t.Fatalf("commit %+v", c)
	}
	if got := value(t, m, "k"); got != "1" {
		t.Fatalf("the commit is not installed: %s", got)
	}
	if c, err := m.Apply(bg, put("w1", "k", `1`)); err != nil || !c.Replayed {
		t.Fatalf("the same write again: %+v, %v", c, err)
	}
	if published != 1 || len(history(t, s, "k")) != 1 {
		t.Fatalf("published %d times, %d versions", published, len(history(t, s, "k")))
	}
}

// Two runs writing the same key from the same stale basis through the
// Memory they share: exactly one commits, the other meets a receivable
// conflict.
func TestConcurrentStaleWriters(t *testing.T) {
	s := memstore.New()
	m := newMemory(t, s, nil)
	if _, err := m.Apply(bg, put("seed", "k", `0`)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.Apply(bg, put([]string{"run-a/1~memory", "run-b/1~memory"}[i], "k", `1`, at("k", 1)))
		}()
	}
	wg.Wait()
	won, conflicts := 0, 0
	for _, err := range errs {
		var ce *memory.ConflictError
		switch {
		case err == nil:
			won++
		case errors.As(err, &ce) && memory.IsReceivable(err):
			conflicts++
		default:
			t.Fatalf("err = %v", err)
		}
	}
	if won != 1 || conflicts != 1 || len(history(t, s, "k")) != 2 {
		t.Fatalf("%d commits, %d conflicts, %d versions", won, conflicts, len(history(t, s, "k")))
	}
}

// The first use loads; a load that fails is a PersistenceError and does not
// break the Memory: the next use loads again.
func TestLazyLoad(t *testing.T) {
	s := polylooptest.NewFaultyMemoryStore(memstore.New())
	seed := newMemory(t, s, nil)
	if _, err := seed.Apply(bg, put("w1", "k", `1`)); err != nil {
		t.Fatal(err)
	}
	m := newMemory(t, s, nil)
	s.FailLoads(true)
	_, _, err := m.Get(bg, "notes", "k")
	var pe *polyloop.PersistenceError
	var rr *memory.ReloadRequiredError
	if !errors.As(err, &pe) || errors.As(err, &rr) {
		t.Fatalf("err = %v", err)
	}
	s.FailLoads(false)
	if got := value(t, m, "k"); got != "1" {
		t.Fatalf("value %s", got)
	}
}
