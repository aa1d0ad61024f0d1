package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Group commit. The caller of an Append that finds fewer than MaxGroups
// transactions under way becomes a leader: it takes every queued Append
// (itself among them, unless another leader took it; up to maxBatch, and
// up to maxBatchBytes of encoded records) into
// one transaction on one connection. Appends arriving meanwhile queue; when
// a leader is done it hands the leadership to the first of them and answers
// its own batch. A lone run's Append is led by its own caller: one round
// trip, no hand-off between goroutines.

// maxBatch bounds the Appends of one transaction.
const maxBatch = 128

// DefaultMaxBatchBytes bounds the encoded records of one group
// transaction, which travel in one array parameter: pgx refuses a message
// over 1 GiB before sending it, so a group of Appends that each fit alone
// must not add up to one. A batch always holds at least one Append,
// whatever its size.
const DefaultMaxBatchBytes = 64 << 20

// committer queues requests for the leaders.
type committer struct {
	mu      sync.Mutex
	pending []*request
	leaders int // leaders committing or about to
}

// errLead, sent on a request's done channel, makes its caller a leader.
var errLead = errors.New("pgstore: lead the next batch")

// submit queues req and waits for its outcome, leading batches when told
// to.
func (s *Store) submit(ctx context.Context, req *request) error {
	if s.enqueue(req) {
		s.lead(req)
	}
	wait := ctx.Done()
	for {
		select {
		case err := <-req.done:
			if err != errLead {
				return err
			}
			s.lead(req)
		case <-wait:
			if req.state.CompareAndSwap(pending, abandoned) {
				return fmt.Errorf("pgstore: append to run %q: %w", req.runID, ctx.Err())
			}
			wait = nil // taken: wait for the outcome
		}
	}
}

// enqueue adds req to the queue and reports whether its caller must lead.
// A request whose caller will lead is marked leading at once, under the
// queue's lock, so that another leader's handOff cannot pick it: a second
// token on its one-slot done channel would leave no room for its outcome.
func (s *Store) enqueue(req *request) (lead bool) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.pending = append(s.c.pending, req)
	if s.c.leaders >= s.maxGroups {
		return false
	}
	s.c.leaders++
	req.state.Store(leading) // its caller leads: no hand-off may make it lead again
	return true
}

// lead commits one batch of the queue, hands the leadership on and answers
// the batch. own is the leader's request, which may be in the batch, in a
// batch of another leader, or still queued.
//
// If writing panics, lead still hands the leadership on and answers the
// batch, every Append of it failing with its outcome unknown, withdraws
// own if it is still queued (its caller will not be there to hear), and
// panics again.
func (s *Store) lead(own *request) {
	own.state.CompareAndSwap(leading, pending)
	var batch []*request
	answered := false
	defer func() {
		if answered {
			return
		}
		p := recover()
		own.state.CompareAndSwap(pending, abandoned)
		s.handOff()
		for _, r := range batch {
			r.done <- fmt.Errorf("pgstore: append to run %q: the group's leader panicked, the outcome is unknown: %v", r.runID, p)
		}
		panic(p)
	}()
	batch = s.take()
	errs := s.writeGroup(batch)
	s.handOff()
	for i, r := range batch {
		r.done <- errs[i]
	}
	answered = true
}

// take claims queued requests in queue order, up to maxBatch of them and
// s.maxBatchBytes of encoded records (at least one request), skipping those
// abandoned and leaving those whose callers were made leaders and those
// that do not fit.
func (s *Store) take() []*request {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	var batch []*request
	size := 0
	kept := s.c.pending[:0]
	for _, r := range s.c.pending {
		n := r.rows.size()
		fits := len(batch) < maxBatch && (len(batch) == 0 || size+n <= s.maxBatchBytes)
		switch {
		case fits && r.state.CompareAndSwap(pending, claimed):
			batch = append(batch, r)
			size += n
		case r.state.Load() != abandoned:
			kept = append(kept, r)
		}
	}
	clear(s.c.pending[len(kept):])
	s.c.pending = kept
	return batch
}

// handOff makes the first queued request still wanted a leader, or gives
// the leadership up when none is queued.
func (s *Store) handOff() {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for _, r := range s.c.pending {
		if r.state.CompareAndSwap(pending, leading) {
			r.done <- errLead
			return
		}
	}
	s.c.leaders--
}
