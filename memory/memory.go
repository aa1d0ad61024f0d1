package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory/memoryport"
)

// Options configure a Memory.
type Options struct {
	// Namespaces are those the Memory serves (at least one).
	Namespaces []string
	// Publish, when set, is the publication a commit requires once it is
	// installed (notify other processes, an outbox). It is called once per
	// commit this Memory made, never for a commit found again by its write
	// id, and with the Memory's writes held, so that publications come in
	// commit order (keep it short); its failure is returned as a
	// *polyloop.PublicationError and the commit stands. Publication is at
	// most once: after a crash between a commit and its publication, the
	// publication is lost, and consumers that need every change read the
	// store's history.
	Publish func(ctx context.Context, c Commit) error
}

// Memory is what an agent remembers: the entries of some namespaces,
// installed from its Store, written by Apply. It is safe for concurrent use;
// share one per process among the runs that write the same namespaces, so
// that their stale writes meet the pre-commit check (see Apply).
//
// It loads its entries at first use. After a persistence failure it is
// broken: Apply, Get, List and Basis fail with a *ReloadRequiredError until
// Reload succeeds, since the failed commit may have happened; History reads
// the store and stays available.
type Memory struct {
	store Store
	opts  Options

	mu      sync.Mutex
	loaded  bool
	broken  error // the PersistenceError after which it refuses to work
	live    map[EntryID]Entry
	heads   map[EntryID]int64 // the last version seen of each entry, tombstones included
	commits map[string]Commit // the writes this Memory committed since it loaded
}

// New returns a Memory over store. Nothing is read until first use.
func New(store Store, opts Options) (*Memory, error) {
	if store == nil {
		return nil, errors.New("memory: New: the store is nil")
	}
	if len(opts.Namespaces) == 0 {
		return nil, errors.New("memory: New: no namespace to serve")
	}
	for _, ns := range opts.Namespaces {
		if !validName(ns) {
			return nil, fmt.Errorf("memory: New: invalid namespace %q", ns)
		}
	}
	opts.Namespaces = slices.Clone(opts.Namespaces)
	return &Memory{store: store, opts: opts}, nil
}

// Namespaces returns the namespaces the Memory serves.
func (m *Memory) Namespaces() []string { return slices.Clone(m.opts.Namespaces) }

// Reload installs the store's entries — the authoritative ones, whatever a
// failed commit did — and makes a broken Memory work again. A failure is a
// *polyloop.PersistenceError and leaves the Memory as it was.
func (m *Memory) Reload(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.load(ctx)
}

func (m *Memory) load(ctx context.Context) error {
	entries, err := m.store.LoadEntries(ctx, m.opts.Namespaces)
	if err != nil {
		return persistenceError("memory load", "", err)
	}
	live := make(map[EntryID]Entry, len(entries))
	heads := make(map[EntryID]int64, len(entries))
	for _, e := range entries {
		if e.Deleted || !slices.Contains(m.opts.Namespaces, e.Namespace) {
			return persistenceError("memory load", "", fmt.Errorf("%w: LoadEntries returned %s (deleted %v), which is not a live entry of the namespaces asked for", ErrPortContract, e.ID(), e.Deleted))
		}
		live[e.ID()], heads[e.ID()] = e, e.Version
	}
	m.live, m.heads, m.commits = live, heads, map[string]Commit{}
	m.loaded, m.broken = true, nil
	return nil
}

// ready loads at first use and refuses a broken Memory; m.mu is held.
func (m *Memory) ready(ctx context.Context) error {
	if m.broken != nil {
		return &ReloadRequiredError{Entity: "memory", Cause: m.broken}
	}
	if !m.loaded {
		return m.load(ctx)
	}
	return nil
}

// Get returns the live entry of a key.
func (m *Memory) Get(ctx context.Context, namespace, key string) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ready(ctx); err != nil {
		return Entry{}, false, err
	}
	e, ok := m.live[EntryID{Namespace: namespace, Key: key}]
	return e, ok, nil
}

// List returns the live entries of a namespace, by key.
func (m *Memory) List(ctx context.Context, namespace string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ready(ctx); err != nil {
		return nil, err
	}
	var out []Entry
	for id, e := range m.live {
		if id.Namespace == namespace {
			out = append(out, e)
		}
	}
	return sortedEntries(out), nil
}

// current returns the live entries among ids as the store holds them now,
// installing what is newer there (for View's pre-commit check).
func (m *Memory) current(ctx context.Context, ids []EntryID) (map[EntryID]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ready(ctx); err != nil {
		return nil, err
	}
	if err := m.refresh(ctx, ids); err != nil {
		return nil, err
	}
	out := make(map[EntryID]Entry, len(ids))
	for _, id := range ids {
		if e, ok := m.live[id]; ok {
			out[id] = e
		}
	}
	return out, nil
}

