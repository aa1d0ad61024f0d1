package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/polyloop/polyloop/memory"
)

// The store keeps agent memory beside the run logs: it is a memory.Store
// and a memory.ViewStore (with the same lack of durability).
var (
	_ memory.Store     = (*Store)(nil)
	_ memory.ViewStore = (*Store)(nil)
)

// memoryData is the memory part of the store, guarded by Store.mu.
type memoryData struct {
	versions   map[memory.EntryID][]memory.Entry // every version, oldest first
	writes     map[string]memory.Commit          // by write id, with its digest
	views      map[string][]memory.ViewVersion   // versions[i] is version i+1
	viewWrites map[string]memory.ViewVersion     // by write id, with its digest
}

func (d *memoryData) init() {
	if d.versions == nil {
		d.versions = map[memory.EntryID][]memory.Entry{}
		d.writes = map[string]memory.Commit{}
		d.views = map[string][]memory.ViewVersion{}
		d.viewWrites = map[string]memory.ViewVersion{}
	}
}

// live returns the entry's live version (0 when it has none).
func (d *memoryData) live(id memory.EntryID) int64 {
	h := d.versions[id]
	if len(h) == 0 || h[len(h)-1].Deleted {
		return 0
	}
	return h[len(h)-1].Version
}

// LoadEntries implements memory.Store.
func (s *Store) LoadEntries(ctx context.Context, namespaces []string) ([]memory.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memory.Entry
	for id, h := range s.mem.versions {
		if last := h[len(h)-1]; !last.Deleted && slices.Contains(namespaces, id.Namespace) {
			out = append(out, cloneEntry(last))
		}
	}
	return out, nil
}

