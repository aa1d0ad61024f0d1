package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/polyloop/polyloop/memory/memoryport"
)

// The store keeps agent memory beside the run logs: it is a memoryport.Store
// and a memoryport.ViewStore (with the same lack of durability).
var (
	_ memoryport.Store     = (*Store)(nil)
	_ memoryport.ViewStore = (*Store)(nil)
)

// memoryData is the memory part of the store, guarded by Store.mu.
type memoryData struct {
	versions   map[memoryport.EntryID][]memoryport.Entry // every version, oldest first
	writes     map[string]memoryport.Commit              // by write id, with its digest
	views      map[string][]memoryport.ViewVersion       // versions[i] is version i+1
	viewWrites map[string]memoryport.ViewVersion         // by write id, with its digest
}

func (d *memoryData) init() {
	if d.versions == nil {
		d.versions = map[memoryport.EntryID][]memoryport.Entry{}
		d.writes = map[string]memoryport.Commit{}
		d.views = map[string][]memoryport.ViewVersion{}
		d.viewWrites = map[string]memoryport.ViewVersion{}
	}
}

// live returns the entry's live version (0 when it has none).
func (d *memoryData) live(id memoryport.EntryID) int64 {
	h := d.versions[id]
	if len(h) == 0 || h[len(h)-1].Deleted {
		return 0
	}
	return h[len(h)-1].Version
}

// LoadEntries implements memoryport.Store.
func (s *Store) LoadEntries(ctx context.Context, namespaces []string) ([]memoryport.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memoryport.Entry
	for id, h := range s.mem.versions {
		if last := h[len(h)-1]; !last.Deleted && slices.Contains(namespaces, id.Namespace) {
			out = append(out, cloneEntry(last))
		}
	}
	return out, nil
}

