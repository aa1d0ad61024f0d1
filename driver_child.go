package polyloop

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// startChild names the next child of the action. Unkeyed children are
// numbered in call order, which identifies them again on replay only if no
// two run at once: an unkeyed call while another unkeyed child's run is
// under way is refused. A key may be used once per action and may not
// contain '/', which separates generations of run ids. ran must be called
// when the child's run has returned (before any handler runs, so that a
// handler may start a fallback child); received when InvokeChild returns.
func (s *actionScope) startChild(key string) (ref ParentRef, ran, received func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref = ParentRef{RunID: s.info.RunID, Step: s.info.Step, Action: s.info.Index, Key: key, Maintenance: s.maintenance}
	if s.closed {
		return ref, nil, nil, fmt.Errorf("%w: %s has already returned", ErrNotInAction, s.name())
	}
	if key != "" {
		if strings.Contains(key, "/") {
			return ref, nil, nil, fmt.Errorf("%w: child key %q contains '/'", ErrInvalidConfig, key)
		}
		if s.keys[key] {
			return ref, nil, nil, fmt.Errorf("%w: child key %q used twice in %s", ErrInvalidConfig, key, s.name())
		}
		if s.keys == nil {
			s.keys = map[string]bool{}
		}
		s.keys[key] = true
		ran = func() {}
	} else {
		if s.inFlight > 0 {
			return ref, nil, nil, fmt.Errorf("%w: children invoked concurrently from one action need distinct keys (Child.Key)", ErrInvalidConfig)
		}
		s.unkeyed++
		s.inFlight++
		ref.Index = s.unkeyed
		var once sync.Once
		ran = func() { once.Do(func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }) }
	}
	s.active++
	received = func() { ran(); s.mu.Lock(); s.active--; s.mu.Unlock() }
	return ref, ran, received, nil
}

// writeReception records a reception in the parent's log, unless the action
// has already returned: then the reception would land after the step record,
// and it is refused (a replay of the action meets the child again).
func (s *actionScope) writeReception(ctx context.Context, rec *ChildReception) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: %s returned before child %q was received", ErrNotInAction, s.name(), rec.ChildRunID)
	}
	return s.d.writeReception(ctx, rec)
}

// reception returns the recorded reception of a child, if any.
func (d *driver) reception(childID string) (*ChildReception, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m.st.receptions[childID], d.m.st.receivesAgain("child:" + childID)
}

// writeReception appends a child's reception to the parent's log during the
// parent's action. Children may be received from several goroutines; the
// writes are serialized. The handler ran: its reception is a fact, recorded
// like the others when the run is being cancelled.
func (d *driver) writeReception(ctx context.Context, rec *ChildReception) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tickFact()
	return d.settle(ctx, d.m.receive(rec))
}
