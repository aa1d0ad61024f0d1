package memstore

import (
	"context"
	"errors"
	"sync"

	"github.com/polyloop/polyloop"
)

var _ polyloop.Leaser = (*Store)(nil)

// leaseTable holds the leases of one Store: in-process, so liveness is the
// Lease value itself. A holder "dies" only through AbandonLease.
type leaseTable struct {
	mu   sync.Mutex
	held map[string]*lease // by run id: the current holder
}

type lease struct {
	t     *leaseTable
	runID string
	owner polyloop.LeaseOwner
	prev  *polyloop.LeaseTakeover
	lost  chan struct{}
	once  sync.Once
	dead  bool // guarded by t.mu
}

// AcquireLease implements polyloop.Leaser within the process: the Store's
// leases are its own, so two Stores never fence each other. A forced
// take-over closes the old holder's Lost at once.
func (s *Store) AcquireLease(ctx context.Context, runID string, req polyloop.LeaseRequest) (polyloop.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Owner.Token == "" {
		return nil, errors.New("memstore: lease request without an owner token")
	}
	t := &s.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	l := &lease{t: t, runID: runID, owner: req.Owner, lost: make(chan struct{})}
	switch cur := t.held[runID]; {
	case cur == nil:
	case cur.dead:
		l.prev = &polyloop.LeaseTakeover{From: cur.owner, To: req.Owner, Reason: polyloop.TakeoverHolderDead}
	case !req.TakeOver:
		return nil, &polyloop.LeaseHeldError{RunID: runID, Holder: cur.owner}
	default:
		cur.close()
		l.prev = &polyloop.LeaseTakeover{From: cur.owner, To: req.Owner, Reason: polyloop.TakeoverForced}
	}
	if t.held == nil {
		t.held = map[string]*lease{}
	}
	t.held[runID] = l
	return l, nil
}

// AbandonLease simulates the death of the process holding l, as kill -9
// would: nothing is released, and the next AcquireLease of the run takes
// the lease over from a dead holder. l must come from this Store.
func (s *Store) AbandonLease(l polyloop.Lease) {
	ml := l.(*lease)
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	ml.dead = true
}

func (l *lease) TakenOver() *polyloop.LeaseTakeover { return l.prev }
func (l *lease) Lost() <-chan struct{}              { return l.lost }
func (l *lease) close()                             { l.once.Do(func() { close(l.lost) }) }

// Release implements polyloop.Lease.
func (l *lease) Release(context.Context) error {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	if l.t.held[l.runID] == l {
		delete(l.t.held, l.runID)
	}
	l.close()
	return nil
}

var _ polyloop.LeaseProber = (*Store)(nil)

// LiveHolder implements polyloop.LeaseProber.
func (s *Store) LiveHolder(ctx context.Context, runID string) (polyloop.LeaseOwner, bool, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.LeaseOwner{}, false, err
	}
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	cur := s.leases.held[runID]
	if cur == nil || cur.dead {
		return polyloop.LeaseOwner{}, false, nil
	}
	return cur.owner, true, nil
}