// CommitWrite implements memoryport.Store.
func (s *Store) CommitWrite(ctx context.Context, w memoryport.Write) (memoryport.Commit, error) {
	if err := ctx.Err(); err != nil {
		return memoryport.Commit{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.init()
	digest := memoryport.WriteDigest(w)
	if c, ok := s.mem.writes[w.ID]; ok {
		if c.Digest != digest {
			return memoryport.Commit{}, fmt.Errorf("memstore: write %q: %w", w.ID, memoryport.ErrWriteIDReused)
		}
		c.Replayed = true
		return cloneCommit(c), nil
	}
	for _, op := range w.Ops {
		if got, want := s.mem.live(op.ID()), w.Basis.Version(op.ID()); got != want {
			return memoryport.Commit{}, fmt.Errorf("memstore: %s is at version %d, the write expects %d: %w", op.ID(), got, want, memoryport.ErrBasisMismatch)
		}
	}
	for _, e := range w.Basis {
		if got := s.mem.live(e.ID()); got != e.Version {
			return memoryport.Commit{}, fmt.Errorf("memstore: %s is at version %d, the write expects %d: %w", e.ID(), got, e.Version, memoryport.ErrBasisMismatch)
		}
	}
	c := memoryport.Commit{WriteID: w.ID, Digest: digest}
	for _, op := range w.Ops {
		id := op.ID()
		e := memoryport.Entry{Namespace: id.Namespace, Key: id.Key, Version: int64(len(s.mem.versions[id])) + 1,
			Value: slices.Clone(op.Value), Deleted: op.Kind == memoryport.OpDelete, Provenance: w.Provenance}
		e.Provenance.WriteID = w.ID
		s.mem.versions[id] = append(s.mem.versions[id], e)
		c.Entries = append(c.Entries, memoryport.EntryVersion{Namespace: id.Namespace, Key: id.Key, Version: e.Version, Deleted: e.Deleted})
	}
	s.mem.writes[w.ID] = c
	return cloneCommit(c), nil
}

// LookupWrite implements memoryport.Store.
func (s *Store) LookupWrite(ctx context.Context, writeID string) (memoryport.Commit, bool, error) {
	if err := ctx.Err(); err != nil {
		return memoryport.Commit{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.mem.writes[writeID]
	return cloneCommit(c), ok, nil
}

// EntryHeads implements memoryport.Store.
func (s *Store) EntryHeads(ctx context.Context, ids []memoryport.EntryID) ([]memoryport.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memoryport.Entry
	for _, id := range ids {
		if h := s.mem.versions[id]; len(h) > 0 {
			out = append(out, cloneEntry(h[len(h)-1]))
		}
	}
	return out, nil
}

// EntryHistory implements memoryport.Store.
func (s *Store) EntryHistory(ctx context.Context, namespace, key string) ([]memoryport.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.mem.versions[memoryport.EntryID{Namespace: namespace, Key: key}]
	out := make([]memoryport.Entry, len(h))
	for i, e := range h {
		out[i] = cloneEntry(e)
	}
	return out, nil
}

// Namespaces implements memoryport.Store.
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

// LoadView implements memoryport.ViewStore.
func (s *Store) LoadView(ctx context.Context, name string) (memoryport.ViewVersion, error) {
	if err := ctx.Err(); err != nil {
		return memoryport.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.mem.views[name]
	if len(vs) == 0 {
		return memoryport.ViewVersion{View: name}, nil
	}
	return cloneView(vs[len(vs)-1]), nil
}

// CommitView implements memoryport.ViewStore.
func (s *Store) CommitView(ctx context.Context, w memoryport.ViewWrite) (memoryport.ViewVersion, error) {
	if err := ctx.Err(); err != nil {
		return memoryport.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.init()
	digest := memoryport.ViewWriteDigest(w)
	if v, ok := s.mem.viewWrites[w.ID]; ok {
		if v.Digest != digest {
			return memoryport.ViewVersion{}, fmt.Errorf("memstore: view write %q: %w", w.ID, memoryport.ErrWriteIDReused)
		}
		v.Replayed = true
		return cloneView(v), nil
	}
	name := w.Next.View
	if last := int64(len(s.mem.views[name])); last != w.Basis {
		return memoryport.ViewVersion{}, fmt.Errorf("memstore: view %q is at version %d, the write expects %d: %w", name, last, w.Basis, memoryport.ErrBasisMismatch)
	}
	v := cloneView(w.Next)
	v.Version, v.Digest, v.Replayed = w.Basis+1, digest, false
	v.Provenance.WriteID = w.ID
	s.mem.views[name] = append(s.mem.views[name], v)
	s.mem.viewWrites[w.ID] = v
	return cloneView(v), nil
}

// LookupViewWrite implements memoryport.ViewStore.
func (s *Store) LookupViewWrite(ctx context.Context, writeID string) (memoryport.ViewVersion, bool, error) {
	if err := ctx.Err(); err != nil {
		return memoryport.ViewVersion{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.mem.viewWrites[writeID]
	return cloneView(v), ok, nil
}

// ViewAt implements memoryport.ViewStore.
func (s *Store) ViewAt(ctx context.Context, name string, version int64) (memoryport.ViewVersion, error) {
	if err := ctx.Err(); err != nil {
		return memoryport.ViewVersion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.mem.views[name]
	if version < 1 || version > int64(len(vs)) {
		return memoryport.ViewVersion{}, fmt.Errorf("memstore: view %q version %d: %w", name, version, memoryport.ErrNoVersion)
	}
	return cloneView(vs[version-1]), nil
}

// Views implements memoryport.ViewStore.
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

func cloneEntry(e memoryport.Entry) memoryport.Entry {
	e.Value = slices.Clone(e.Value)
	return e
}

func cloneCommit(c memoryport.Commit) memoryport.Commit {
	c.Entries = slices.Clone(c.Entries)
	return c
}

// cloneView copies a version: nothing of it is shared, and its values keep
// their bytes.
func cloneView(v memoryport.ViewVersion) memoryport.ViewVersion {
	v.Sources = slices.Clone(v.Sources)
	v.Members = slices.Clone(v.Members)
	for i := range v.Members {
		v.Members[i] = cloneEntry(v.Members[i])
	}
	return v
}
