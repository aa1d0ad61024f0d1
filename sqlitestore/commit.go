package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The write connection is used by one goroutine at a time, the leader: the
// caller of an Append that found no transaction under way commits it
// itself, with every request queued meanwhile, so a lone run pays no
// hand-off between goroutines. While a leader commits, later requests
// queue; when it is done it hands the leadership to the first of them,
// which commits the next batch (up to MaxBatch) while the leader answers
// its own batch's callers. Each request's caller is woken once, to lead or
// with its outcome.

// committer queues requests for the leader.
type committer struct {
	mu      sync.Mutex
	pending []*request
	leading bool // a leader is committing or about to
	closed  bool
	// inflight counts the requests whose callers have not returned: the
	// write connection is in use only while it is positive.
	inflight sync.WaitGroup
}

// errLead, sent on a request's done channel, makes its caller the leader.
var errLead = errors.New("sqlitestore: lead the next batch")

// submit queues req and waits for its outcome, leading a batch when its
// turn comes. If ctx ends before a leader took req into a transaction,
// submit returns an error wrapping ctx.Err() and req is never written.
func (s *Store) submit(ctx context.Context, req *request) error {
	lead, err := s.enqueue(req)
	if err != nil {
		return err
	}
	defer s.c.inflight.Done()
	if lead {
		return s.lead(req)
	}
	select {
	case err := <-req.done:
		return s.follow(req, err)
	case <-ctx.Done():
		if req.state.CompareAndSwap(pending, abandoned) {
			return fmt.Errorf("sqlitestore: %s: %w", req.label(), ctx.Err())
		}
		return s.follow(req, <-req.done)
	}
}

// follow returns a queued request's outcome, leading first if told to.
func (s *Store) follow(req *request, err error) error {
	if err == errLead {
		return s.lead(req)
	}
	return err
}

// enqueue adds req to the queue and reports whether its caller must lead.
func (s *Store) enqueue(req *request) (lead bool, err error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.closed {
		return false, ErrClosed
	}
	s.c.inflight.Add(1)
	s.c.pending = append(s.c.pending, req)
	if s.c.leading {
		return false, nil
	}
	s.c.leading = true
	return true, nil
}

// lead commits the next batch, which holds own (the leader's request),
// hands the leadership on, answers the batch and returns own's outcome.
//
// If writing panics, lead still hands the leadership on and answers the
// batch, every request of it failing with its outcome unknown, and panics
// again.
func (s *Store) lead(own *request) error {
	own.state.Store(pending) // it may have been marked leading
	s.c.mu.Lock()
	n := min(len(s.c.pending), s.opts.MaxBatch)
	batch := append([]*request(nil), s.c.pending[:n]...)
	s.c.pending = s.c.pending[n:]
	s.c.mu.Unlock()
	answered := false
	defer func() {
		if answered {
			return
		}
		p := recover()
		s.handOff()
		for _, r := range batch {
			if r.state.Load() != abandoned {
				r.done <- fmt.Errorf("sqlitestore: %s: the batch's leader panicked, the outcome is unknown: %v", r.label(), p)
			}
		}
		panic(p)
	}()
	live, errs, err := s.writeAll(batch)
	s.handOff()
	answerAll(live, errs, err)
	answered = true
	return <-own.done
}

// handOff makes the first queued request that is still wanted the next
// leader, or ends the leadership when none is queued.
func (s *Store) handOff() {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for len(s.c.pending) > 0 {
		next := s.c.pending[0]
		if next.state.CompareAndSwap(pending, leading) {
			next.done <- errLead
			return
		}
		s.c.pending[0] = nil
		s.c.pending = s.c.pending[1:] // abandoned by its caller
	}
	s.c.pending = nil
	s.c.leading = false
}

// closeQueue refuses new requests and waits for those queued to be
// answered or abandoned.
func (s *Store) closeQueue() (already bool) {
	s.c.mu.Lock()
	if s.c.closed {
		s.c.mu.Unlock()
		return true
	}
	s.c.closed = true
	s.c.mu.Unlock()
	s.c.inflight.Wait()
	return false
}

func (c *committer) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
