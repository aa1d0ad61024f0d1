// Package memstore is an in-memory polyloop.Store for tests and demos. It
// keeps the Store contract — atomic appends, the sequence rule, empty logs
// for unknown runs — but not durability: everything is gone with the
// process.
//
// It is a polyloop.RecordKeeper: it keeps the records themselves, never
// their bytes, and encodes nothing; the Runner checks them against the
// log's limits before any Append, as it does for every store.
//
// It can inject faults: fail the Nth append, or "crash" — accept no more
// appends once the store holds N records — so that tests can stop a run at
// any point of its log and resume it.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/polyloop/polyloop"
)

// ErrCrashed is returned by Append after a simulated crash.
var ErrCrashed = errors.New("memstore: store has crashed (simulated)")

// ErrInjected is the default error of an injected append failure.
var ErrInjected = errors.New("memstore: injected append failure")

// Options configure fault injection. The zero value injects nothing.
type Options struct {
	// FailAppend makes the FailAppend-th call to Append (counting from 1)
	// fail with FailErr (ErrInjected when nil), writing nothing.
	FailAppend int
	FailErr    error
	// CrashAfter, when positive, makes the store accept no Append that would
	// take its total number of records past CrashAfter, nor any later
	// Append: they fail with ErrCrashed, writing nothing.
	CrashAfter int
}

// Store is an in-memory Store. It is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	opts    Options
	runs    map[string]*runLog
	sums    map[string]*polyloop.RunSummary
	total   int
	appends int
	crashed bool
	leases  leaseTable
	mem     memoryData  // agent memory (memory.go)
	sweeps  sweepTables // ledger.go
}

// New returns an empty store with no fault injection.
func New() *Store { return NewWithOptions(Options{}) }

// NewWithOptions returns an empty store with the given fault injection.
func NewWithOptions(opts Options) *Store {
	return &Store{opts: opts, runs: map[string]*runLog{}, sums: map[string]*polyloop.RunSummary{}}
}

// SetFaults replaces the fault injection and clears a simulated crash: the
// store "restarts" with its records intact.
func (s *Store) SetFaults(opts Options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts, s.crashed, s.appends = opts, false, 0
}

// KeepsRecords implements polyloop.RecordKeeper.
func (s *Store) KeepsRecords() {}

// Append implements polyloop.Store. It keeps the Record of each row (a row
// without one is refused: the Runner always sets it) and drops its bytes.
func (s *Store) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appends++
	if s.opts.FailAppend > 0 && s.appends == s.opts.FailAppend {
		if s.opts.FailErr != nil {
			return s.opts.FailErr
		}
		return ErrInjected
	}
	if s.crashed || (s.opts.CrashAfter > 0 && s.total+len(rows) > s.opts.CrashAfter) {
		s.crashed = true
		return ErrCrashed
	}
	log := s.runs[runID]
	if log == nil {
		log = &runLog{}
		s.runs[runID] = log
	}
	next := int64(log.n)
	if rows[0].Seq != next {
		return fmt.Errorf("%w: run %q: append starts at seq %d, the run's next is %d", polyloop.ErrSeqConflict, runID, rows[0].Seq, next)
	}
	for _, r := range rows {
		if r.Record.Body == nil {
			return fmt.Errorf("memstore: run %q: row %d has no record (memstore keeps records, not bytes)", runID, r.Seq)
		}
	}
	sum := s.sums[runID]
	if sum == nil {
		sum = &polyloop.RunSummary{RunID: runID}
		s.sums[runID] = sum
	}
	for _, r := range rows {
		log.add(r.Record)
		sum.Apply(r.Record)
	}
	s.total += len(rows)
	return nil
}

// ReadRows implements polyloop.Store: a row for each record, carrying the
// record (no bytes). The records share their bodies with the store:
// callers must not modify them.
func (s *Store) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.runs[runID]
	if log == nil {
		return nil, nil
	}
	out := make([]polyloop.Row, 0, log.n)
	for _, c := range log.chunks {
		for _, r := range c {
			out = append(out, polyloop.Row{Seq: r.Seq, Kind: r.Kind(), Record: r})
		}
	}
	return out, nil
}

// ReadRowsFrom implements polyloop.Store's ranged read: the rows from seq
// from on, at most max, as ReadRows gives them.
func (s *Store) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if from < 0 || limit < 1 {
		return nil, fmt.Errorf("memstore: run %q: read of %d rows from seq %d", runID, limit, from)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.runs[runID]
	if log == nil || from >= int64(log.n) {
		return nil, nil
	}
	out := make([]polyloop.Row, 0, min(int64(limit), int64(log.n)-from))
	i := int64(0)
	for _, c := range log.chunks {
		if i+int64(len(c)) <= from {
			i += int64(len(c))
			continue
		}
		for _, r := range c[max(from-i, 0):] {
			if len(out) == limit {
				return out, nil
			}
			out = append(out, polyloop.Row{Seq: r.Seq, Kind: r.Kind(), Record: r})
		}
		i += int64(len(c))
	}
	return out, nil
}

// runLog holds a run's records in chunks, so that a long log grows without
// copying what it holds.
type runLog struct {
	chunks [][]polyloop.Record
	n      int
}

// add appends a record, in a new chunk when the last one is full: as large
// as the log so far, from 16 to 1024 records.
func (l *runLog) add(r polyloop.Record) {
	if k := len(l.chunks); k == 0 || len(l.chunks[k-1]) == cap(l.chunks[k-1]) {
		l.chunks = append(l.chunks, make([]polyloop.Record, 0, min(max(l.n, 16), 1024)))
	}
	k := len(l.chunks) - 1
	l.chunks[k] = append(l.chunks[k], r)
	l.n++
}

// ListRuns implements polyloop.RunLister.
func (s *Store) ListRuns(ctx context.Context, f polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []polyloop.RunSummary
	for _, sum := range s.sums {
		if f.Matches(*sum) {
			out = append(out, *sum)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if f.Descending {
			return out[j].Position().Before(out[i].Position())
		}
		return out[i].Position().Before(out[j].Position())
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// Put replaces a run's log wholesale, bypassing the sequence rule. It is for
// tests that need a log in a given state (a prefix, a corruption).
func (s *Store) Put(runID string, records []polyloop.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.runs[runID]; old != nil {
		s.total -= old.n
	}
	log := &runLog{}
	for _, r := range records {
		log.add(r)
	}
	s.runs[runID] = log
	s.total += len(records)
	sum := &polyloop.RunSummary{RunID: runID}
	for _, r := range records {
		sum.Apply(r)
	}
	s.sums[runID] = sum
}

// Len returns the total number of records held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Appends returns the number of Append calls made since the last SetFaults.
func (s *Store) Appends() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}
