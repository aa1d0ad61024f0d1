package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/polyloop/polyloop/memory/memoryport"
)

const memNS = "polylooptest"

func prov(id string) memoryport.Provenance {
	return memoryport.Provenance{RunID: "polylooptest-run", Step: 3, CallID: "a3.2", WriteID: id}
}

func putOp(ns, key, value string) memoryport.Op {
	return memoryport.Op{Kind: memoryport.OpPut, Namespace: ns, Key: key, Value: json.RawMessage(value)}
}

func delOp(ns, key string) memoryport.Op {
	return memoryport.Op{Kind: memoryport.OpDelete, Namespace: ns, Key: key}
}

func expect(ns, key string, v int64) memoryport.Expect {
	return memoryport.Expect{Namespace: ns, Key: key, Version: v}
}

func write(id string, basis memoryport.Basis, ops ...memoryport.Op) memoryport.Write {
	return memoryport.Write{ID: id, Basis: basis, Ops: ops, Provenance: prov(id)}
}

func commitOK(ctx context.Context, s MemoryStore, w memoryport.Write) (memoryport.Commit, error) {
	c, err := s.CommitWrite(ctx, w)
	if err != nil {
		return c, fmt.Errorf("CommitWrite %q failed: %w", w.ID, err)
	}
	if c.WriteID != w.ID || len(c.Entries) != len(w.Ops) {
		return c, fmt.Errorf("CommitWrite %q returned commit %q with %d entries for %d operations", w.ID, c.WriteID, len(c.Entries), len(w.Ops))
	}
	for i, op := range w.Ops {
		if v := c.Entries[i]; v.ID() != op.ID() || v.Deleted != (op.Kind == memoryport.OpDelete) {
			return c, fmt.Errorf("CommitWrite %q: entry %d of the commit is %+v, for operation %s %s", w.ID, i, v, op.Kind, op.ID())
		}
	}
	return c, nil
}

func historyOf(ctx context.Context, s MemoryStore, ns, key string) ([]memoryport.Entry, error) {
	h, err := s.EntryHistory(ctx, ns, key)
	if err != nil {
		return nil, fmt.Errorf("EntryHistory(%s/%s) failed: %w", ns, key, err)
	}
	return h, nil
}

