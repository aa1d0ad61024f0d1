package polyloop

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// sinkSet delivers events to the runner's sinks for one invocation, counting
// failures and disabling sinks past their limits. The loop never stops for a
// sink.
type sinkSet struct {
	sinks   []EventSink
	reports []SinkReport
	consec  []int
	policy  SinkPolicy
}

var errSinkTimeout = errors.New("emit timed out")

func newSinkSet(sinks []EventSink, p SinkPolicy) *sinkSet {
	if p.MaxConsecutiveErrors == 0 {
		p.MaxConsecutiveErrors = DefaultMaxConsecutiveErrors
	}
	if p.MaxPanics == 0 {
		p.MaxPanics = 1
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultSinkTimeout
	}
	s := &sinkSet{sinks: sinks, policy: p, consec: make([]int, len(sinks)), reports: make([]SinkReport, len(sinks))}
	for i, k := range sinks {
		s.reports[i] = SinkReport{Index: i, Sink: fmt.Sprintf("%T", k)}
	}
	return s
}

func (s *sinkSet) active() bool {
	for i := range s.reports {
		if !s.reports[i].Disabled {
			return true
		}
	}
	return false
}

// wantDeltas reports whether an active sink wants model_delta events.
func (s *sinkSet) wantDeltas() bool {
	for i, k := range s.sinks {
		if ds, ok := k.(DeltaSink); ok && !s.reports[i].Disabled && ds.WantsDeltas() {
			return true
		}
	}
	return false
}

func (s *sinkSet) emit(ctx context.Context, ev Event) {
	for i, k := range s.sinks {
		rep := &s.reports[i]
		if rep.Disabled {
			continue
		}
		err, panicked := s.deliver(ctx, k, ev)
		switch {
		case panicked:
			rep.Panics++
			rep.LastFailure = truncateString(err.Error(), 200)
			if s.policy.MaxPanics > 0 && rep.Panics >= s.policy.MaxPanics {
				rep.Disabled = true
			}
		case err != nil:
			if errors.Is(err, errSinkTimeout) {
				rep.Timeouts++
			}
			rep.Errors++
			rep.LastFailure = truncateString(err.Error(), 200)
			s.consec[i]++
			if s.policy.MaxConsecutiveErrors > 0 && s.consec[i] >= s.policy.MaxConsecutiveErrors {
				rep.Disabled = true
			}
		default:
			s.consec[i] = 0
		}
	}
}

// deliver calls one sink, recovering a panic and bounding the call by the
// policy's timeout. The sink's context is detached from the run's
// cancellation: the event reflects a durable fact and is delivered even when
// the run is being cancelled, within the timeout.
func (s *sinkSet) deliver(ctx context.Context, k EventSink, ev Event) (err error, panicked bool) {
	ctx = context.WithoutCancel(ctx)
	if s.policy.Timeout < 0 {
		return callSink(ctx, k, ev)
	}
	ctx, cancel := context.WithTimeout(ctx, s.policy.Timeout)
	defer cancel()
	type result struct {
		err      error
		panicked bool
	}
	done := make(chan result, 1)
	go func() {
		e, p := callSink(ctx, k, ev)
		done <- result{e, p}
	}()
	timer := time.NewTimer(s.policy.Timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.err, r.panicked
	case <-timer.C:
		return fmt.Errorf("%w after %v", errSinkTimeout, s.policy.Timeout), false
	}
}

func callSink(ctx context.Context, k EventSink, ev Event) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			err, panicked = fmt.Errorf("sink panicked: %v", r), true
		}
	}()
	return k.Emit(ctx, ev), false
}

func (s *sinkSet) snapshot() []SinkReport {
	if len(s.reports) == 0 {
		return nil
	}
	var out []SinkReport
	for _, r := range s.reports {
		if r.Errors > 0 || r.Panics > 0 || r.Disabled {
			out = append(out, r)
		}
	}
	return out
}

// counts is the snapshot without failure texts, for the RunFinished record:
// a third-party sink's error text could hold anything, secrets included, and
// the log keeps only what the library knows to be safe. RunResult carries the
// texts.
func (s *sinkSet) counts() []SinkReport {
	out := s.snapshot()
	for i := range out {
		out[i].LastFailure = ""
	}
	return out
}

func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
