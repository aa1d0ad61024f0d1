package polylooptest

import (
	"context"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop/memory/memoryport"
)

// MemoryStore is what the memory ports of a store implement: entries and
// views (memstore, sqlitestore and pgstore implement both).
type MemoryStore interface {
	memoryport.Store
	memoryport.ViewStore
}

// MemoryFault is a way a memory port's commit fails.
type MemoryFault int

// The faults of FaultyMemoryStore.
const (
	// NoFault: the call goes through.
	NoFault MemoryFault = iota
	// FailBefore: the call fails with ErrInjected before it reaches the
	// store: nothing is committed.
	FailBefore
	// LoseAck: the call commits, then fails with ErrInjected: the
	// acknowledgement is lost.
	LoseAck
	// BreakContract: the call commits and returns a result that does not
	// answer the write (another write id, no versions).
	BreakContract
	// RefuseCAS: the call fails with memoryport.ErrBasisMismatch before it
	// reaches the store, as a store's compare-and-set refusing it would.
	RefuseCAS
)

// FaultyMemoryStore wraps a MemoryStore and injects faults into chosen
// commits, counted from 1 separately for CommitWrite and CommitView, and
// into loads. It is safe for concurrent use.
type FaultyMemoryStore struct {
	MemoryStore
	mu             sync.Mutex
	commits        map[int]MemoryFault // by CommitWrite call
	views          map[int]MemoryFault // by CommitView call
	failLoad       bool
	nCommit, nView int
}

// NewFaultyMemoryStore wraps s with no fault armed.
func NewFaultyMemoryStore(s MemoryStore) *FaultyMemoryStore {
	return &FaultyMemoryStore{MemoryStore: s, commits: map[int]MemoryFault{}, views: map[int]MemoryFault{}}
}

// FailCommit arms fault f for the n-th CommitWrite from now (1: the next).
func (s *FaultyMemoryStore) FailCommit(n int, f MemoryFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits[s.nCommit+n] = f
}

// FailView arms fault f for the n-th CommitView from now (1: the next).
func (s *FaultyMemoryStore) FailView(n int, f MemoryFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.views[s.nView+n] = f
}

// FailLoads makes the reads of current state — LoadEntries, EntryHeads and
// LoadView — fail with ErrInjected (or work again).
func (s *FaultyMemoryStore) FailLoads(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLoad = fail
}

// Commits returns how many CommitWrite and CommitView calls were made.
func (s *FaultyMemoryStore) Commits() (writes, views int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nCommit, s.nView
}

func (s *FaultyMemoryStore) fault(views bool) MemoryFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if views {
		s.nView++
		return s.views[s.nView]
	}
	s.nCommit++
	return s.commits[s.nCommit]
}

// CommitWrite implements memoryport.Store.
func (s *FaultyMemoryStore) CommitWrite(ctx context.Context, w memoryport.Write) (memoryport.Commit, error) {
	switch s.fault(false) {
	case FailBefore:
		return memoryport.Commit{}, fmt.Errorf("commit %q: %w", w.ID, ErrInjected)
	case RefuseCAS:
		return memoryport.Commit{}, fmt.Errorf("commit %q: %w", w.ID, memoryport.ErrBasisMismatch)
	case LoseAck:
		if _, err := s.MemoryStore.CommitWrite(ctx, w); err != nil {
			return memoryport.Commit{}, err
		}
		return memoryport.Commit{}, fmt.Errorf("commit %q committed, acknowledgement lost: %w", w.ID, ErrInjected)
	case BreakContract:
		if _, err := s.MemoryStore.CommitWrite(ctx, w); err != nil {
			return memoryport.Commit{}, err
		}
		return memoryport.Commit{WriteID: w.ID + "-other"}, nil
	}
	return s.MemoryStore.CommitWrite(ctx, w)
}

// CommitView implements memoryport.ViewStore.
func (s *FaultyMemoryStore) CommitView(ctx context.Context, w memoryport.ViewWrite) (memoryport.ViewVersion, error) {
	switch s.fault(true) {
	case FailBefore:
		return memoryport.ViewVersion{}, fmt.Errorf("view commit %q: %w", w.ID, ErrInjected)
	case RefuseCAS:
		return memoryport.ViewVersion{}, fmt.Errorf("view commit %q: %w", w.ID, memoryport.ErrBasisMismatch)
	case LoseAck:
		if _, err := s.MemoryStore.CommitView(ctx, w); err != nil {
			return memoryport.ViewVersion{}, err
		}
		return memoryport.ViewVersion{}, fmt.Errorf("view commit %q committed, acknowledgement lost: %w", w.ID, ErrInjected)
	case BreakContract:
		if _, err := s.MemoryStore.CommitView(ctx, w); err != nil {
			return memoryport.ViewVersion{}, err
		}
		return memoryport.ViewVersion{View: w.Next.View, Version: w.Basis + 7}, nil
	}
	return s.MemoryStore.CommitView(ctx, w)
}

// LoadEntries implements memoryport.Store.
func (s *FaultyMemoryStore) LoadEntries(ctx context.Context, namespaces []string) ([]memoryport.Entry, error) {
	s.mu.Lock()
	fail := s.failLoad
	s.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("load: %w", ErrInjected)
	}
	return s.MemoryStore.LoadEntries(ctx, namespaces)
}

// EntryHeads implements memoryport.Store.
func (s *FaultyMemoryStore) EntryHeads(ctx context.Context, ids []memoryport.EntryID) ([]memoryport.Entry, error) {
	s.mu.Lock()
	fail := s.failLoad
	s.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("read heads: %w", ErrInjected)
	}
	return s.MemoryStore.EntryHeads(ctx, ids)
}

// LoadView implements memoryport.ViewStore.
func (s *FaultyMemoryStore) LoadView(ctx context.Context, name string) (memoryport.ViewVersion, error) {
	s.mu.Lock()
	fail := s.failLoad
	s.mu.Unlock()
	if fail {
		return memoryport.ViewVersion{}, fmt.Errorf("load view: %w", ErrInjected)
	}
	return s.MemoryStore.LoadView(ctx, name)
}