// expectHistory checks an entry's history: its versions, tombstones and
// values, oldest first.
func expectHistory(ctx context.Context, s MemoryStore, ns, key string, want ...string) error {
	h, err := historyOf(ctx, s, ns, key)
	if err != nil {
		return err
	}
	got := make([]string, len(h))
	for i, e := range h {
		got[i] = fmt.Sprintf("%d:%s", e.Version, e.Value)
		if e.Deleted {
			got[i] = fmt.Sprintf("%d:deleted", e.Version)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return fmt.Errorf("history of %s/%s is [%s], want [%s]", ns, key, strings.Join(got, " "), strings.Join(want, " "))
	}
	return nil
}

func sameEntry(want, got memoryport.Entry) error {
	if want.ID() != got.ID() || want.Version != got.Version || want.Deleted != got.Deleted || want.Provenance != got.Provenance {
		return fmt.Errorf("entry %+v, want %+v", got, want)
	}
	if string(want.Value) != string(got.Value) {
		return fmt.Errorf("entry %s's value reads back as %s, written as %s (values are kept byte for byte)", got.ID(), got.Value, want.Value)
	}
	return nil
}

// live loads one namespace's live entries, by key.
func live(ctx context.Context, s MemoryStore, ns string) (map[string]memoryport.Entry, error) {
	es, err := s.LoadEntries(ctx, []string{ns})
	if err != nil {
		return nil, fmt.Errorf("LoadEntries(%q) failed: %w", ns, err)
	}
	out := map[string]memoryport.Entry{}
	for _, e := range es {
		if e.Namespace != ns {
			return nil, fmt.Errorf("LoadEntries(%q) returned %s, of another namespace", ns, e.ID())
		}
		if _, dup := out[e.Key]; dup || e.Deleted {
			return nil, fmt.Errorf("LoadEntries(%q) returned %s twice, or a tombstone (deleted %v)", ns, e.ID(), e.Deleted)
		}
		out[e.Key] = e
	}
	return out, nil
}

// mismatch commits w, which must fail with ErrBasisMismatch and write
// nothing.
func mismatch(ctx context.Context, s MemoryStore, what string, w memoryport.Write) error {
	_, err := s.CommitWrite(ctx, w)
	if !errors.Is(err, memoryport.ErrBasisMismatch) {
		return fmt.Errorf("%s: CommitWrite returned %v; want an error with memoryport.ErrBasisMismatch", what, err)
	}
	if _, found, err := s.LookupWrite(ctx, w.ID); err != nil || found {
		return fmt.Errorf("%s: the refused write's id is committed (found %v, %v)", what, found, err)
	}
	for _, op := range w.Ops {
		h, err := historyOf(ctx, s, op.Namespace, op.Key)
		if err != nil {
			return err
		}
		for _, e := range h {
			if e.Provenance.WriteID == w.ID {
				return fmt.Errorf("%s: the refused write wrote %s version %d", what, e.ID(), e.Version)
			}
		}
	}
	return nil
}

func checkMemEmpty(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	if es, err := s.LoadEntries(e.ctx, []string{"polylooptest-never"}); err != nil || len(es) != 0 {
		return fmt.Errorf("LoadEntries of an unknown namespace: %d entries, %v; want none and no error", len(es), err)
	}
	if hs, err := s.EntryHistory(e.ctx, "polylooptest-never", "k"); err != nil || len(hs) != 0 {
		return fmt.Errorf("EntryHistory of an unknown entry: %d versions, %v", len(hs), err)
	}
	if _, found, err := s.LookupWrite(e.ctx, "polylooptest-never"); err != nil || found {
		return fmt.Errorf("LookupWrite of an unknown id: found %v, %v", found, err)
	}
	if v, err := s.LoadView(e.ctx, "polylooptest-never"); err != nil || v.Version != 0 || len(v.Members) != 0 {
		return fmt.Errorf("LoadView of an unknown view: %+v, %v; want version 0 and no error", v, err)
	}
	if _, err := s.ViewAt(e.ctx, "polylooptest-never", 1); !errors.Is(err, memoryport.ErrNoVersion) {
		return fmt.Errorf("ViewAt of a version never made: %v; want memoryport.ErrNoVersion", err)
	}
	if ns, err := s.Namespaces(e.ctx); err != nil || len(ns) != 0 {
		return fmt.Errorf("Namespaces of an empty store: %v, %v", ns, err)
	}
	if vs, err := s.Views(e.ctx); err != nil || len(vs) != 0 {
		return fmt.Errorf("Views of an empty store: %v, %v", vs, err)
	}
	return nil
}

// roundTripValue is JSON a store must keep byte for byte: unicode, escapes,
// characters HTML escaping would change, nesting.
const roundTripValue = `{"text":"é ✓ \u2028 <b>&amp;</b> \"q\" \\","n":[1,2.5e-3,{"deep":[null,true]}]}`

func checkMemRoundTrip(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	large := `"` + strings.Repeat("x", 256<<10) + `"`
	w := write("rt-1", nil, putOp(memNS, "zeta", roundTripValue), putOp(memNS, "alpha", large))
	if _, err := commitOK(e.ctx, s, w); err != nil {
		return err
	}
	got, err := live(e.ctx, s, memNS)
	if err != nil {
		return err
	}
	for _, want := range []memoryport.Entry{
		{Namespace: memNS, Key: "zeta", Version: 1, Value: json.RawMessage(roundTripValue), Provenance: prov("rt-1")},
		{Namespace: memNS, Key: "alpha", Version: 1, Value: json.RawMessage(large), Provenance: prov("rt-1")},
	} {
		if err := sameEntry(want, got[want.Key]); err != nil {
			return fmt.Errorf("LoadEntries: %w", err)
		}
		hs, err := historyOf(e.ctx, s, memNS, want.Key)
		if err != nil {
			return err
		}
		if len(hs) != 1 {
			return fmt.Errorf("EntryHistory: %d versions, want 1", len(hs))
		}
		if err := sameEntry(want, hs[0]); err != nil {
			return fmt.Errorf("EntryHistory: %w", err)
		}
	}
	return nil
}

func checkMemVersions(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	steps := []memoryport.Write{
		write("v-1", nil, putOp(memNS, "k", `1`)),
		write("v-2", memoryport.Basis{expect(memNS, "k", 1)}, putOp(memNS, "k", `2`)),
		write("v-3", memoryport.Basis{expect(memNS, "k", 2)}, delOp(memNS, "k")),
		write("v-4", nil, putOp(memNS, "k", `4`)), // absent again: expected 0
	}
	for i, w := range steps {
		c, err := commitOK(e.ctx, s, w)
		if err != nil {
			return err
		}
		if c.Entries[0].Version != int64(i+1) {
			return fmt.Errorf("write %d got version %d, want %d (versions count from 1 and are never reused, a delete included)", i+1, c.Entries[0].Version, i+1)
		}
		if i == 2 {
			if got, err := live(e.ctx, s, memNS); err != nil || len(got) != 0 {
				return fmt.Errorf("after the delete LoadEntries holds %v (%v): a tombstone is not live", got, err)
			}
		}
	}
	if err := expectHistory(e.ctx, s, memNS, "k", "1:1", "2:2", "3:deleted", "4:4"); err != nil {
		return err
	}
	got, err := live(e.ctx, s, memNS)
	if err != nil {
		return err
	}
	if got["k"].Version != 4 || string(got["k"].Value) != "4" {
		return fmt.Errorf("LoadEntries gives %+v, want version 4", got["k"])
	}
	return nil
}

func checkMemHeads(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	for _, w := range []memoryport.Write{
		write("h-1", nil, putOp(memNS, "k", `1`)),
		write("h-2", memoryport.Basis{expect(memNS, "k", 1)}, putOp(memNS, "k", `2`)),
		write("h-3", nil, putOp(memNS, "gone", `1`)),
		write("h-4", memoryport.Basis{expect(memNS, "gone", 1)}, delOp(memNS, "gone")),
		write("h-5", nil, putOp(memNS+"-other", "k", `9`)),
	} {
		if _, err := commitOK(e.ctx, s, w); err != nil {
			return err
		}
	}
	ids := []memoryport.EntryID{{Namespace: memNS, Key: "gone"}, {Namespace: memNS, Key: "never"}, {Namespace: memNS, Key: "k"}, {Namespace: memNS, Key: "K"}}
	heads, err := s.EntryHeads(e.ctx, ids)
	if err != nil {
		return fmt.Errorf("EntryHeads failed: %w", err)
	}
	got := map[memoryport.EntryID]memoryport.Entry{}
	for _, hd := range heads {
		if _, dup := got[hd.ID()]; dup || !slices.Contains(ids, hd.ID()) {
			return fmt.Errorf("EntryHeads returned %s twice, or one not asked for", hd.ID())
		}
		got[hd.ID()] = hd
	}
	k, gone := got[memoryport.EntryID{Namespace: memNS, Key: "k"}], got[memoryport.EntryID{Namespace: memNS, Key: "gone"}]
	if len(got) != 2 || k.Version != 2 || k.Deleted || string(k.Value) != "2" || k.Provenance != prov("h-2") {
		return fmt.Errorf("EntryHeads gives %+v; want k at version 2 with its value and provenance, gone's tombstone, and nothing for entries never written", heads)
	}
	if gone.Version != 2 || !gone.Deleted || len(gone.Value) != 0 {
		return fmt.Errorf("EntryHeads gives gone as %+v; want its tombstone, version 2 (a delete's version is the entry's last)", gone)
	}
	if none, err := s.EntryHeads(e.ctx, nil); err != nil || len(none) != 0 {
		return fmt.Errorf("EntryHeads of no entries: %v, %v", none, err)
	}
	return nil
}

func checkMemBasisMismatch(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	for _, w := range []memoryport.Write{write("b-k", nil, putOp(memNS, "k", `1`)), write("b-j", nil, putOp(memNS, "j", `1`))} {
		if _, err := commitOK(e.ctx, s, w); err != nil {
			return err
		}
	}
	cases := []struct {
		what string
		w    memoryport.Write
	}{
		{"a live entry expected absent", write("b-1", nil, putOp(memNS, "k", `2`))},
		{"a stale version", write("b-2", memoryport.Basis{expect(memNS, "k", 2)}, putOp(memNS, "k", `2`))},
		{"a stale line on an entry only read", write("b-3", memoryport.Basis{expect(memNS, "j", 7)}, putOp(memNS, "x", `1`))},
		{"a batch whose second operation is stale", write("b-4", nil, putOp(memNS, "y", `1`), putOp(memNS, "k", `2`))},
		{"a delete of a stale version", write("b-5", memoryport.Basis{expect(memNS, "j", 2)}, delOp(memNS, "j"))},
	}
	for _, c := range cases {
		if err := mismatch(e.ctx, s, c.what, c.w); err != nil {
			return err
		}
	}
	if _, err := commitOK(e.ctx, s, write("b-ok", memoryport.Basis{expect(memNS, "k", 1), expect(memNS, "j", 1)}, putOp(memNS, "k", `2`))); err != nil {
		return fmt.Errorf("a write from the live basis: %w", err)
	}
	return expectHistory(e.ctx, s, memNS, "y")
}

func checkMemIdempotent(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	w1 := write("i-1", nil, putOp(memNS, "k", `"first"`))
	c1, err := commitOK(e.ctx, s, w1)
	if err != nil {
		return err
	}
	if _, err := commitOK(e.ctx, s, write("i-2", memoryport.Basis{expect(memNS, "k", 1)}, putOp(memNS, "k", `"second"`))); err != nil {
		return err
	}
	again, err := s.CommitWrite(e.ctx, w1) // its basis is stale now
	if err != nil {
		return fmt.Errorf("CommitWrite of a committed write id failed: %w; want its commit again", err)
	}
	if !again.Replayed || fmt.Sprint(again.Entries) != fmt.Sprint(c1.Entries) || again.Digest != memoryport.WriteDigest(w1) {
		return fmt.Errorf("CommitWrite of a committed write id returned %+v; want %+v again, Replayed, with its digest", again, c1)
	}
	if err := expectHistory(e.ctx, s, memNS, "k", `1:"first"`, `2:"second"`); err != nil {
		return fmt.Errorf("after committing a write id again: %w", err)
	}
	other := write("i-1", nil, putOp(memNS, "k2", `1`))
	if _, err := s.CommitWrite(e.ctx, other); !errors.Is(err, memoryport.ErrWriteIDReused) {
		return fmt.Errorf("the same write id with other operations: %v; want memoryport.ErrWriteIDReused", err)
	}
	if err := expectHistory(e.ctx, s, memNS, "k2"); err != nil {
		return err
	}
	found, ok, err := s.LookupWrite(e.ctx, "i-1")
	if err != nil || !ok || fmt.Sprint(found.Entries) != fmt.Sprint(c1.Entries) || found.Digest != memoryport.WriteDigest(w1) {
		return fmt.Errorf("LookupWrite: %+v, %v, %v; want %+v with its digest", found, ok, err, c1)
	}
	return nil
}

func checkMemIsolated(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	names := []string{"iso", "ISO", "iso-x", "is%", "is_", "iso "}
	for i, ns := range names {
		if _, err := commitOK(e.ctx, s, write(fmt.Sprintf("iso-%d", i), nil, putOp(ns, "k", fmt.Sprintf(`%q`, ns)))); err != nil {
			return err
		}
	}
	for i, key := range []string{"k%", "k_", "K", "k "} {
		if _, err := commitOK(e.ctx, s, write(fmt.Sprintf("isok-%d", i), nil, putOp("iso", key, `0`))); err != nil {
			return err
		}
	}
	for _, ns := range names {
		got, err := live(e.ctx, s, ns)
		if err != nil {
			return err
		}
		want := 1
		if ns == "iso" {
			want = 5
		}
		if len(got) != want || string(got["k"].Value) != fmt.Sprintf(`%q`, ns) {
			return fmt.Errorf("namespace %q loads %d entries with k=%s; want %d with k=%q", ns, len(got), got["k"].Value, want, ns)
		}
	}
	if err := expectHistory(e.ctx, s, "iso", "k", `1:"iso"`); err != nil {
		return err
	}
	listed, err := s.Namespaces(e.ctx)
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if err != nil || fmt.Sprint(listed) != fmt.Sprint(sorted) {
		return fmt.Errorf("Namespaces: %q, %v; want %q", listed, err, sorted)
	}
	return nil
}

// raceAll runs n functions at once and returns their errors.
func raceAll(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func checkMemConcurrentWriters(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	for round := range 5 {
		key := fmt.Sprintf("race-%d", round)
		errs := raceAll(8, func(i int) error {
			_, err := s.CommitWrite(e.ctx, write(fmt.Sprintf("%s-w%d", key, i), nil, putOp(memNS, key, fmt.Sprint(i))))
			return err
		})
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, memoryport.ErrBasisMismatch):
				return fmt.Errorf("a racing writer failed with %v; want memoryport.ErrBasisMismatch", err)
			}
		}
		hs, err := historyOf(e.ctx, s, memNS, key)
		if err != nil {
			return err
		}
		if won != 1 || len(hs) != 1 {
			return fmt.Errorf("8 writers raced from one basis: %d committed, %d versions; want exactly 1 (the compare-and-set is not atomic)", won, len(hs))
		}
	}
	return nil
}

func checkMemConcurrentKeys(e *env, h MemoryStoreHarness) error {
	s := h.New(e.t)
	errs := raceAll(16, func(i int) error {
		_, err := s.CommitWrite(e.ctx, write(fmt.Sprintf("keys-%d", i), nil, putOp(memNS, fmt.Sprintf("key-%d", i), `1`)))
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("concurrent writers of different entries: %w; want all to commit", err)
	}
	got, err := live(e.ctx, s, memNS)
	if err != nil || len(got) != 16 {
		return fmt.Errorf("after 16 concurrent writes LoadEntries has %d entries (%v)", len(got), err)
	}
	return nil
}
