package polylooptest

import (
	"context"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
)

// FaultySink is an event sink that fails, panics or hangs on chosen calls
// and records the events it delivers. With Sink set it delivers to Sink;
// the zero value records every event and never fails.
//
// Set the fields before first use; a FaultySink is safe for concurrent use.
type FaultySink struct {
	// Sink receives the events that are delivered; nil: they are only
	// recorded.
	Sink polyloop.EventSink
	// FailFrom makes calls from the FailFrom-th on (1-based) fail with
	// ErrInjected; 0 never.
	FailFrom int
	// FailCount bounds how many calls fail from FailFrom on; 0: all of them.
	FailCount int
	// PanicOn makes the PanicOn-th call panic; 0 never.
	PanicOn int
	// HangOn makes the HangOn-th call block until its context is done, then
	// return ctx.Err(); 0 never.
	HangOn int

	mu     sync.Mutex
	calls  int
	events []polyloop.Event
}

// Emit implements polyloop.EventSink.
func (s *FaultySink) Emit(ctx context.Context, ev polyloop.Event) error {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	switch {
	case n == s.PanicOn:
		panic(fmt.Sprintf("polylooptest: FaultySink panics on call %d (%s)", n, ev.Kind))
	case n == s.HangOn:
		<-ctx.Done()
		return fmt.Errorf("polylooptest: FaultySink hung on call %d: %w", n, ctx.Err())
	case s.FailFrom > 0 && n >= s.FailFrom && (s.FailCount == 0 || n < s.FailFrom+s.FailCount):
		return fmt.Errorf("polylooptest: FaultySink call %d (%s): %w", n, ev.Kind, ErrInjected)
	}
	if s.Sink != nil {
		if err := s.Sink.Emit(ctx, ev); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	return nil
}

// Calls returns the number of Emit calls made.
func (s *FaultySink) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Events returns a copy of the events delivered, in order.
func (s *FaultySink) Events() []polyloop.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]polyloop.Event(nil), s.events...)
}
