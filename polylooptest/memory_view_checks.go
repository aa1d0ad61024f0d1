package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop/memory/memoryport"
)

const viewName = "polylooptest-view"

func member(key, value string, version int64) memoryport.Entry {
	return memoryport.Entry{Namespace: memNS, Key: key, Version: version, Value: json.RawMessage(value), Provenance: prov("m-" + key)}
}

func viewWrite(id string, basis int64, members ...memoryport.Entry) memoryport.ViewWrite {
	p := prov(id)
	return memoryport.ViewWrite{ID: id, Basis: basis, Next: memoryport.ViewVersion{View: viewName, Version: basis + 1,
		Sources: []string{memNS, "other"}, Members: members, Provenance: p}}
}

func sameView(want memoryport.ViewVersion, got memoryport.ViewVersion) error {
	if got.View != want.View || got.Version != want.Version || fmt.Sprint(got.Sources) != fmt.Sprint(want.Sources) ||
		got.Provenance != want.Provenance || len(got.Members) != len(want.Members) {
		return fmt.Errorf("view version %+v, want %+v", got, want)
	}
	for i := range want.Members {
		if err := sameEntry(want.Members[i], got.Members[i]); err != nil {
			return fmt.Errorf("view %q version %d member %d: %w", want.View, want.Version, i, err)
		}
	}
	return nil
}

func commitViewOK(ctx context.Context, s MemoryStore, w memoryport.ViewWrite) (memoryport.ViewVersion, error) {
	v, err := s.CommitView(ctx, w)
	if err != nil {
		return v, fmt.Errorf("CommitView %q (basis %d) failed: %w", w.ID, w.Basis, err)
	}
	want := w.Next
	want.Version = w.Basis + 1
	if err := sameView(want, v); err != nil {
		return v, fmt.Errorf("CommitView %q returned: %w", w.ID, err)
	}
	return v, nil
}

func checkViewVersions(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	w1 := viewWrite("vv-1", 0, member("a", roundTripValue, 1), member("b", `2`, 4))
	if _, err := commitViewOK(e.ctx, s, w1); err != nil {
		return err
	}
	for _, bad := range []memoryport.ViewWrite{viewWrite("vv-x", 0, member("c", `3`, 1)), viewWrite("vv-y", 5, member("c", `3`, 1))} {
		if _, err := s.CommitView(e.ctx, bad); !errors.Is(err, memoryport.ErrBasisMismatch) {
			return fmt.Errorf("CommitView from basis %d of a view at version 1: %v; want memoryport.ErrBasisMismatch", bad.Basis, err)
		}
	}
	w2 := viewWrite("vv-2", 1, member("b", `"changed"`, 5))
	if _, err := commitViewOK(e.ctx, s, w2); err != nil {
		return err
	}
	first := w1.Next
	first.Version = 1
	at1, err := s.ViewAt(e.ctx, viewName, 1)
	if err != nil {
		return fmt.Errorf("ViewAt 1: %w", err)
	}
	if err := sameView(first, at1); err != nil {
		return fmt.Errorf("ViewAt 1 after version 2 (versions are immutable): %w", err)
	}
	cur, err := s.LoadView(e.ctx, viewName)
	if err != nil {
		return fmt.Errorf("LoadView: %w", err)
	}
	second := w2.Next
	second.Version = 2
	if err := sameView(second, cur); err != nil {
		return fmt.Errorf("LoadView: %w", err)
	}
	if _, err := s.ViewAt(e.ctx, viewName, 3); !errors.Is(err, memoryport.ErrNoVersion) {
		return fmt.Errorf("ViewAt 3 of a view at 2: %v; want memoryport.ErrNoVersion", err)
	}
	other := viewWrite("vv-o", 0, member("a", `1`, 1))
	other.Next.View = viewName + "-other"
	if _, err := commitViewOK(e.ctx, s, other); err != nil {
		return fmt.Errorf("another view, from version 0: %w", err)
	}
	if vs, err := s.Views(e.ctx); err != nil || fmt.Sprint(vs) != fmt.Sprint([]string{viewName, viewName + "-other"}) {
		return fmt.Errorf("Views: %q, %v", vs, err)
	}
	return nil
}

