package polylooptest

import (
	"context"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
)

// FaultyStore wraps a Store and injects failures: an Append or ReadRows that
// fails, an acknowledgement lost after a commit, a crash after which no
// more appends are accepted. It wraps any Store, so a test can stop a run
// at any point of its log and resume it from the underlying store.
//
// Set the fields before first use; a FaultyStore is safe for concurrent use.
// It does not forward polyloop.RunLister.
type FaultyStore struct {
	// Store is the wrapped store. Required.
	Store polyloop.Store
	// FailAppend makes the FailAppend-th Append call (1-based, counting
	// every call) fail with ErrInjected; 0 never.
	FailAppend int
	// LoseAck makes that failing Append commit first: the rows reach
	// Store, and the error reports a lost acknowledgement.
	LoseAck bool
	// CrashAfter "crashes" the store once it has accepted CrashAfter rows
	// through the wrapper: an Append that would go beyond writes nothing and
	// fails with ErrCrashed, and so does every Append after it. 0 never.
	CrashAfter int
	// FailRead makes the FailRead-th read — a ReadRows or ReadRowsFrom
	// call, each chunk one — fail with ErrInjected; 0 never.
	FailRead int

	mu      sync.Mutex
	appends int
	reads   int
	records int
	crashed bool
}

// Append implements polyloop.Store.
func (s *FaultyStore) Append(ctx context.Context, runID string, records []polyloop.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appends++
	if s.crashed || (s.CrashAfter > 0 && s.records+len(records) > s.CrashAfter) {
		s.crashed = true
		return fmt.Errorf("append %d to run %q: %w", s.appends, runID, ErrCrashed)
	}
	if s.appends == s.FailAppend {
		if !s.LoseAck {
			return fmt.Errorf("append %d to run %q: %w", s.appends, runID, ErrInjected)
		}
		if err := s.Store.Append(ctx, runID, records); err != nil {
			return err
		}
		s.records += len(records)
		return fmt.Errorf("append %d to run %q committed, acknowledgement lost: %w", s.appends, runID, ErrInjected)
	}
	if err := s.Store.Append(ctx, runID, records); err != nil {
		return err
	}
	s.records += len(records)
	return nil
}

// ReadRows implements polyloop.Store.
func (s *FaultyStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	if err := s.read(runID); err != nil {
		return nil, err
	}
	return s.Store.ReadRows(ctx, runID)
}

// ReadRowsFrom implements polyloop.Store.
func (s *FaultyStore) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	if err := s.read(runID); err != nil {
		return nil, err
	}
	return s.Store.ReadRowsFrom(ctx, runID, from, limit)
}

// read counts a read, and fails the FailRead-th.
func (s *FaultyStore) read(runID string) error {
	s.mu.Lock()
	s.reads++
	fail := s.reads == s.FailRead
	n := s.reads
	s.mu.Unlock()
	if fail {
		return fmt.Errorf("read %d of run %q: %w", n, runID, ErrInjected)
	}
	return nil
}

// Crashed reports whether the simulated crash happened.
func (s *FaultyStore) Crashed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashed
}

// Appends returns the number of Append calls made.
func (s *FaultyStore) Appends() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}

// Records returns the number of rows (records) the wrapper passed to Store.
func (s *FaultyStore) Records() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}
