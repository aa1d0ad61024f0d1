package memory_test

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
)

// checkReused: a write id reused with other contents is refused the same
// way on every path — an *InvalidWriteError that errors.Is
// memory.ErrWriteIDReused, neither receivable nor a persistence failure —,
// nothing is written, and the entity works on.
func checkReused(t *testing.T, path string, err error) {
	t.Helper()
	var iv *memory.InvalidWriteError
	var pe *polyloop.PersistenceError
	if !errors.As(err, &iv) || !errors.Is(err, memory.ErrWriteIDReused) || errors.As(err, &pe) || polyloop.MustPropagate(err) || memory.IsReceivable(err) {
		t.Errorf("%s: err = %v, want an InvalidWriteError for ErrWriteIDReused", path, err)
	}
}

// TestWriteIDReusedWithOtherOperations: the Memory that committed the id,
// a fresh Memory on the store (another process, or after a restart), a
// reuse from a stale basis and Committed all refuse the id with other
// operations alike; the same operations under it return its commit.
func TestWriteIDReusedWithOtherOperations(t *testing.T) {
	s := memstore.New()
	m := newMemory(t, s, nil)
	first, err := m.Apply(bg, put("w1", "k", `"first"`))
	if err != nil {
		t.Fatal(err)
	}
	fresh := newMemory(t, s, nil)
	for _, tc := range []struct {
		path string
		m    *memory.Memory
		w    memory.Write
	}{
		{"the same Memory", m, put("w1", "other", `"x"`)},
		{"the same Memory, same key, other value", m, put("w1", "k", `"second"`, at("k", 1))},
		{"a fresh Memory, basis current", fresh, put("w1", "other", `"x"`)},
		{"a fresh Memory, basis stale", fresh, put("w1", "k", `"second"`)},
	} {
		_, err := tc.m.Apply(bg, tc.w)
		checkReused(t, tc.path, err)
	}
	_, _, err = fresh.Committed(bg, put("w1", "other", `"x"`))
	checkReused(t, "Committed", err)
	if h := history(t, s, "other"); len(h) != 0 {
		t.Fatalf("the reused id wrote %+v", h)
	}
	for i, mm := range []*memory.Memory{m, fresh} {
		c, err := mm.Apply(bg, put("w1", "k", `"first"`))
		if err != nil || !c.Replayed || c.Entries[0] != first.Entries[0] {
			t.Fatalf("the same write again: %+v, %v; want its commit", c, err)
		}
		if _, err := mm.Apply(bg, put([]string{"w2", "w3"}[i], []string{"k2", "k3"}[i], `1`)); err != nil {
			t.Fatalf("the Memory stopped working after a reused id: %v", err)
		}
	}
}

// TestViewAdjustmentIDReusedWithOtherContents: as for memory writes — the
// View that committed the adjustment, a fresh View, and a reuse from a
// stale basis refuse the id with other members alike; the same adjustment
// again returns its version.
func TestViewAdjustmentIDReusedWithOtherContents(t *testing.T) {
	s, m := seeded(t)
	if _, err := m.Apply(bg, put("seed-b", "b", `"beta"`)); err != nil {
		t.Fatal(err)
	}
	v := newView(t, s, m, "notes")
	first, err := v.Adjust(bg, include("adj1", 0, at("a", 1)))
	if err != nil {
		t.Fatal(err)
	}
	fresh := newView(t, s, m, "notes")
	for _, tc := range []struct {
		path string
		v    *memory.View
		a    memory.Adjustment
	}{
		{"the same View", v, include("adj1", 1, at("b", 1))},
		{"the same View, the same basis", v, include("adj1", 0, at("b", 1))},
		{"a fresh View, basis current", fresh, include("adj1", 1, at("b", 1))},
		{"a fresh View, basis stale", fresh, include("adj1", 0, at("b", 1))},
	} {
		_, err := tc.v.Adjust(bg, tc.a)
		checkReused(t, tc.path, err)
	}
	if _, views := s.Commits(); views != 1 {
		t.Fatalf("%d view commits, want 1", views)
	}
	for _, vv := range []*memory.View{v, fresh} {
		got, err := vv.Adjust(bg, include("adj1", 0, at("a", 1)))
		if err != nil || !got.Replayed || got.Version != first.Version {
			t.Fatalf("the same adjustment again: %+v, %v; want version %d", got, err, first.Version)
		}
	}
	if _, err := v.Adjust(bg, include("adj2", 1, at("b", 1))); err != nil {
		t.Fatalf("the View stopped working after a reused id: %v", err)
	}
}