func checkViewIdempotent(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	w1 := viewWrite("vi-1", 0, member("a", `1`, 1))
	if _, err := commitViewOK(e.ctx, s, w1); err != nil {
		return err
	}
	if _, err := commitViewOK(e.ctx, s, viewWrite("vi-2", 1, member("a", `2`, 2))); err != nil {
		return err
	}
	again, err := s.CommitView(e.ctx, w1)
	if err != nil || !again.Replayed || again.Version != 1 {
		return fmt.Errorf("CommitView of a committed write id: %+v, %v; want version 1 again, Replayed", again, err)
	}
	if cur, err := s.LoadView(e.ctx, viewName); err != nil || cur.Version != 2 {
		return fmt.Errorf("after committing a write id again the view is at %d (%v), want 2", cur.Version, err)
	}
	if _, err := s.CommitView(e.ctx, viewWrite("vi-1", 2, member("z", `1`, 1))); !errors.Is(err, memoryport.ErrWriteIDReused) {
		return fmt.Errorf("a view write id again with other members: %v; want memoryport.ErrWriteIDReused", err)
	}
	found, ok, err := s.LookupViewWrite(e.ctx, "vi-1")
	if err != nil || !ok || found.Version != 1 {
		return fmt.Errorf("LookupViewWrite: %+v, %v, %v", found, ok, err)
	}
	if _, ok, err := s.LookupViewWrite(e.ctx, "vi-never"); err != nil || ok {
		return fmt.Errorf("LookupViewWrite of an unknown id: found %v, %v", ok, err)
	}
	return nil
}

func checkViewConcurrent(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	errs := raceAll(8, func(i int) error {
		_, err := s.CommitView(e.ctx, viewWrite(fmt.Sprintf("vc-%d", i), 0, member("a", fmt.Sprint(i), 1)))
		return err
	})
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, memoryport.ErrBasisMismatch):
			return fmt.Errorf("a racing view writer failed with %v; want memoryport.ErrBasisMismatch", err)
		}
	}
	if won != 1 {
		return fmt.Errorf("8 view writers raced from version 0: %d committed, want exactly 1", won)
	}
	return nil
}

func checkMemCancelled(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	cancelledOK := func(what string, err error) error {
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s with a cancelled context: %v (%T), which is not errors.Is context.Canceled", what, err, err)
		}
		return nil
	}
	w := write("cx-1", nil, putOp(memNS, "k", `1`), putOp(memNS, "j", `1`))
	_, err := s.CommitWrite(ctx, w)
	if err := cancelledOK("CommitWrite", err); err != nil {
		return err
	}
	n := 0
	if err == nil {
		n = 1
	}
	for _, key := range []string{"k", "j"} {
		hs, herr := historyOf(e.ctx, s, memNS, key)
		if herr != nil {
			return herr
		}
		if len(hs) != n {
			return fmt.Errorf("a CommitWrite with a cancelled context returned %v and left %d versions of %s: not all or nothing", err, len(hs), key)
		}
	}
	_, err = s.LoadEntries(ctx, []string{memNS})
	if err := cancelledOK("LoadEntries", err); err != nil {
		return err
	}
	_, err = s.CommitView(ctx, viewWrite("cx-v", 0, member("k", `1`, 1)))
	if err := cancelledOK("CommitView", err); err != nil {
		return err
	}
	if _, err := commitOK(e.ctx, s, write("cx-2", nil, putOp(memNS, "after", `1`))); err != nil {
		return fmt.Errorf("the store is not usable after cancelled calls: %w", err)
	}
	return nil
}

func checkMemReopen(e *env, h MemoryStoreHarness) error {
	if h.Reopen == nil {
		return skipf("MemoryStoreHarness.Reopen is nil")
	}
	s := h.New(e.t)
	w1 := write("r-1", nil, putOp(memNS, "k", roundTripValue))
	c1, err := commitOK(e.ctx, s, w1)
	if err != nil {
		return err
	}
	if _, err := commitOK(e.ctx, s, write("r-2", memoryport.Basis{expect(memNS, "k", 1)}, delOp(memNS, "k"))); err != nil {
		return err
	}
	vw := viewWrite("r-v", 0, member("a", roundTripValue, 1))
	if _, err := commitViewOK(e.ctx, s, vw); err != nil {
		return err
	}
	s = h.Reopen(e.t, s)
	if err := expectHistory(e.ctx, s, memNS, "k", "1:"+roundTripValue, "2:deleted"); err != nil {
		return fmt.Errorf("after reopen: %w", err)
	}
	if again, err := s.CommitWrite(e.ctx, w1); err != nil || !again.Replayed || fmt.Sprint(again.Entries) != fmt.Sprint(c1.Entries) {
		return fmt.Errorf("after reopen, a committed write id: %+v, %v; want its commit again", again, err)
	}
	c3, err := commitOK(e.ctx, s, write("r-3", nil, putOp(memNS, "k", `3`)))
	if err != nil || c3.Entries[0].Version != 3 {
		return fmt.Errorf("after reopen the next version is %v (%v), want 3", c3.Entries, err)
	}
	want := vw.Next
	want.Version = 1
	got, err := s.ViewAt(e.ctx, viewName, 1)
	if err != nil {
		return fmt.Errorf("after reopen, ViewAt: %w", err)
	}
	return sameView(want, got)
}
