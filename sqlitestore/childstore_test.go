package sqlitestore_test

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
)

// childStore is the store a child process runs on: it reports each
// acknowledged Append on stdout as "ack <last seq>" — the write to the
// pipe is done before Append returns, so the parent knows of every
// acknowledgement even when the child is SIGKILLed right after — and calls
// its hooks around the child's Appends and reads.
//
// The runner calls a store from one goroutine, so the counter needs no lock.
type childStore struct {
	polyloop.Store
	appends int // Appends so far
	// before and after, when set, run before the kth Append (k from 1) is
	// handed to the store and after it returned (and was reported).
	before, after func(k int)
	// afterRead, when set, runs after each ReadLog.
	afterRead func()
}

func (s *childStore) Append(ctx context.Context, runID string, records ...polyloop.Record) error {
	s.appends++
	if s.before != nil {
		s.before(s.appends)
	}
	err := s.Store.Append(ctx, runID, records...)
	if err == nil && len(records) > 0 {
		fmt.Printf("ack %d\n", records[len(records)-1].Seq)
	}
	if s.after != nil {
		s.after(s.appends)
	}
	return err
}

func (s *childStore) ReadLog(ctx context.Context, runID string) (polyloop.RunLog, error) {
	l, err := s.Store.ReadLog(ctx, runID)
	if s.afterRead != nil {
		s.afterRead()
	}
	return l, err
}