// Basis returns the live versions of entries (0 for one that is absent): the
// basis of a proposal made from what they hold now.
func (m *Memory) Basis(ctx context.Context, ids ...EntryID) (Basis, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ready(ctx); err != nil {
		return nil, err
	}
	b := make(Basis, len(ids))
	for i, id := range ids {
		b[i] = Expect{Namespace: id.Namespace, Key: id.Key, Version: m.live[id].Version}
	}
	return b, nil
}

// History returns every version of an entry from the store, oldest first.
func (m *Memory) History(ctx context.Context, namespace, key string) ([]Entry, error) {
	h, err := m.store.EntryHistory(ctx, namespace, key)
	if err != nil {
		return nil, persistenceError("memory history", "", err)
	}
	return h, nil
}

// Apply commits a write, in this order:
//
//  1. Input validation: a bad write is an *InvalidWriteError.
//  2. A broken Memory refuses it (*ReloadRequiredError).
//  3. The write id: a write with operations whose id is committed already
//     — by this Memory, or in the store (a write issued again after a
//     crash, or by another process) — returns that commit, Replayed, when
//     its operations are the same (WriteDigest); with other operations it
//     is an *InvalidWriteError that errors.Is ErrWriteIDReused. Either way
//     nothing is written. A failure of the store's lookup is a
//     *polyloop.PersistenceError; nothing was written, and the Memory
//     keeps working.
//  4. The pre-commit check: every entry the basis lists, and every entry an
//     operation touches (expected absent unless listed), is at the
//     expected version in the store — the Memory reads their last versions
//     (Store.EntryHeads) and installs those newer than its own, so a write
//     made from versions another process has replaced meets the check too.
//     A stale basis is a *ConflictError; the basis is never swapped. A
//     failure of the read is a *polyloop.PersistenceError; nothing was
//     written, and the Memory keeps working.
//  5. A write without operations stops here: its basis is checked, nothing
//     is committed, and its Commit has no entries.
//  6. The store's commit, and the checks of what it returned: any failure
//     (ErrBasisMismatch from the store's own compare-and-set — another
//     writer committed since step 4 —, and ErrWriteIDReused from a writer
//     of the same id that committed since step 3, included) is a
//     *polyloop.PersistenceError and leaves the Memory broken. Nothing is installed and nothing is retried: the commit may
//     have happened.
//  7. The local install.
//  8. Publication (Options.Publish): a failure is a
//     *polyloop.PublicationError returned with the Commit; the commit stands
//     and is installed, and the Memory keeps working.
//
// Writes are applied one at a time.
func (m *Memory) Apply(ctx context.Context, w Write) (Commit, error) {
	w, err := normalize(w, m.opts.Namespaces, true)
	if err != nil {
		return Commit{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ready(ctx); err != nil {
		return Commit{}, err
	}
	if c, found, err := m.committed(ctx, w); err != nil || found {
		return c, err
	}
	if err := m.refresh(ctx, writeIDs(w)); err != nil {
		return Commit{}, err
	}
	if stale := m.stale(w); len(stale) > 0 {
		return Commit{}, &ConflictError{WriteID: w.ID, Stale: stale}
	}
	if len(w.Ops) == 0 {
		return Commit{WriteID: w.ID}, nil
	}
	c, err := m.store.CommitWrite(ctx, w)
	if err == nil {
		err = checkCommit(w, c, false)
	}
	if err != nil {
		return Commit{}, m.fail(ctx, w, err)
	}
	m.install(w, c)
	if c.Replayed || m.opts.Publish == nil {
		return c, nil
	}
	if err := m.opts.Publish(ctx, c); err != nil {
		return c, &polyloop.PublicationError{Op: "memory commit " + w.ID, Err: err}
	}
	return c, nil
}

// Committed reports whether a write is committed already, by its id: in
// this Memory, or in the store (a write issued again after a crash, whose
// first attempt may have committed). A commit of that id with other
// operations is an *InvalidWriteError that errors.Is ErrWriteIDReused, as
// in Apply. A store failure is a *polyloop.PersistenceError; it does not
// break the Memory (nothing was written).
func (m *Memory) Committed(ctx context.Context, w Write) (Commit, bool, error) {
	w, err := normalize(w, m.opts.Namespaces, false)
	if err != nil {
		return Commit{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.committed(ctx, w)
}

// committed looks a write's id up, in this Memory and then in the store,
// and checks that a commit found under it has the write's operations. A
// write without operations is never committed. m.mu is held.
func (m *Memory) committed(ctx context.Context, w Write) (Commit, bool, error) {
	if len(w.Ops) == 0 {
		return Commit{}, false, nil
	}
	c, ok := m.commits[w.ID]
	if !ok {
		var err error
		if c, ok, err = m.store.LookupWrite(ctx, w.ID); err == nil && ok && c.Digest == "" {
			err = fmt.Errorf("%w: LookupWrite(%q) returned a commit without its digest", ErrPortContract, w.ID)
		}
		if err != nil || !ok {
			return Commit{}, false, lookupError(w, err)
		}
	}
	if c.Digest != memoryport.WriteDigest(w) {
		return Commit{}, false, reused(w.ID, "operations")
	}
	if err := checkCommit(w, c, true); err != nil {
		return Commit{}, false, lookupError(w, err)
	}
	c.Replayed = true
	return c, true, nil
}

// lookupError marks a failure of the store's lookup of a write (nil for
// none).
func lookupError(w Write, err error) error {
	if err == nil {
		return nil
	}
	return persistenceError("memory lookup", w.Provenance.RunID, err)
}

// refresh reads the last versions of entries from the store and installs
// those newer than the installed ones: what another Memory on the store
// committed, confirmed. m.mu is held.
func (m *Memory) refresh(ctx context.Context, ids []EntryID) error {
	if len(ids) == 0 {
		return nil
	}
	heads, err := m.store.EntryHeads(ctx, ids)
	if err == nil {
		err = checkHeads(ids, heads)
	}
	if err != nil {
		return persistenceError("memory read", "", err)
	}
	for _, h := range heads {
		id := h.ID()
		if h.Version <= m.heads[id] {
			continue
		}
		m.heads[id] = h.Version
		if h.Deleted {
			delete(m.live, id)
		} else {
			m.live[id] = h
		}
	}
	return nil
}

// checkHeads checks what EntryHeads returned: entries asked for, each
// once, with a version.
func checkHeads(ids []EntryID, heads []Entry) error {
	asked := make(map[EntryID]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	seen := make(map[EntryID]bool, len(heads))
	for _, h := range heads {
		id := h.ID()
		if !asked[id] || seen[id] || h.Version < 1 || h.Deleted == (len(h.Value) > 0) {
			return fmt.Errorf("%w: EntryHeads returned %s version %d (deleted %v), which is not the last version of an entry asked for, once", ErrPortContract, id, h.Version, h.Deleted)
		}
		seen[id] = true
	}
	return nil
}

// stale lists the entries whose installed version is not the one the write
// expects.
func (m *Memory) stale(w Write) []Stale {
	var out []Stale
	check := func(id EntryID, want int64) {
		if got := m.live[id].Version; got != want {
			out = append(out, Stale{EntryID: id, Expected: want, Actual: got})
		}
	}
	for _, e := range w.Basis {
		check(e.ID(), e.Version)
	}
	for _, op := range w.Ops {
		if !slices.ContainsFunc(w.Basis, func(e Expect) bool { return e.ID() == op.ID() }) {
			check(op.ID(), 0)
		}
	}
	return out
}

// fail breaks the Memory after a port failure and returns it marked.
func (m *Memory) fail(ctx context.Context, w Write, err error) error {
	pe := persistenceError("memory commit", w.Provenance.RunID, err)
	m.broken = pe
	if cerr := ctx.Err(); cerr != nil && !errors.Is(pe, cerr) {
		return errors.Join(cerr, pe)
	}
	return pe
}

// checkCommit checks what the store returned for a write: a version per
// operation, in order, of the right kind, newer than the basis (for a fresh
// commit).
func checkCommit(w Write, c Commit, replayed bool) error {
	if c.WriteID != w.ID || len(c.Entries) != len(w.Ops) {
		return fmt.Errorf("%w: write %q with %d operations got commit %q with %d entries", ErrPortContract, w.ID, len(w.Ops), c.WriteID, len(c.Entries))
	}
	for i, op := range w.Ops {
		v := c.Entries[i]
		if v.ID() != op.ID() || v.Deleted != (op.Kind == OpDelete) || v.Version < 1 {
			return fmt.Errorf("%w: operation %d (%s %s) got version %+v", ErrPortContract, i, op.Kind, op.ID(), v)
		}
		if !replayed && !c.Replayed && v.Version <= w.Basis.Version(op.ID()) {
			return fmt.Errorf("%w: %s got version %d, not newer than its basis %d", ErrPortContract, op.ID(), v.Version, w.Basis.Version(op.ID()))
		}
	}
	return nil
}

// install puts a commit's versions in place, each only if newer than what is
// installed: a commit found again may be older than later writes.
func (m *Memory) install(w Write, c Commit) {
	if !c.Replayed {
		c.Digest = memoryport.WriteDigest(w)
		m.commits[w.ID] = c
	}
	for i, v := range c.Entries {
		id := v.ID()
		if v.Version <= m.heads[id] {
			continue
		}
		m.heads[id] = v.Version
		if v.Deleted {
			delete(m.live, id)
			continue
		}
		m.live[id] = Entry{Namespace: id.Namespace, Key: id.Key, Version: v.Version, Value: w.Ops[i].Value, Provenance: w.Provenance}
	}
}