// CommitWrite implements memory.Store.
func (s *Store) CommitWrite(ctx context.Context, w memory.Write) (memory.Commit, error) {
	if err := ctx.Err(); err != nil {
		return memory.Commit{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.init()
	digest := memory.WriteDigest(w)
	if c, ok := s.mem.writes[w.ID]; ok {
		if c.Digest != digest {
			return memory.Commit{}, fmt.Errorf("memstore: write %q: %w", w.ID, memory.ErrWriteIDReused)
		}
		c.Replayed = true
		return cloneCommit(c), nil
	}
	for _, op := range w.Ops {
		if got, want := s.mem.live(op.ID()), w.Basis.Version(op.ID()); got != want {
			return memory.Commit{}, fmt.Errorf("memstore: %s is at version %d, the write expects %d: %w", op.ID(), got, want, memory.ErrBasisMismatch)
		}
	}
	for _, e := range w.Basis {
		if got := s.mem.live(e.ID()); got != e.Version {
			return memory.Commit{}, fmt.Errorf("memstore: %s is at version %d, the write expects %d: %w", e.ID(), got, e.Version, memory.ErrBasisMismatch)
		}
	}
	c := memory.Commit{WriteID: w.ID, Digest: digest}
	for _, op := range w.Ops {
		id := op.ID()
		e := memory.Entry{Namespace: id.Namespace, Key: id.Key, Version: int64(len(s.mem.versions[id])) + 1,
			Value: slices.Clone(op.Value), Deleted: op.Kind == memory.OpDelete, Provenance: w.Provenance}
		e.Provenance.WriteID = w.ID
		s.mem.versions[id] = append(s.mem.versions[id], e)
		c.Entries = append(c.Entries, memory.EntryVersion{Namespace: id.Namespace, Key: id.Key, Version: e.Version, Deleted: e.Deleted})
	}
	s.mem.writes[w.ID] = c
	return cloneCommit(c), nil
}

// LookupWrite implements memory.Store.
func (s *Store) LookupWrite(ctx context.Context, writeID string) (memory.Commit, bool, error) {
	if err := ctx.Err(); err != nil {
		return memory.Commit{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.mem.writes[writeID]
	return cloneCommit(c), ok, nil
}

// EntryHeads implements memory.Store.
func (s *Store) EntryHeads(ctx context.Context, ids []memory.EntryID) ([]memory.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memory.Entry
	for _, id := range ids {
		if h := s.mem.versions[id]; len(h) > 0 {
			out = append(out, cloneEntry(h[len(h)-1]))
		}
	}
	return out, nil
}

// EntryHistory implements memory.Store.
func (s *Store) EntryHistory(ctx context.Context, namespace, key string) ([]memory.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.mem.versions[memory.EntryID{Namespace: namespace, Key: key}]
	out := make([]memory.Entry, len(h))
	for i, e := range h {
		out[i] = cloneEntry(e)
	}
	return out, nil
}

// Namespaces implements memory.Store.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for id := range s.mem.versions {
		seen[id.Namespace] = true
	}
	return sortedKeys(seen), nil
}

// LoadView implements memory.ViewStore.
func (s *Store) LoadView(ctx context.Context, name string) (memory.ViewVersion, error) {
	if err := ctx.Err(); err != nil {
		return memory.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.mem.views[name]
	if len(vs) == 0 {
		return memory.ViewVersion{View: name}, nil
	}
	return cloneView(vs[len(vs)-1]), nil
}

// CommitView implements memory.ViewStore.
func (s *Store) CommitView(ctx context.Context, w memory.ViewWrite) (memory.ViewVersion, error) {
	if err := ctx.Err(); err != nil {
		return memory.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.init()
	digest := memory.ViewWriteDigest(w)
	if v, ok := s.mem.viewWrites[w.ID]; ok {
		if v.Digest != digest {
			return memory.ViewVersion{}, fmt.Errorf("memstore: view write %q: %w", w.ID, memory.ErrWriteIDReused)
		}
		v.Replayed = true
		return cloneView(v), nil
	}
	name := w.Next.View
	if last := int64(len(s.mem.views[name])); last != w.Basis {
		return memory.ViewVersion{}, fmt.Errorf("memstore: view %q is at version %d, the write expects %d: %w", name, last, w.Basis, memory.ErrBasisMismatch)
	}
	v := cloneView(w.Next)
	v.Version, v.Digest, v.Replayed = w.Basis+1, digest, false
	v.Provenance.WriteID = w.ID
	s.mem.views[name] = append(s.mem.views[name], v)
	s.mem.viewWrites[w.ID] = v
	return cloneView(v), nil
}

// LookupViewWrite implements memory.ViewStore.
func (s *Store) LookupViewWrite(ctx context.Context, writeID string) (memory.ViewVersion, bool, error) {
	if err := ctx.Err(); err != nil {
		return memory.ViewVersion{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.mem.viewWrites[writeID]
	return cloneView(v), ok, nil
}

// ViewAt implements memory.ViewStore.
func (s *Store) ViewAt(ctx context.Context, name string, version int64) (memory.ViewVersion, error) {
	if err := ctx.Err(); err != nil {
		return memory.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.mem.views[name]
	if version < 1 || version > int64(len(vs)) {
		return memory.ViewVersion{}, fmt.Errorf("memstore: view %q version %d: %w", name, version, memory.ErrNoVersion)
	}
	return cloneView(vs[version-1]), nil
}

// Views implements memory.ViewStore.
func (s *Store) Views(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for name := range s.mem.views {
		seen[name] = true
	}
	return sortedKeys(seen), nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func cloneEntry(e memory.Entry) memory.Entry {
	e.Value = slices.Clone(e.Value)
	return e
}

func cloneCommit(c memory.Commit) memory.Commit {
	c.Entries = slices.Clone(c.Entries)
	return c
}

// cloneView copies a version: nothing of it is shared, and its values keep
// their bytes.
func cloneView(v memory.ViewVersion) memory.ViewVersion {
	v.Sources = slices.Clone(v.Sources)
	v.Members = slices.Clone(v.Members)
	for i := range v.Members {
		v.Members[i] = cloneEntry(v.Members[i])
	}
	return v
}
