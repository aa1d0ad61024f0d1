package polylooptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop/memory/memoryport"
)

// memFaults are the ways brokenMem breaks the memory ports' contracts; none
// set, it is a correct in-memory implementation.
type memFaults struct {
	errUnknown     bool // LoadView of an unknown view is an error
	escape         bool // values are re-encoded with HTML escaping
	reuseVersions  bool // a delete drops the entry's history: versions start again
	loadTombstones bool // LoadEntries returns tombstones
	liveHeads      bool // EntryHeads skips tombstones: an entry's last live version
	opsOnly        bool // basis lines on entries only read are not checked
	partial        bool // a batch is applied operation by operation: a mismatch leaves a prefix
	notIdempotent  bool // a committed write id commits again
	noDigest       bool // a write id with other operations returns the old commit
	foldCase       bool // namespaces are case-insensitive
	racy           bool // the basis check and the write are not atomic
	busy           bool // a concurrent commit fails ("database is locked")
	mutableViews   bool // a view version is rewritten by the next one
	viewRepeats    bool // a committed view write id commits again
	viewRacy       bool // the view's check and write are not atomic
	wrongCancel    bool // a cancelled context gives an error that does not wrap it
}

type brokenMem struct {
	memFaults
	mu         sync.Mutex
	versions   map[memoryport.EntryID][]memoryport.Entry
	writes     map[string]memoryport.Commit
	views      map[string][]memoryport.ViewVersion
	viewWrites map[string]memoryport.ViewVersion
}

func newBrokenMem(f memFaults) *brokenMem {
	return &brokenMem{memFaults: f, versions: map[memoryport.EntryID][]memoryport.Entry{}, writes: map[string]memoryport.Commit{},
		views: map[string][]memoryport.ViewVersion{}, viewWrites: map[string]memoryport.ViewVersion{}}
}

func (s *brokenMem) cancelled(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if s.wrongCancel {
		return errors.New("brokenMem: interrupted")
	}
	return ctx.Err()
}

func (s *brokenMem) id(id memoryport.EntryID) memoryport.EntryID {
	if s.foldCase {
		id.Namespace = strings.ToLower(id.Namespace)
	}
	return id
}

func (s *brokenMem) lock() func() {
	if s.busy {
		if !s.mu.TryLock() {
			return nil
		}
		spin()
		return s.mu.Unlock
	}
	s.mu.Lock()
	return s.mu.Unlock
}

func (s *brokenMem) live(id memoryport.EntryID) int64 {
	h := s.versions[s.id(id)]
	if len(h) == 0 || h[len(h)-1].Deleted {
		return 0
	}
	return h[len(h)-1].Version
}

