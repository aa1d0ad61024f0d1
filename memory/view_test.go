package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

func newView(t *testing.T, s memory.ViewStore, m *memory.Memory, sources ...string) *memory.View {
	t.Helper()
	v, err := memory.NewView(s, memory.ViewOptions{Name: "shown", Memory: m, Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// seeded is a store with notes/a at version 1 and facts/f at version 1.
func seeded(t *testing.T) (*polylooptest.FaultyMemoryStore, *memory.Memory) {
	t.Helper()
	s := polylooptest.NewFaultyMemoryStore(memstore.New())
	m := newMemory(t, s, nil)
	if _, err := m.Apply(bg, put("seed-a", "a", `"alpha"`)); err != nil {
		t.Fatal(err)
	}
	f := put("seed-f", "f", `"fact"`)
	f.Ops[0].Namespace = "facts"
	if _, err := m.Apply(bg, f); err != nil {
		t.Fatal(err)
	}
	return s, m
}

func include(id string, basis int64, refs ...memory.Expect) memory.Adjustment {
	return memory.Adjustment{ID: id, Basis: basis, Include: refs}
}

// Each adjustment makes a new immutable version, with its members' values:
// a version reads back the same after the memory and the view move on.
func TestViewVersionsImmutable(t *testing.T) {
	s, m := seeded(t)
	v := newView(t, s, m, "notes")
	v1, err := v.Adjust(bg, include("adj1", 0, at("a", 1)))
	if err != nil || v1.Version != 1 || len(v1.Members) != 1 || string(v1.Members[0].Value) != `"alpha"` {
		t.Fatalf("Adjust = %+v, %v", v1, err)
	}
	if _, err := m.Apply(bg, put("w2", "a", `"beta"`, at("a", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Adjust(bg, include("adj2", 1, at("a", 2))); err != nil {
		t.Fatal(err)
	}
	again, err := v.ViewVersion(bg, 1)
	if err != nil || len(again.Entries) != 1 || string(again.Entries[0].Value) != `"alpha"` || again.Version != 1 {
		t.Fatalf("version 1 now: %+v, %v", again, err)
	}
	cur, err := v.CurrentView(bg)
	if err != nil || cur.Version != 2 || string(cur.Entries[0].Value) != `"beta"` {
		t.Fatalf("current %+v, %v", cur, err)
	}
	text, err := polyloop.RenderView("", cur)
	if err != nil || text != "What you remember (shown, version 2):\n- notes/a: beta\n" {
		t.Fatalf("rendering %q, %v", text, err)
	}
}

// The View's own pre-check: sources, members, versions. A rejection is
// receivable, nothing reaches the store, and the View works on.
func TestViewPreCheckRejects(t *testing.T) {
	s, m := seeded(t)
	v := newView(t, s, m, "notes")
	if _, err := v.Adjust(bg, include("adj1", 0, at("a", 1))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		adj  memory.Adjustment
		what string
	}{
		{"stale view basis", include("x1", 0, at("a", 1)), "version"},
		{"not a source", include("x2", 1, memory.Expect{Namespace: "facts", Key: "f", Version: 1}), "source"},
		{"not live", include("x3", 1, at("nothing", 1)), "member"},
		{"entry version", include("x4", 1, at("a", 7)), "version"},
		{"exclude a non-member", memory.Adjustment{ID: "x5", Basis: 1, Exclude: []memory.EntryID{{Namespace: "notes", Key: "zzz"}}}, "member"},
	} {
		_, err := v.Adjust(bg, tc.adj)
		var re *memory.RejectionError
		if !errors.As(err, &re) || re.What != tc.what || !memory.IsReceivable(err) {
			t.Errorf("%s: err = %v, want a receivable %s rejection", tc.name, err, tc.what)
		}
	}
	if _, views := s.Commits(); views != 1 {
		t.Fatalf("%d view commits reached the store", views)
	}
	if _, err := v.Adjust(bg, memory.Adjustment{ID: "ok", Basis: 1, Exclude: []memory.EntryID{{Namespace: "notes", Key: "a"}}}); err != nil {
		t.Fatalf("the View stopped working after rejections: %v", err)
	}
}

// An adjustment that changes nothing runs the pre-check and commits
// nothing.
func TestViewEmptyAdjustment(t *testing.T) {
	s, m := seeded(t)
	v := newView(t, s, m)
	got, err := v.Adjust(bg, memory.Adjustment{ID: "e1", Basis: 0})
	if err != nil || got.Version != 0 {
		t.Fatalf("empty, fresh: %+v, %v", got, err)
	}
	var re *memory.RejectionError
	if _, err := v.Adjust(bg, memory.Adjustment{ID: "e2", Basis: 3}); !errors.As(err, &re) {
		t.Fatalf("empty, stale: %v", err)
	}
	if _, views := s.Commits(); views != 0 {
		t.Fatalf("%d view commits", views)
	}
}

// A view persistence failure is a PersistenceError; the View refuses
// adjustments and its current version until reloaded (versions by number
// stay readable); after reload, the store's truth; an adjustment issued
// again finds its own version.
func TestViewPersistenceFailure(t *testing.T) {
	for _, fault := range []polylooptest.MemoryFault{polylooptest.FailBefore, polylooptest.LoseAck, polylooptest.RefuseCAS, polylooptest.BreakContract} {
		s, m := seeded(t)
		v := newView(t, s, m, "notes")
		if _, err := v.Adjust(bg, include("adj1", 0, at("a", 1))); err != nil {
			t.Fatal(err)
		}
		s.FailView(1, fault)
		_, err := v.Adjust(bg, memory.Adjustment{ID: "adj2", Basis: 1, Exclude: []memory.EntryID{{Namespace: "notes", Key: "a"}}})
		var pe *polyloop.PersistenceError
		if !errors.As(err, &pe) || memory.IsReceivable(err) {
			t.Fatalf("fault %d: err = %v, want a PersistenceError", fault, err)
		}
		var rr *memory.ReloadRequiredError
		if _, err := v.CurrentView(bg); !errors.As(err, &rr) || !polyloop.MustPropagate(err) {
			t.Fatalf("fault %d: CurrentView after the failure: %v", fault, err)
		}
		if _, err := v.Adjust(bg, include("adj3", 1)); !errors.As(err, &rr) {
			t.Fatalf("fault %d: Adjust after the failure: %v", fault, err)
		}
		if _, err := v.At(bg, 1); err != nil {
			t.Fatalf("fault %d: At: %v", fault, err)
		}
		if err := v.Reload(bg); err != nil {
			t.Fatal(err)
		}
		cur, _ := v.Current(bg)
		committed := fault == polylooptest.LoseAck || fault == polylooptest.BreakContract
		if want := map[bool]int64{false: 1, true: 2}[committed]; cur.Version != want {
			t.Fatalf("fault %d: after reload version %d, want %d", fault, cur.Version, want)
		}
		again, err := v.Adjust(bg, memory.Adjustment{ID: "adj2", Basis: 1, Exclude: []memory.EntryID{{Namespace: "notes", Key: "a"}}})
		if err != nil || again.Version != 2 {
			t.Fatalf("fault %d: issued again: %+v, %v", fault, again, err)
		}
		if _, views := s.Commits(); views != map[bool]int{false: 3, true: 2}[committed] {
			t.Fatalf("fault %d: %d view commits", fault, views)
		}
	}
}

// A view refuses to show entries of a broken Memory: the Memory's failure
// propagates as it is, not as the view's.
func TestViewOverBrokenMemory(t *testing.T) {
	s, m := seeded(t)
	v := newView(t, s, m)
	s.FailCommit(1, polylooptest.FailBefore)
	if _, err := m.Apply(bg, put("w", "a", `2`, at("a", 1))); err == nil {
		t.Fatal("no failure")
	}
	_, err := v.Adjust(bg, include("adj", 0, at("a", 1)))
	var rr *memory.ReloadRequiredError
	if !errors.As(err, &rr) || !strings.Contains(rr.Entity, "memory") {
		t.Fatalf("err = %v", err)
	}
	if _, err := v.Current(bg); err != nil {
		t.Fatalf("the view itself is not broken: %v", err)
	}
}

// Two Views (and two Memories) over one store: the View's pre-check reads
// the view's last version and the included entries' versions from the
// store, so an adjustment made from a version another View replaced, or
// showing an entry another Memory rewrote, is a receivable rejection — not
// a port failure — and the View then holds the store's last version.
func TestStaleAcrossViewsIsRejection(t *testing.T) {
	s, m1 := seeded(t)
	m2 := newMemory(t, s, nil)
	v1, v2 := newView(t, s, m1, "notes"), newView(t, s, m2, "notes")
	for _, r := range []interface{ Reload(context.Context) error }{m2, v1, v2} {
		if err := r.Reload(bg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v1.Adjust(bg, include("adj1", 0, at("a", 1))); err != nil {
		t.Fatal(err)
	}
	_, err := v2.Adjust(bg, include("adj2", 0, at("a", 1)))
	var re *memory.RejectionError
	if !errors.As(err, &re) || re.What != "version" || !memory.IsReceivable(err) {
		t.Fatalf("err = %v, want a receivable version rejection", err)
	}
	if cur, err := v2.Current(bg); err != nil || cur.Version != 1 {
		t.Fatalf("after the rejection v2 holds %+v, %v; want the store's version 1", cur, err)
	}
	if _, err := m1.Apply(bg, put("w2", "a", `"beta"`, at("a", 1))); err != nil {
		t.Fatal(err)
	}
	_, err = v2.Adjust(bg, include("adj3", 1, at("a", 1))) // m2 still holds a@1
	if !errors.As(err, &re) || re.What != "version" || !strings.Contains(re.Reason, "version 2") {
		t.Fatalf("err = %v, want a rejection: a is at version 2", err)
	}
	if got, err := v2.Adjust(bg, include("adj4", 1, at("a", 2))); err != nil || got.Version != 2 {
		t.Fatalf("an adjustment from the store's versions: %+v, %v", got, err)
	}
	if _, views := s.Commits(); views != 2 {
		t.Fatalf("%d view commits, want 2", views)
	}
}