func (s *brokenMem) LoadEntries(ctx context.Context, namespaces []string) ([]memoryport.Entry, error) {
	if err := s.cancelled(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memoryport.Entry
	for id, h := range s.versions {
		last := h[len(h)-1]
		if (!last.Deleted || s.loadTombstones) && slices.ContainsFunc(namespaces, func(ns string) bool { return s.id(memoryport.EntryID{Namespace: ns}).Namespace == id.Namespace }) {
			out = append(out, last)
		}
	}
	return out, nil
}

func (s *brokenMem) EntryHeads(ctx context.Context, ids []memoryport.EntryID) ([]memoryport.Entry, error) {
	if err := s.cancelled(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memoryport.Entry
	for _, id := range ids {
		h := s.versions[s.id(id)]
		for s.liveHeads && len(h) > 0 && h[len(h)-1].Deleted {
			h = h[:len(h)-1]
		}
		if len(h) > 0 {
			out = append(out, h[len(h)-1])
		}
	}
	return out, nil
}

func (s *brokenMem) CommitWrite(ctx context.Context, w memoryport.Write) (memoryport.Commit, error) {
	if err := s.cancelled(ctx); err != nil {
		return memoryport.Commit{}, err
	}
	unlock := s.lock()
	if unlock == nil {
		return memoryport.Commit{}, errors.New("brokenMem: database is locked")
	}
	defer func() { unlock() }()
	if c, ok := s.writes[w.ID]; ok && !s.notIdempotent {
		if c.Digest != memoryport.WriteDigest(w) && !s.noDigest {
			return memoryport.Commit{}, memoryport.ErrWriteIDReused
		}
		c.Replayed = true
		return c, nil
	}
	lines := append(slices.Clone(w.Basis), opExpects(w)...)
	seen := map[memoryport.EntryID]int64{}
	for _, e := range lines {
		seen[e.ID()] = s.live(e.ID())
	}
	if s.racy {
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	c := memoryport.Commit{WriteID: w.ID, Digest: memoryport.WriteDigest(w)}
	for _, op := range w.Ops {
		if !s.partial {
			break
		}
		if s.live(op.ID()) != w.Basis.Version(op.ID()) {
			return memoryport.Commit{}, memoryport.ErrBasisMismatch
		}
		c.Entries = append(c.Entries, s.apply(w, op))
	}
	if !s.partial {
		for _, e := range lines {
			if seen[e.ID()] != e.Version && (!s.opsOnly || slices.ContainsFunc(w.Ops, func(o memoryport.Op) bool { return o.ID() == e.ID() })) {
				return memoryport.Commit{}, memoryport.ErrBasisMismatch
			}
		}
		for _, op := range w.Ops {
			c.Entries = append(c.Entries, s.apply(w, op))
		}
	}
	s.writes[w.ID] = c
	return c, nil
}

func opExpects(w memoryport.Write) memoryport.Basis {
	var out memoryport.Basis
	for _, op := range w.Ops {
		out = append(out, memoryport.Expect{Namespace: op.Namespace, Key: op.Key, Version: w.Basis.Version(op.ID())})
	}
	return out
}

func (s *brokenMem) apply(w memoryport.Write, op memoryport.Op) memoryport.EntryVersion {
	id := s.id(op.ID())
	if op.Kind == memoryport.OpDelete && s.reuseVersions {
		delete(s.versions, id)
		return memoryport.EntryVersion{Namespace: op.Namespace, Key: op.Key, Version: 1, Deleted: true}
	}
	value := slices.Clone(op.Value)
	if s.escape {
		var b bytes.Buffer
		json.HTMLEscape(&b, value)
		value = b.Bytes()
	}
	p := w.Provenance
	p.WriteID = w.ID
	e := memoryport.Entry{Namespace: op.Namespace, Key: op.Key, Version: int64(len(s.versions[id])) + 1, Value: value, Deleted: op.Kind == memoryport.OpDelete, Provenance: p}
	if e.Deleted {
		e.Value = nil
	}
	s.versions[id] = append(s.versions[id], e)
	return memoryport.EntryVersion{Namespace: e.Namespace, Key: e.Key, Version: e.Version, Deleted: e.Deleted}
}

func (s *brokenMem) LookupWrite(ctx context.Context, id string) (memoryport.Commit, bool, error) {
	if err := s.cancelled(ctx); err != nil {
		return memoryport.Commit{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.writes[id]
	return c, ok, nil
}

func (s *brokenMem) EntryHistory(ctx context.Context, ns, key string) ([]memoryport.Entry, error) {
	if err := s.cancelled(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.versions[s.id(memoryport.EntryID{Namespace: ns, Key: key})]), nil
}

func (s *brokenMem) Namespaces(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for id := range s.versions {
		seen[id.Namespace] = true
	}
	var out []string
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out, nil
}

func (s *brokenMem) LoadView(ctx context.Context, name string) (memoryport.ViewVersion, error) {
	if err := s.cancelled(ctx); err != nil {
		return memoryport.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.views[name]
	if len(vs) == 0 {
		if s.errUnknown {
			return memoryport.ViewVersion{}, errors.New("brokenMem: no such view")
		}
		return memoryport.ViewVersion{View: name}, nil
	}
	return vs[len(vs)-1], nil
}

func (s *brokenMem) CommitView(ctx context.Context, w memoryport.ViewWrite) (memoryport.ViewVersion, error) {
	if err := s.cancelled(ctx); err != nil {
		return memoryport.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.viewWrites[w.ID]; ok && !s.viewRepeats {
		if v.Digest != memoryport.ViewWriteDigest(w) {
			return memoryport.ViewVersion{}, memoryport.ErrWriteIDReused
		}
		v.Replayed = true
		return v, nil
	}
	last := int64(len(s.views[w.Next.View]))
	if s.viewRacy {
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	if last != w.Basis {
		return memoryport.ViewVersion{}, memoryport.ErrBasisMismatch
	}
	v := w.Next
	v.Version, v.Digest = int64(len(s.views[w.Next.View]))+1, memoryport.ViewWriteDigest(w)
	v.Members = slices.Clone(v.Members)
	if s.mutableViews && len(s.views[v.View]) > 0 {
		s.views[v.View][0].Members = v.Members
	}
	s.views[v.View] = append(s.views[v.View], v)
	s.viewWrites[w.ID] = v
	return v, nil
}

func (s *brokenMem) LookupViewWrite(ctx context.Context, id string) (memoryport.ViewVersion, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.viewWrites[id]
	return v, ok, nil
}

func (s *brokenMem) ViewAt(ctx context.Context, name string, version int64) (memoryport.ViewVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.views[name]
	if version < 1 || version > int64(len(vs)) {
		return memoryport.ViewVersion{}, memoryport.ErrNoVersion
	}
	return vs[version-1], nil
}

func (s *brokenMem) Views(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name := range s.views {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

func goodMemoryHarness() MemoryStoreHarness {
	stores := map[MemoryStore]*brokenMem{}
	var mu sync.Mutex
	return MemoryStoreHarness{
		New: func(testing.TB) MemoryStore {
			s := newBrokenMem(memFaults{})
			mu.Lock()
			stores[s] = s
			mu.Unlock()
			return s
		},
		Reopen: func(_ testing.TB, s MemoryStore) MemoryStore { return s }, // nothing is lost
	}
}

func memoryWith(f memFaults) MemoryStoreHarness {
	h := goodMemoryHarness()
	h.New = func(testing.TB) MemoryStore { return newBrokenMem(f) }
	return h
}

func TestGoodMemoryStorePasses(t *testing.T) { TestMemoryStore(t, goodMemoryHarness()) }

func brokenMemoryCases() []brokenCase {
	c := func(check string, h MemoryStoreHarness) brokenCase {
		return brokenCase{"MemoryStore", check, memoryRuleOf[check], func(t *testing.T) outcome { return runNamed(t, memoryChecks, check, h, h.settings()) }}
	}
	forgetful := goodMemoryHarness()
	forgetful.Reopen = func(testing.TB, MemoryStore) MemoryStore { return newBrokenMem(memFaults{}) }
	return []brokenCase{
		c("Empty", memoryWith(memFaults{errUnknown: true})),
		c("RoundTrip", memoryWith(memFaults{escape: true})),
		c("Versions", memoryWith(memFaults{reuseVersions: true})),
		c("Versions", memoryWith(memFaults{loadTombstones: true})),
		c("Heads", memoryWith(memFaults{liveHeads: true})),
		c("BasisMismatch", memoryWith(memFaults{opsOnly: true})),
		c("BasisMismatch", memoryWith(memFaults{partial: true})),
		c("Idempotent", memoryWith(memFaults{notIdempotent: true})),
		c("Idempotent", memoryWith(memFaults{noDigest: true})),
		c("NamespacesIsolated", memoryWith(memFaults{foldCase: true})),
		c("ConcurrentWriters", memoryWith(memFaults{racy: true})),
		c("ConcurrentKeys", memoryWith(memFaults{busy: true})),
		c("ViewVersions", memoryWith(memFaults{mutableViews: true})),
		c("ViewIdempotent", memoryWith(memFaults{viewRepeats: true})),
		c("ViewConcurrent", memoryWith(memFaults{viewRacy: true})),
		c("CancelledContext", memoryWith(memFaults{wrongCancel: true})),
		c("Reopen", forgetful),
	}
}
